// The page's model: a record per timeline entry the page holds, by timeline index, and the view
// state answers are checked against (the session shown, the epoch, the stream's generation).
// Records are placed into the windowed lists (window.js) or the plan pane; what the entry and
// text ops do to them is `entryOps`. Only records near what is drawn keep their text: the others
// are shed and their text fetched back when needed. range.js decides which entries have records.
//
// One model per page: its state is this module's. app.js wires it once (bindModel) to the view
// parts the records go to, which it creates with callbacks into range.js and the frame loop (so
// they cannot be imported here without a cycle), and to three hooks of its own: `schedule` (a
// frame is wanted), `reconnect` (the view starts over from a fresh snapshot: the feed's), and
// `apply` (an op through the page's one handler table, ops.js, whose other parts are the app's).

import { $, api, banner } from "./dom.js";
import { hasCards } from "./cards.js";
import { parseId } from "./feed.js";

export const PENDING_LIMIT = 20000; // ops held for entries being fetched (past it the view starts over)
export const KEEP_NEAR = 150; // timeline positions on either side of the drawn records that keep theirs

// ---- the view parts and the app's hooks (bindModel) ----------------------------------------

export let entries = null; // entries.js: a record's text and DOM
export let transcript = null; // window.js: the transcript's windowed list
export let thoughts = null; // window.js: the thoughts' windowed list
export const lists = []; // both
let cards = null; // cards.js: the cards placed inside entries
let hooks = null; // { schedule, reconnect, apply }

export function bindModel(parts) {
  ({ entries, transcript, thoughts, cards } = parts);
  lists.push(transcript, thoughts);
  hooks = { schedule: parts.schedule, reconnect: parts.reconnect, apply: parts.apply };
}

// Which pane an entry lives in (the kinds are the engine's EntryKind names): thoughts and
// plans have their own panes, the rest is the transcript. The plan pane is short and drawn whole
// (it shows the newest plan: the current one).
export const listFor = (kind) => kind === "agent_thought" ? thoughts : (kind === "plan" || kind === "plan_text") ? null : transcript;

// Thoughts and plans are also drawn inside their turn in the transcript: by a mirror record
// (`rec.mirror`, its `of` the entry's record) in the transcript's list. Entries.js draws it from
// the record's view and text; whatever changes the record redraws its mirror. A mirror exists
// only while its entry is in the transcript's loaded range (range.js places side entries outside
// it for their panes without one, and calls `mirror` once they are in).
const MIRRORED = new Set(["agent_thought", "plan"]);

export function mirror(rec) {
  if (!MIRRORED.has(rec.kind) || rec.mirror || recs.get(rec.id) !== rec) return;
  rec.mirror = { id: rec.id, kind: rec.kind, index: rec.index, of: rec, text: "", long: null, node: null, height: null, open: false };
  transcript.insert(rec.mirror);
}

export function unmirror(rec) {
  if (!rec.mirror) return;
  if (rec.mirror.list) rec.mirror.list.remove(rec.mirror);
  if (rec.mirror.node) entries.unbuild(rec.mirror);
  rec.mirror = null;
}

// The record's content changed: its list (and its mirror's) measure it again.
function changedRec(rec) {
  if (rec.list) rec.list.changed(rec);
  if (rec.mirror && rec.mirror.list) rec.mirror.list.changed(rec.mirror);
}

// ---- the view state ------------------------------------------------------------------------

let current = null; // selected session id
let epochCount = 0; // changes whenever the view is cleared (answers for an older view are dropped)
let generationId = null; // the server generation of the stream's event ids
let frameStart = 0; // performance.now() of the current frame

export const session = () => current;
export const epoch = () => epochCount;
export const generation = () => generationId;
export const frameTime = () => frameStart;
export function setSession(id) { current = id; }
export function setGeneration(value) { generationId = value; }
export function setFrameTime(value) { frameStart = value; }

// ---- the records ---------------------------------------------------------------------------

export const recs = new Map(); // entry id -> record { id, kind, index, view, text, node?, height? }
export let timeline = []; // every record the page holds, by timeline index
export function setTimeline(value) { timeline = value; }
// Records whose DOM needs its non-text parts (fill) or its text (showText) redone this frame.
export const dirtyFill = new Set();
export const dirtyText = new Set();

