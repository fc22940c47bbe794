// Which entries the page holds a record for (the records are model.js's): a loaded range of the
// timeline, with older entries not loaded above it (a reopened session comes with its tail;
// scrolling up fetches pages) and, while the reader is far up a growing session, newer entries
// let go below it. Far records go back to "not loaded" so that the records, not only their
// texts, stay bounded whatever the session's length. Ops about entries not loaded are held only
// while a page of entries is being fetched: every page is cut at a batch, so one asked for later
// reflects them.

import { api, banner } from "./dom.js";
import { hasCards } from "./cards.js";
import { parseId } from "./feed.js";
import {
  PENDING_LIMIT, KEEP_NEAR, entries, lists, transcript, listFor, recs, timeline, setTimeline,
  session, epoch, generation, frameTime, newRecord, place, removeRecord, letGo, isRestoring, restoresPending,
  mirror, unmirror,
} from "./model.js";

// The app's own, which range.js cannot import (app.js imports it): `schedule` (a frame is
// wanted), `reconnect` (the view starts over from a fresh snapshot: the feed's), `apply` (an op
// through the page's handler table, for ops held while a page was fetched) and `searching` (the
// search is reading the server's entries: nothing is let go meanwhile).
export function createRange({ schedule, reconnect, apply, searching }) {
  const busy = () => restoresPending() || searching();
  let loadedFrom = 0; // timeline index of the first entry of the loaded range (older ones not here)
  // Newer entries let go while the reader is far up (see dropNewer): the index of the first one,
  // or null when the page holds the end; `newerEnd`: one past the newest entry known.
  let newerFrom = null;
  let newerEnd = 0;
  // Ops about entries not loaded, kept with their batch counter while a page of entries is
  // fetched (bounded; past the bound the view starts over).
  const pendingOld = new Map();
  let pendingCount = 0;
  let loading = null; // the page of older entries being fetched (a Promise)

  // Far entries above go back to "not loaded": while nothing is being fetched, once more than
  // RECORD_LIMIT + DROP_SLACK records are loaded, the oldest are dropped down to RECORD_LIMIT,
  // keeping those within `KEEP_NEAR` entries above the drawn ones (FAR_BELOW while the reader is
  // not following the end), a drawn one, one holding a card, one being fetched back, one written
  // to in the last second and the newest plan; `loadedFrom` moves up past them, and scrolling up
  // fetches them again like any older entries. What the page applied to them stays checkable in
  // O(1) memory: `dropped` (createLoaded, below) keeps a sum of digests of the dropped
  // records, compared in SpindleView.entries() with the server's entries of that range.
  const RECORD_LIMIT = 2000;
  const DROP_SLACK = 500;
  let lowestLoaded = 0; // lowest timeline index loaded since the snapshot (dropped ones included)
  const dropped = createLoaded();
  let keepLoaded = 0; // loadAll() running: nothing is dropped

  function dropFar() {
    if (timeline.length <= RECORD_LIMIT + DROP_SLACK || loading || keepLoaded || busy()) return;
    // (Reading in the middle, those far above what is drawn: see dropNewer for those below.)
    const margin = lists.every((list) => list.following()) ? KEEP_NEAR : FAR_BELOW;
    let upTo = timeline[timeline.length - RECORD_LIMIT].index;
    for (const list of lists) { const d = list.drawn(); if (d.length) upTo = Math.min(upTo, d[0].index - margin); }
    let newestPlan = null;
    for (let i = timeline.length - 1; i >= 0 && !newestPlan; i--) if (timeline[i].kind === "plan") newestPlan = timeline[i];
    const gone = new Set();
    const kept = [];
    let i = 0;
    for (; i < timeline.length && timeline[i].index < upTo; i++) {
      const rec = timeline[i];
      if (rec.node || (rec.mirror && rec.mirror.node) || hasCards(rec) || isRestoring(rec) || rec === newestPlan || frameTime() - rec.touchedAt < 1000) { kept.push(rec); continue; }
      gone.add(rec);
    }
    if (!gone.size) return;
    for (const rec of gone) dropped.add(rec);
    letGo(gone);
    // Every entry below the first one not looked at is dropped or kept.
    loadedFrom = Math.max(loadedFrom, i < timeline.length ? timeline[i].index : upTo);
    setTimeline(kept.concat(timeline.slice(i)));
    transcript.setUnloaded(loadedFrom);
  }

  // An op about an entry the page does not hold: `true` when it may be about an entry not loaded
  // (held while a page of entries is being fetched, else let go: a page asked for later is cut
  // at a later batch and reflects it); `false` when the entry is simply unknown.
  function holdForOlder(id, op, counter) {
    if (loadedFrom === 0 && newerFrom === null) return false;
    // (Maybe about a dropped entry: its text may now differ from what the digest says.)
    dropped.opForUnloaded();
    if (!loading && !loadingNewer) return true;
    if (!pendingOld.has(id)) pendingOld.set(id, []);
    pendingOld.get(id).push({ op, counter });
    if (++pendingCount > PENDING_LIMIT) reconnect();
    return true;
  }

  function loadOlder(limit = 200) {
    if (loading) return loading;
    if (loadedFrom === 0 || session() === null) return Promise.resolve(false);
    const asked = epoch();
    const askedSession = session();
    const url = "/api/sessions/" + encodeURIComponent(askedSession) + "/entries?before=" + loadedFrom + "&limit=" + limit;
    const done = api(url).then((page) => {
      if (asked !== epoch() || askedSession !== session()) return false;
      const cut = parseId(page.event);
      if (!cut || (generation() !== null && cut.generation !== generation())) { reconnect(); return false; }
      const fresh = [];
      for (const item of Array.isArray(page.entries) ? page.entries : []) {
        const entry = item && item.entry;
        if (!entry) continue;
        // (A plan held for its pane from before the loaded range: now in it, in its turn too.)
        const known = recs.get(String(entry.id));
        if (known) { mirror(known); continue; }
        fresh.push(newRecord(entry, Number(item.index), cut.counter));
      }
      for (const rec of fresh) {
        place(rec, true);
        // Back from a dropped range: out of the digest (the server's version, see dropFar).
        if (dropped.count() && rec.index >= lowestLoaded) dropped.back(rec);
      }
      loadedFrom = Math.min(loadedFrom, Math.max(0, Number(page.first) || 0));
      lowestLoaded = Math.min(lowestLoaded, loadedFrom);
      transcript.setUnloaded(loadedFrom);
      // Ops that came for these entries after the page was cut are applied now, in order.
      applyHeld(fresh.map((rec) => rec.id), cut.counter);
      schedule();
      return true;
    }).catch((e) => {
      if (asked === epoch()) banner("Cannot load older entries: " + e.message, "error");
      return false;
    }).finally(() => { if (loading === done) loading = null; settleHeld(); });
    loading = done;
    return done;
  }

  // Every entry: the older ones, and newer ones let go (the search needs them all).
  async function loadAll(progress) {
    const asked = epoch();
    keepLoaded += 1;
    try {
      while (loadedFrom > 0 && asked === epoch()) {
        if (progress) progress(loadedFrom);
        const ok = await loadOlder(500);
        if (!ok && loadedFrom > 0) return false;
      }
      while (newerFrom !== null && asked === epoch()) {
        const ok = await loadNewer(500);
        if (!ok && newerFrom !== null) return false;
      }
      return asked === epoch();
    } finally {
      keepLoaded -= 1;
    }
  }

  // ---- newer entries let go while the reader is far up ------------------------------------

  // Reading far up while the session grows, the page would hold a record for every new entry.
  // Instead, past RECORD_LIMIT + DROP_SLACK records, those more than FAR_BELOW entries below what
  // is drawn go back to "not loaded" (never one holding a card, being fetched back, or the newest
  // plan) and so do the entries inserted after them (`newerFrom`..`newerEnd`, a number in the
  // transcript's lower spacer). Thoughts and plans go on arriving (their panes follow them), the
  // newest LIVE_SIDE only. Scrolling down fetches pages of them back; following the end again
  // (a prompt sent from this page) starts the view over from the tail.
  const FAR_BELOW = 400;
  const LIVE_SIDE = 300;
  let loadingNewer = null; // the page of newer entries being fetched (a Promise)
  const heldNewer = []; // inserts that came while it was fetched: [{op, counter}]
  const liveSide = []; // thoughts and plans inserted while newer entries are let go, oldest first

  // Thoughts and plans: their panes follow the newest, whatever the transcript shows.
  function sideKind(kind) { return listFor(kind) !== transcript; }

  function setBelow() {
    let below = 0;
    if (newerFrom !== null) below = Math.max(0, newerEnd - newerFrom - liveSide.length);
    transcript.setUnloadedBelow(below);
  }

  function insertBelow(op, counter) {
    if (loadingNewer) {
      heldNewer.push({ op, counter });
      if (heldNewer.length > PENDING_LIMIT) reconnect();
      return;
    }
    const entry = op.entry || {};
    const index = Number.isInteger(op.index) ? op.index : newerEnd;
    newerEnd = Math.max(newerEnd, index + 1);
    if (sideKind(String(entry.kind || "unknown"))) {
      // For its pane only: the transcript does not hold this part of the timeline.
      const rec = newRecord(entry, index, -1);
      place(rec, false);
      liveSide.push(rec);
      // Past the cap (and some slack, so this runs once per 50), the oldest go again; drawn ones
      // (a plan is always drawn in its pane) and those with a card stay.
      if (liveSide.length > LIVE_SIDE + 50) {
        let excess = liveSide.length - LIVE_SIDE;
        const kept = liveSide.filter((old) => {
          if (excess <= 0 || old.node || hasCards(old) || isRestoring(old)) return true;
          excess -= 1;
          removeRecord(old);
          return false;
        });
        liveSide.length = 0;
        liveSide.push(...kept);
      }
    }
    setBelow();
  }

  function dropNewer() {
    if (timeline.length <= RECORD_LIMIT + DROP_SLACK || loading || loadingNewer || keepLoaded || busy()) return;
    if (transcript.following()) return;
    const d = transcript.drawn();
    if (!d.length) return;
    const from = d[d.length - 1].index + FAR_BELOW;
    let i = timeline.length;
    while (i > 0 && timeline[i - 1].index >= from) i--;
    if (i >= timeline.length) return;
    let newestPlan = null;
    for (let k = timeline.length - 1; k >= 0 && !newestPlan; k--) if (timeline[k].kind === "plan") newestPlan = timeline[k];
    const gone = new Set();
    const kept = [];
    for (let k = i; k < timeline.length; k++) {
      const rec = timeline[k];
      // (The thoughts and plan panes keep their newest: they follow them.)
      if (rec.node || hasCards(rec) || isRestoring(rec) || rec === newestPlan || (sideKind(rec.kind) && timeline.length - k <= LIVE_SIDE)) kept.push(rec);
      else gone.add(rec);
    }
    if (!gone.size) return;
    newerEnd = Math.max(newerEnd, timeline[timeline.length - 1].index + 1);
    newerFrom = newerFrom === null ? timeline[i].index : Math.min(newerFrom, timeline[i].index);
    letGo(gone);
    setTimeline(timeline.slice(0, i).concat(kept));
    liveSide.length = 0;
    for (const rec of kept) if (sideKind(rec.kind)) { liveSide.push(rec); unmirror(rec); }
    setBelow();
  }

  function loadNewer(limit = 200) {
    if (loadingNewer) return loadingNewer;
    if (newerFrom === null || session() === null) return Promise.resolve(false);
    const asked = epoch();
    const askedSession = session();
    let cutAt = -1;
    const url = "/api/sessions/" + encodeURIComponent(askedSession) + "/entries?before=" + (newerFrom + limit) + "&limit=" + limit;
    const done = api(url).then((page) => {
      if (asked !== epoch() || askedSession !== session()) return false;
      const cut = parseId(page.event);
      if (!cut || (generation() !== null && cut.generation !== generation())) { reconnect(); return false; }
      cutAt = cut.counter;
      const fresh = [];
      let next = newerFrom;
      for (const item of Array.isArray(page.entries) ? page.entries : []) {
        const entry = item && item.entry;
        if (!entry) continue;
        next = Math.max(next, Number(item.index) + 1);
        const known = recs.get(String(entry.id));
        if (!known) fresh.push(newRecord(entry, Number(item.index), cut.counter));
        else mirror(known);
      }
      for (const rec of fresh) place(rec, true);
      const total = Math.max(0, Number(page.total) || 0);
      newerEnd = Math.max(newerEnd, total);
      newerFrom = next >= newerEnd ? null : next;
      const live = new Set(liveSide);
      liveSide.length = 0;
      if (newerFrom !== null) for (const rec of live) if (rec.index >= newerFrom) liveSide.push(rec);
      applyHeld(fresh.map((rec) => rec.id), cut.counter);
      setBelow();
      schedule();
      return true;
    }).catch((e) => {
      if (asked === epoch()) banner("Cannot load newer entries: " + e.message, "error");
      return false;
    }).finally(() => {
      if (loadingNewer !== done) return;
      loadingNewer = null;
      // Inserts that came meanwhile, after the page's cut: placed now (or counted again).
      for (const { op, counter } of heldNewer.splice(0)) if (counter > cutAt) apply(op, counter);
      // And the ops held for the entries those inserts placed (in order, each after its insert).
      applyHeld([...pendingOld.keys()].filter((id) => recs.has(id)), cutAt);
      settleHeld();
    });
    loadingNewer = done;
    return done;
  }

  // Follow the end: the view starts over from the tail when newer entries were let go.
  function followEnd() {
    if (newerFrom !== null) reconnect();
    else transcript.followEnd();
  }

  // The ops held for `ids` that came after a page's cut (batch counter `cut`), in order.
  function applyHeld(ids, cut) {
    for (const id of ids) {
      const held = pendingOld.get(id);
      if (!held) continue;
      pendingOld.delete(id);
      pendingCount -= held.length;
      for (const { op, counter } of held) if (counter > cut) apply(op, counter);
    }
  }

  // Ops held for entries not loaded are needed only while a page is being fetched.
  function settleHeld() {
    if (!loading && !loadingNewer) { pendingOld.clear(); pendingCount = 0; }
  }

  function trim() {
    if (timeline.length <= RECORD_LIMIT + DROP_SLACK) return;
    dropFar();
    dropNewer();
  }

  function reset() {
    loadedFrom = lowestLoaded = 0;
    newerFrom = null;
    newerEnd = 0;
    liveSide.length = 0;
    heldNewer.length = 0;
    loading = loadingNewer = null;
    dropped.reset();
    pendingOld.clear();
    pendingCount = 0;
  }

  // The snapshot's `web_window`: the loaded range starts at `first`.
  function setWindow(first) {
    loadedFrom = lowestLoaded = Math.max(0, Number(first) || 0);
    transcript.setUnloaded(loadedFrom);
  }

  // The records `held` (SpindleView.entries, in timeline order) with the dropped ranges answered
  // from the server's transcript `doc` when their digests add up.
  const checkDropped = (held, list, doc) =>
    mergeLoaded(held, list, dropped.check(doc, lowestLoaded, loadedFrom, (id) => recs.has(id)));

  return Object.freeze({
    holdForOlder, insertBelow, trim, reset, setWindow, loadOlder, loadNewer, loadAll, followEnd, checkDropped,
    loadedFrom: () => loadedFrom,
    newerFrom: () => newerFrom,
    newerEnd: () => newerEnd,
    dropped: () => dropped,
    stats: () => ({ dropped: dropped.count(), loadedFrom, newerFrom, newerEnd, pendingOld: pendingCount }),
  });
}