// The records' DOM redone (the frame draws).
export function flushRecords() {
  for (const rec of dirtyFill) {
    if (rec.node) entries.fill(rec);
    if (rec.mirror && rec.mirror.node) entries.fill(rec.mirror);
  }
  for (const rec of dirtyText) {
    if (rec.node) entries.showText(rec);
    if (rec.mirror && rec.mirror.node) entries.showText(rec.mirror);
  }
  dirtyFill.clear();
  dirtyText.clear();
}

// Every record gone (the view starts over): a new epoch.
export function clearRecords() {
  epochCount += 1;
  for (const rec of timeline) if (rec.node) entries.unbuild(rec);
  recs.clear();
  timeline = [];
  dirtyFill.clear();
  dirtyText.clear();
  heldRecs.clear();
  restoreHeld = 0;
  restoring.clear(), restoreWanted.clear();
  for (const list of lists) list.clear();
}

// The entry as the record keeps it: without a long text (the record holds what it keeps of it).
function viewOf(entry) {
  if (typeof entry.text !== "string" || entry.text.length <= 4096) return entry;
  const view = Object.assign({}, entry);
  delete view.text;
  return view;
}

// `skipUpTo`: the batch counter the entry's content already reflects (a page of older entries
// cut at that batch); ops of batches up to it are not applied again. -1 for the stream's own.
export function newRecord(entry, index, skipUpTo) {
  const kind = String(entry.kind || "unknown");
  const rec = {
    id: String(entry.id), kind, index: Number.isInteger(index) ? index : timeline.length ? timeline[timeline.length - 1].index + 1 : 0,
    view: viewOf(entry), text: "", long: null, shed: null, version: 0, touchedAt: -Infinity, node: null, height: null,
    skipUpTo,
  };
  entries.setText(rec, typeof entry.text === "string" ? entry.text : "");
  entries.facts(rec);
  heldRecs.add(rec);
  return rec;
}

function placeInPlan(rec) {
  entries.build(rec);
  const plan = $("plan");
  let before = null;
  for (const node of plan.children) {
    if (Number(node.dataset.index) > rec.index) { before = node; break; }
  }
  plan.insertBefore(rec.node, before);
  showCurrentPlan();
}

// The plan pane shows the newest plan entry only (earlier ones are their turns' plans).
function showCurrentPlan() {
  const plans = $("plan").querySelectorAll(".plan-entry");
  plans.forEach((node, i) => node.classList.toggle("superseded", i < plans.length - 1));
}

// `withMirror`: the entry is in the transcript's loaded range (default: unless it is above it,
// like the newest plan a reopened session's snapshot sends before its tail).
export function place(rec, withMirror) {
  recs.set(rec.id, rec);
  if (!timeline.length || timeline[timeline.length - 1].index < rec.index) timeline.push(rec);
  else {
    let lo = 0, hi = timeline.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (timeline[mid].index < rec.index) lo = mid + 1; else hi = mid; }
    timeline.splice(lo, 0, rec);
  }
  const list = listFor(rec.kind);
  if (list) list.insert(rec);
  else placeInPlan(rec);
  if (withMirror === undefined ? rec.index >= transcript.unloaded() : withMirror) mirror(rec);
  cards.adopt(rec);
}

export function removeRecord(rec) {
  cards.release(rec);
  unmirror(rec);
  if (rec.list) rec.list.remove(rec);
  if (rec.node) entries.unbuild(rec);
  if (rec.kind === "plan") showCurrentPlan();
  recs.delete(rec.id);
  heldRecs.delete(rec);
  rec.shed = rec.long = null;
  rec.text = "";
  restoreWanted.delete(rec);
  const at = timeline.indexOf(rec);
  if (at >= 0) timeline.splice(at, 1);
  dirtyFill.delete(rec);
  dirtyText.delete(rec);
}

// Records back to "not loaded" (range.js): out of the model and the lists; the caller cuts the
// timeline (many at once).
export function letGo(gone) {
  const mirrors = new Set();
  for (const rec of gone) {
    if (rec.mirror) { mirrors.add(rec.mirror); rec.mirror = null; }
    if (rec.kind === "plan" && rec.node) entries.unbuild(rec);
    cards.release(rec);
    recs.delete(rec.id);
    heldRecs.delete(rec);
    dirtyFill.delete(rec);
    dirtyText.delete(rec);
  }
  for (const list of lists) list.removeMany(gone);
  if (mirrors.size) transcript.removeMany(mirrors);
  showCurrentPlan();
}

// Whole-entry changes (insert of a known id, update): the view and the text are replaced.
function updateRecord(rec, entry) {
  const kind = String(entry.kind || "unknown");
  if (kind !== rec.kind) {
    const index = rec.index;
    const skip = rec.skipUpTo;
    removeRecord(rec);
    place(newRecord(entry, index, skip));
    return;
  }
  if (rec.shed) { rec.shed = null; heldRecs.add(rec); }
  rec.touchedAt = frameStart;
  rec.view = viewOf(entry);
  const text = typeof entry.text === "string" ? entry.text : "";
  if (rec.long || text !== rec.text) { entries.setText(rec, text); dirtyText.add(rec); }
  entries.facts(rec);
  dirtyFill.add(rec);
  changedRec(rec);
  cards.adopt(rec);
}

// What the entry and text ops do to the model (ops.js maps each op name to its handler);
// `range` (range.js) holds the ops about entries not loaded.
export function entryOps(range) {
  return Object.freeze({
    insertEntry(op, counter) {
      const entry = op.entry || {};
      const known = recs.get(String(entry.id));
      if (known) { if (counter > known.skipUpTo) updateRecord(known, entry); }
      else if (range.newerFrom() !== null) range.insertBelow(op, counter);
      else place(newRecord(entry, op.index, -1));
    },
    updateEntry(op, counter) {
      const rec = recs.get(String(op.id));
      if (!rec) {
        if (!range.holdForOlder(String(op.id), op, counter)) place(newRecord(op.entry || {}, undefined, -1));
        return;
      }
      if (counter <= rec.skipUpTo) return;
      updateRecord(rec, op.entry || {});
    },
    appendText(op, counter) {
      const rec = recs.get(String(op.id));
      if (!rec) { range.holdForOlder(String(op.id), op, counter); return; }
      if (counter <= rec.skipUpTo) return;
      rec.touchedAt = frameStart;
      if (rec.shed || restoring.has(rec)) { holdUntilRestored(rec, op, counter); return; }
      entries.appendText(rec, String(op.text ?? ""));
      dirtyText.add(rec);
      changedRec(rec);
    },
    truncateText(op, counter) {
      const rec = recs.get(String(op.id));
      if (!rec) { range.holdForOlder(String(op.id), op, counter); return; }
      if (counter <= rec.skipUpTo) return;
      rec.touchedAt = frameStart;
      // Cut inside a text held clipped (or not held): the whole text comes from the server first.
      if (rec.shed || rec.long || restoring.has(rec)) { holdUntilRestored(rec, op, counter); return; }
      // `len` counts UTF-16 code units, the unit of JavaScript strings.
      const len = Math.max(0, Math.min(rec.text.length, Number(op.len) || 0));
      if (len === rec.text.length) return;
      entries.setText(rec, rec.text.slice(0, len));
      dirtyText.add(rec);
      changedRec(rec);
    },
  });
}

// ---- bounded memory: far entries hold no text ---------------------------------------------

// Only records near what is drawn keep their text and view. The others are "shed": they keep
// their id, kind, index, height, what cards match them by, and the length and hash of the text
// the page applied (`rec.shed`). One that must be drawn again, or gets a text op, is fetched back
// (a page of entries cut at a batch; ops of later batches, held meanwhile, are applied after it).
const HELD_LIMIT = 600; // records holding their text before a shedding pass
export const heldRecs = new Set(); // records not shed (what a shedding pass looks at)
const SHED_EVERY_MS = 250;
let shedAt = -Infinity; // frameTime of the last shedding pass
let shedTimer = 0; // a later pass asked for
const restoreWanted = new Set(); // records whose text is to be fetched back
const restoring = new Map(); // record -> ops held until its text is back [{op, counter}]
let restoreHeld = 0;
let restoreBusy = false;

// A record's text is being fetched back (ops for it are held meanwhile).
export const isRestoring = (rec) => restoring.has(rec);
// Texts are being fetched back, or are to be.
export const restoresPending = () => restoreBusy || restoreWanted.size > 0;

// Once per frame: a shedding pass when too many records hold their text, at most every
// SHED_EVERY_MS while ops are still queued (`opsQueued`). Once the stream pauses, the entries it
// was still writing to are shed too, a second later.
export function shed(opsQueued) {
  if (heldRecs.size > HELD_LIMIT && (!opsQueued || frameStart - shedAt >= SHED_EVERY_MS) && shedFar() && !opsQueued && !shedTimer) {
    shedTimer = setTimeout(() => { shedTimer = 0; hooks.schedule(); }, 1100);
  }
}