// What the page applied to entries it dropped back to "not loaded" (dropFar below), kept in O(1)
// memory: a count, the total text length, and a sum (mod 2^32) of a digest per entry of its id,
// kind, text length and FNV-1a text hash. An entry loaded back takes the server's digest out, so
// the sum stays that of the entries still dropped. `check` compares it with the server's entries
// of the dropped range: equal sums mean the page applied what the server holds.

function digestOf(id, kind, length, hash) {
  let h = Math.imul(hash ^ length, 2654435761);
  const key = id + "\u0000" + kind;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return h >>> 0;
}

function createLoaded() {
  const state = { count: 0, sum: 0, textLength: 0, exact: true };

  const lengthOf = (rec) => (rec.shed ? rec.shed.length : entries.lengthOf(rec));
  const hashOf = (rec) => (rec.shed ? rec.shed.hash : entries.hashOf(rec));

  return Object.freeze({
    count: () => state.count,
    textLength: () => state.textLength,
    reset() { state.count = state.sum = state.textLength = 0; state.exact = true; },
    // A record dropped (its text, or its shed length and hash, as the page applied it).
    add(rec) {
      const length = lengthOf(rec);
      state.sum = (state.sum + digestOf(rec.id, rec.kind, length, hashOf(rec))) >>> 0;
      state.count += 1;
      state.textLength += length;
    },
    // A record of the dropped range loaded back from the server.
    back(rec) {
      const length = entries.lengthOf(rec);
      state.sum = (state.sum - digestOf(rec.id, rec.kind, length, entries.hashOf(rec))) >>> 0;
      state.count -= 1;
      state.textLength -= length;
    },
    // An op came for an entry not loaded: maybe a dropped one, whose text may now differ.
    opForUnloaded() { if (state.count) state.exact = false; },
    // The server's entries of timeline indexes [from, to) the page does not hold (`held(id)`),
    // as {id, kind, text, index}, when they add up to what was dropped; else one note.
    check(doc, from, to, held) {
      if (!state.count) return [];
      const list = doc && Array.isArray(doc.entries) ? doc.entries : [];
      let sum = 0, count = 0;
      const out = [];
      for (let index = from; index < to && index < list.length; index++) {
        const x = list[index];
        if (!x || held(String(x.id))) continue;
        const text = typeof x.text === "string" ? x.text : "";
        const kind = String(x.kind || "unknown");
        sum = (sum + digestOf(String(x.id), kind, text.length, entries.hashText(text))) >>> 0;
        count += 1;
        out.push({ id: String(x.id), kind, text, index });
      }
      if (sum === state.sum && count === state.count) return out;
      return [{ id: "dropped", kind: "note", text: "[" + state.count + " dropped entries differ from the server's (" + count + " there)"
        + (state.exact ? "" : "; ops came for not-loaded entries since") + "]" }];
    },
  });
}

// The held entries (`held`, answers for the records `list`) and the checked dropped ones
// (`back`) in timeline order.
function mergeLoaded(held, list, back) {
  if (back.length === 1 && back[0].id === "dropped") return back.concat(held);
  const out = [];
  let j = 0;
  for (const x of back) {
    while (j < held.length && list[j].index < x.index) out.push(held[j++]);
    out.push({ id: x.id, kind: x.kind, text: x.text });
  }
  while (j < held.length) out.push(held[j++]);
  return out;
}