// Returns how many were kept only because they were still streaming.
function shedFar() {
  let streaming = 0;
  const last = timeline[timeline.length - 1];
  const near = []; // [from, to] timeline indexes around each list's drawn records
  for (const list of lists) {
    const d = list.drawn();
    if (d.length) near.push([d[0].index - KEEP_NEAR, d[d.length - 1].index + KEEP_NEAR]);
  }
  if (!near.length && last) near.push([last.index - KEEP_NEAR, last.index]);
  shedAt = frameStart;
  for (const rec of heldRecs) {
    if (rec.shed || rec === last || rec.node || (rec.mirror && rec.mirror.node) || restoring.has(rec) || restoreWanted.has(rec) || hasCards(rec)) continue;
    // Plans are drawn in their pane; an entry still streaming (a text op in the last second)
    // keeps its text (a long one is held clipped anyway).
    if (rec.kind === "plan" || rec.kind === "plan_text") continue;
    if (frameStart - rec.touchedAt < 1000) { streaming += 1; continue; }
    if (near.some(([from, to]) => rec.index >= from && rec.index <= to)) continue;
    if (rec.height == null && rec.estimated == null) entries.estimate(rec, 700);
    rec.shed = { length: entries.lengthOf(rec), hash: entries.hashOf(rec) };
    Object.assign(rec, { text: "", long: null, view: null, version: rec.version + 1 });
    heldRecs.delete(rec);
  }
  return streaming;
}

// Asks for a shed record's text (or the whole of a clipped one) from the server.
export function restore(rec) {
  if ((!rec.shed && !rec.long) || recs.get(rec.id) !== rec) return;
  restoreWanted.add(rec);
  fetchRestores();
}

function holdUntilRestored(rec, op, counter) {
  (restoring.get(rec) || restoring.set(rec, []).get(rec)).push({ op, counter });
  if (++restoreHeld > PENDING_LIMIT) hooks.reconnect(); else { restoreWanted.add(rec); fetchRestores(); }
}

// Resolves once the record holds its text again (at once when it does).
export function whenRestored(rec) {
  if (!restoreWanted.has(rec)) return Promise.resolve();
  return new Promise((resolve) => { (rec.onRestored = rec.onRestored || []).push(resolve); });
}

function fetchRestores() {
  if (restoreBusy || !restoreWanted.size || current === null) return;
  let lo = Infinity, hi = -1;
  for (const rec of restoreWanted) { lo = Math.min(lo, rec.index); hi = Math.max(hi, rec.index); }
  hi = Math.min(hi, lo + 499);
  restoreBusy = true;
  const asked = epochCount, session = current;
  api("/api/sessions/" + encodeURIComponent(session) + "/entries?before=" + (hi + 1) + "&limit=" + (hi + 1 - lo)).then((page) => {
    if (asked !== epochCount || session !== current) return;
    const cut = parseId(page.event);
    if (!cut || (generationId !== null && cut.generation !== generationId)) { hooks.reconnect(); return; }
    const got = new Set();
    for (const item of Array.isArray(page.entries) ? page.entries : []) {
      const entry = item && item.entry;
      const rec = entry ? recs.get(String(entry.id)) : null;
      if (!rec || !restoreWanted.has(rec)) continue;
      got.add(rec);
      const held = restoring.get(rec) || [];
      restoring.delete(rec), restoreWanted.delete(rec);
      restoreHeld -= held.length;
      if (rec.shed) { rec.shed = null; heldRecs.add(rec); }
      rec.view = viewOf(entry);
      entries.setText(rec, typeof entry.text === "string" ? entry.text : "");
      entries.facts(rec);
      rec.skipUpTo = Math.max(rec.skipUpTo, cut.counter);
      dirtyFill.add(rec);
      dirtyText.add(rec);
      for (const { op, counter } of held) if (counter > cut.counter) hooks.apply(op, counter);
      changedRec(rec);
      for (const resolve of rec.onRestored || []) resolve();
      rec.onRestored = null;
    }
    // A record of the range the server did not send (its index moved): the view starts over.
    for (const rec of restoreWanted) if (rec.index >= lo && rec.index <= hi && !got.has(rec)) { hooks.reconnect(); return; }
  }).catch((e) => {
    if (asked === epochCount) banner("Cannot load entries: " + e.message, "error");
  }).finally(() => {
    restoreBusy = false;
    if (asked === epochCount) { hooks.schedule(); setTimeout(fetchRestores, 0); }
  });
}
