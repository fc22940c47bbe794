// The page is a view: it applies the render ops the server's engine sends and holds no protocol
// logic. Ops are queued as they arrive and applied once per animation frame: text ops only edit
// the page's model of an entry (its text), so many appends to one entry cost one DOM update; the
// transcript and the thoughts are windowed (window.js): only entries near the viewport have DOM.
// A reopened session comes with its tail; older entries are fetched as the reader scrolls up or
// the search needs them.
//
// The page's entry module: index.html loads only this file, the others are its imports (ES
// modules, no build step). It owns the model and the frame loop; ops.js maps each op to its part.

import { $, api, banner } from "./dom.js";
import { createPanels } from "./panels.js";
import { createComposer } from "./composer.js";
import { createEntries } from "./entries.js";
import { createCards, hasCards } from "./cards.js";
import { createWindow, renderAll } from "./window.js";
import { createFeed, parseId } from "./feed.js";
import { createTrees } from "./trees.js";
import { createRange } from "./range.js";
import { createSearch } from "./search.js";
import { opHandlers } from "./ops.js";

let current = null; // selected session id
let epoch = 0; // changes whenever the view is cleared (answers for an older view are dropped)
const recs = new Map(); // entry id -> record { id, kind, index, view, text, node?, height? }
let timeline = []; // every record the page holds, by timeline index
let generation = null; // the server generation of the stream's event ids
let applied = 0; // counter of the last batch applied
const PENDING_LIMIT = 20000; // ops held for entries being fetched (past it the view starts over)
let commands = []; // the agent's available commands (SetCommands)

const refreshSessions = () => panels.refreshSessions();
const panels = createPanels({
  session: () => current,
  select: (id) => select(id),
  // The page's layout changed (a phone tab shown): the windowed lists measure again.
  layoutChanged: () => { for (const list of lists) list.invalidate(); schedule(); },
});
const composer = createComposer({
  session: () => current,
  agent: () => panels.agent(),
  commands: () => commands,
  sent: () => { refreshSessions(); range.followEnd(); schedule(); },
});
const entries = createEntries({
  changed: (rec) => { if (rec.list) rec.list.changed(rec); schedule(); },
  wantWhole: (rec) => restore(rec),
});

const cards = createCards({
  session: () => current,
  // The latest entry `matches` accepts.
  latest: (matches) => {
    for (let i = timeline.length - 1; i >= 0; i--) if (matches(timeline[i])) return timeline[i];
    return null;
  },
  // A card goes into its entry's DOM, built now if the entry is not drawn (kept while it has cards).
  nodeOf: (rec) => { if (!rec.node) entries.build(rec); return rec.node; },
  scrollToEnd: () => { for (const list of lists) list.invalidate(); schedule(); },
  // An "always" answer becomes a standing permission.
  answered: () => panels.loadAgent(),
});

// ---- the windowed lists ------------------------------------------------------------------

// `wanted`: the reader scrolled (drawn in the next frame); `again`: the list's own follow-up
// (heights measured, a clamped scroll), paced like the ops.
const drawnHooks = { wanted: () => schedule(), again: () => schedule(false), done: () => {} };
const transcript = createWindow({
  container: $("transcript"), entries, needOlder: () => range.loadOlder(), needNewer: () => range.loadNewer(), onDrawn: drawnHooks, wantText: (rec) => restore(rec),
});
const thoughts = createWindow({
  container: $("thoughts"), entries, needOlder: () => range.loadOlder(), needNewer: () => range.loadNewer(), onDrawn: drawnHooks, wantText: (rec) => restore(rec),
});
const lists = [transcript, thoughts];
$("thoughts-pane").addEventListener("toggle", () => { thoughts.invalidate(); schedule(); });
window.addEventListener("resize", () => { for (const list of lists) list.invalidate(); schedule(); });

// Which pane an entry lives in (the kinds are the engine's EntryKind names): thoughts and
// plans have their own panes, the rest is the transcript. The plan pane is short and drawn whole.
const listFor = (kind) => kind === "agent_thought" ? thoughts : (kind === "plan" || kind === "plan_text") ? null : transcript;

function placeInPlan(rec) {
  entries.build(rec);
  const plan = $("plan");
  let before = null;
  for (const node of plan.children) {
    if (Number(node.dataset.index) > rec.index) { before = node; break; }
  }
  plan.insertBefore(rec.node, before);
}

// ---- sessions ----------------------------------------------------------------------------

function select(id) {
  feed.close();
  current = String(id);
  history.replaceState(null, "", "#session=" + encodeURIComponent(current));
  clearView();
  panels.clear();
  composer.reset();
  panels.loadAgent();
  $("empty").hidden = true;
  $("prompt-form").hidden = false;
  // At phone width a chosen session is shown at once.
  if (document.body.dataset.tab !== "chat") panels.showTab("chat");
  for (const b of document.querySelectorAll("#session-list button")) {
    if (b.dataset.session === current) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
  connect();
}

// The session's events (feed.js: through the shared worker, one stream per session for all the
// tabs of this origin, where there is one, else an EventSource of this tab's own).
const setConn = (state) => { const c = $("connection"); c.dataset.state = state; c.textContent = state; };
const feed = createFeed({
  setConn, session: () => current,
  reset: (data, id) => reset(data, id),
  ops: (data, id, after) => receive(data, id, after),
  broken: () => { if (current !== null) reconnect(); },
});
const connect = () => feed.connect();

function reset(data, id) {
  queue.length = 0;
  queued = 0;
  clearView();
  receive(data, id);
}

// Starts the view over from a fresh snapshot (the page could not keep up with old entries).
function reconnect() {
  feed.close();
  clearView();
  connect();
}

// ---- the op queue: applied once per frame --------------------------------------------------

const queue = []; // { ops, marks: [[counter, count]...], id }
let queued = 0; // ops waiting
let frameRequested = false;
let fallbackTimer = 0;
const FRAME_BUDGET_MS = 6;
const DRAW_SLOW_MS = 6; // a frame's DOM work (flush, layout) this long lets the next one skip it
let drawLater = false;
// While ops stream in, the DOM is drawn at most every DRAW_EVERY_MS (every other frame at 60 Hz):
// a frame that only applies ops to the model is cheap (no style, layout or paint), so the page's
// frames keep the display's rate and input stays smooth while text is redrawn at 30 Hz.
const DRAW_EVERY_MS = 30;
let drawnAt = -Infinity; // performance.now() of the last frame that drew
let drawWanted = true; // something other than ops asked for a frame since the last drawn one

// Queues a frame's ops with their batch counters; with `after`, only those of later batches
// (a frame the view's snapshot already includes, in part or whole, is cut down to the rest;
// usually every batch is later and nothing is cut).
function receive(data, id, after) {
  let batch;
  try { batch = JSON.parse(data); } catch (_) { return; }
  let ops = Array.isArray(batch.ops) ? batch.ops : [];
  const parsed = parseId(id);
  if (parsed) generation = parsed.generation;
  const counter = parsed ? parsed.counter : applied;
  let marks = Array.isArray(batch.batches) ? batch.batches : [[counter, ops.length]];
  if (after !== undefined && !(marks.length && Number(marks[0][0]) > after)) {
    const keptOps = [];
    const keptMarks = [];
    let at = 0;
    for (const [n, count] of marks) {
      if (Number(n) > after) { keptOps.push(...ops.slice(at, at + Number(count))); keptMarks.push([n, count]); }
      at += Number(count);
    }
    if (!keptMarks.length) return;
    ops = keptOps;
    marks = keptMarks;
  }
  events += 1;
  batches += marks.length;
  queue.push({ ops, marks, id, at: 0, mark: 0, left: marks.length ? Number(marks[0][1]) : ops.length });
  queued += ops.length;
  schedule(false);
}

// A frame is wanted; `draw` (the default) for anything but ops and the lists' own follow-ups:
// that frame draws whatever the pacing (a click, a scroll, a resize is never held back).
function schedule(draw) {
  if (draw !== false) drawWanted = true;
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(frame);
  // A tab in the background gets no frames: its ops are still applied, a little later.
  fallbackTimer = setTimeout(frame, 200);
}

let frames = 0, events = 0, batches = 0; // counted for tests and the benchmark
// Per-frame timings [start, ops, apply ms, flush ms, render ms], kept only once a profiling
// tool asked for them (SpindleView.recordFrames(), see bench/browser/trace.js).
let frameLog = null;
const slowFrames = []; // frames over 40 ms: where the time went (the first 50)

function frame() {
  if (!frameRequested) return;
  frameRequested = false;
  frames += 1;
  clearTimeout(fallbackTimer);
  const started = performance.now();
  frameTime = started;
  for (const list of lists) list.prepare();
  let n = 0;
  while (queue.length) {
    const item = queue[0];
    while (item.at < item.ops.length) {
      while (item.left === 0 && item.mark + 1 < item.marks.length) item.left = Number(item.marks[++item.mark][1]);
      const counter = item.marks.length ? Number(item.marks[item.mark][0]) : applied;
      const op = item.ops[item.at++];
      item.left -= 1;
      queued -= 1;
      apply(op, counter);
      if ((++n & 31) === 0 && performance.now() - started > FRAME_BUDGET_MS) break;
    }
    if (item.at < item.ops.length) break;
    queue.shift();
    const last = item.marks.length ? Number(item.marks[item.marks.length - 1][0]) : applied;
    if (Number.isFinite(last)) applied = Math.max(applied, last);
    document.body.dataset.lastEvent = item.id || "";
  }
  const applied_ = performance.now();
  // Behind a fast stream (ops left over) after a frame whose DOM work was long: this frame only
  // applies ops to the model, the next one draws (the DOM and its layout half as often).
  const paced = n > 0 && !drawWanted && started - drawnAt < DRAW_EVERY_MS;
  const modelOnly = (drawLater && queue.length > 0) || paced;
  if (!modelOnly) { drawnAt = started; drawWanted = false; flush(); }
  const flushed = performance.now();
  if (!modelOnly) renderAll(lists);
  drawLater = !modelOnly && queue.length > 0 && performance.now() - applied_ > DRAW_SLOW_MS;
  // (Once the stream pauses, the entries it was still writing to are shed too, a second later.)
  // (A pass looks at the held records only, at most every 250 ms while ops are still queued.)
  range.trim();
  if (heldRecs.size > HELD_LIMIT && (!queue.length || frameTime - shedAt >= SHED_EVERY_MS) && shedFar() && !queue.length && !shedTimer) shedTimer = setTimeout(() => { shedTimer = 0; schedule(); }, 1100);
  trees.ask();
  const end = performance.now();
  if (frameLog && frameLog.length < 5000) frameLog.push([Math.round(started), n, +(applied_ - started).toFixed(1), +(flushed - applied_).toFixed(1), +(end - flushed).toFixed(1)]);
  if (end - started > 40 && slowFrames.length < 50) {
    slowFrames.push({ ops: n, apply: Math.round(applied_ - started), flush: Math.round(flushed - applied_), render: Math.round(end - flushed) });
  }
  if (queue.length || modelOnly) schedule(false);
}

// ---- finished messages: the server's rendering (trees.js) ---------------------------------

let running = false; // the session's turn is open (its last message may still stream)
const trees = createTrees({
  entries, recs, list: transcript, search: { redrawn: (rec) => search.redrawn(rec) },
  session: () => current, epoch: () => epoch, schedule,
  streaming: (rec) => running && rec === timeline[timeline.length - 1],
});

function apply(op, counter) {
  const handler = handlers[op && op.op];
  if (!handler) return;
  try { handler(op, counter); } catch (e) { console.warn("op failed", op.op, e); }
}

// Records whose DOM needs its non-text parts (fill) or its text (showText) redone this frame.
const dirtyFill = new Set();
const dirtyText = new Set();

// The last set_usage op of the frame: drawn once in flush (a fast stream sends one per chunk).
let usageOp = null;

function flush() {
  if (usageOp) { panels.setUsage(usageOp); usageOp = null; }
  for (const rec of dirtyFill) if (rec.node) entries.fill(rec);
  for (const rec of dirtyText) if (rec.node) entries.showText(rec);
  dirtyFill.clear();
  dirtyText.clear();
}

// ---- the model -----------------------------------------------------------------------------

function clearView() {
  epoch += 1;
  for (const rec of timeline) if (rec.node) entries.unbuild(rec);
  recs.clear();
  timeline = [];
  range.reset();
  dirtyFill.clear();
  dirtyText.clear();
  heldRecs.clear();
  restoreHeld = 0;
  restoring.clear(), restoreWanted.clear();
  for (const list of lists) list.clear();
  // Cards waiting outside any entry go too (the spacers stay).
  for (const node of [...$("transcript").children]) if (!node.classList.contains("spacer")) node.remove();
  $("plan").replaceChildren();
  $("commands").replaceChildren();
  commands = [];
  cards.clear();
  setState({ state: "idle" });
  usageOp = null;
  panels.setUsage({});
  banner(null);
  search.reset();
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
function newRecord(entry, index, skipUpTo) {
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

function place(rec) {
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
  cards.adopt(rec);
}

function removeRecord(rec) {
  cards.release(rec);
  if (rec.list) rec.list.remove(rec);
  if (rec.node) entries.unbuild(rec);
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

// Whole-entry changes (insert of a known id, update): the view and the text are replaced.
function updateRecord(rec, entry, counter) {
  const kind = String(entry.kind || "unknown");
  if (kind !== rec.kind) {
    const index = rec.index;
    const skip = rec.skipUpTo;
    removeRecord(rec);
    place(newRecord(entry, index, skip));
    return;
  }
  if (rec.shed) { rec.shed = null; heldRecs.add(rec); }
  rec.touchedAt = frameTime;
  rec.view = viewOf(entry);
  const text = typeof entry.text === "string" ? entry.text : "";
  if (rec.long || text !== rec.text) { entries.setText(rec, text); dirtyText.add(rec); }
  entries.facts(rec);
  dirtyFill.add(rec);
  if (rec.list) rec.list.changed(rec);
  cards.adopt(rec);
}

// What the entry and text ops do to the model (ops.js maps each op name to its handler).
const model = {
  insertEntry(op, counter) {
    const entry = op.entry || {};
    const known = recs.get(String(entry.id));
    if (known) { if (counter > known.skipUpTo) updateRecord(known, entry, counter); }
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
    updateRecord(rec, op.entry || {}, counter);
  },
  appendText(op, counter) {
    const rec = recs.get(String(op.id));
    if (!rec) { range.holdForOlder(String(op.id), op, counter); return; }
    if (counter <= rec.skipUpTo) return;
    rec.touchedAt = frameTime;
    if (rec.shed || restoring.has(rec)) { holdUntilRestored(rec, op, counter); return; }
    entries.appendText(rec, String(op.text ?? ""));
    dirtyText.add(rec);
    if (rec.list) rec.list.changed(rec);
  },
  truncateText(op, counter) {
    const rec = recs.get(String(op.id));
    if (!rec) { range.holdForOlder(String(op.id), op, counter); return; }
    if (counter <= rec.skipUpTo) return;
    rec.touchedAt = frameTime;
    // Cut inside a text held clipped (or not held): the whole text comes from the server first.
    if (rec.shed || rec.long || restoring.has(rec)) { holdUntilRestored(rec, op, counter); return; }
    // `len` counts UTF-16 code units, the unit of JavaScript strings.
    const len = Math.max(0, Math.min(rec.text.length, Number(op.len) || 0));
    if (len === rec.text.length) return;
    entries.setText(rec, rec.text.slice(0, len));
    dirtyText.add(rec);
    if (rec.list) rec.list.changed(rec);
  },
};

// ---- bounded memory: far entries hold no text ---------------------------------------------

// Only records near what is drawn keep their text and view. The others are "shed": they keep
// their id, kind, index, height, what cards match them by, and the length and hash of the text
// the page applied (`rec.shed`). One that must be drawn again, or gets a text op, is fetched back
// (a page of entries cut at a batch; ops of later batches, held meanwhile, are applied after it).
const HELD_LIMIT = 600; // records holding their text before a shedding pass
const KEEP_NEAR = 150; // timeline positions on either side of the drawn records that keep theirs
const heldRecs = new Set(); // records not shed (what a shedding pass looks at)
const SHED_EVERY_MS = 250;
let shedAt = -Infinity; // frameTime of the last shedding pass
let frameTime = 0, shedTimer = 0; // performance.now() of the current frame; a later pass asked for
const restoreWanted = new Set(); // records whose text is to be fetched back
const restoring = new Map(); // record -> ops held until its text is back [{op, counter}]
let restoreHeld = 0;
let restoreBusy = false;

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
  shedAt = frameTime;
  for (const rec of heldRecs) {
    if (rec.shed || rec === last || rec.node || restoring.has(rec) || restoreWanted.has(rec) || hasCards(rec)) continue;
    // Plans are drawn in their pane; an entry still streaming (a text op in the last second)
    // keeps its text (a long one is held clipped anyway).
    if (rec.kind === "plan" || rec.kind === "plan_text") continue;
    if (frameTime - rec.touchedAt < 1000) { streaming += 1; continue; }
    if (near.some(([from, to]) => rec.index >= from && rec.index <= to)) continue;
    if (rec.height == null && rec.estimated == null) entries.estimate(rec, 700);
    rec.shed = { length: entries.lengthOf(rec), hash: entries.hashOf(rec) };
    Object.assign(rec, { text: "", long: null, view: null, version: rec.version + 1 });
    heldRecs.delete(rec);
  }
  return streaming;
}

// Asks for a shed record's text (or the whole of a clipped one) from the server.
function restore(rec) {
  if ((!rec.shed && !rec.long) || recs.get(rec.id) !== rec) return;
  restoreWanted.add(rec);
  fetchRestores();
}

function holdUntilRestored(rec, op, counter) {
  (restoring.get(rec) || restoring.set(rec, []).get(rec)).push({ op, counter });
  if (++restoreHeld > PENDING_LIMIT) reconnect(); else { restoreWanted.add(rec); fetchRestores(); }
}

// Resolves once the record holds its text again (at once when it does).
function whenRestored(rec) {
  if (!restoreWanted.has(rec)) return Promise.resolve();
  return new Promise((resolve) => { (rec.onRestored = rec.onRestored || []).push(resolve); });
}

function fetchRestores() {
  if (restoreBusy || !restoreWanted.size || current === null) return;
  let lo = Infinity, hi = -1;
  for (const rec of restoreWanted) { lo = Math.min(lo, rec.index); hi = Math.max(hi, rec.index); }
  hi = Math.min(hi, lo + 499);
  restoreBusy = true;
  const asked = epoch, session = current;
  api("/api/sessions/" + encodeURIComponent(session) + "/entries?before=" + (hi + 1) + "&limit=" + (hi + 1 - lo)).then((page) => {
    if (asked !== epoch || session !== current) return;
    const cut = parseId(page.event);
    if (!cut || (generation !== null && cut.generation !== generation)) { reconnect(); return; }
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
      for (const { op, counter } of held) if (counter > cut.counter) apply(op, counter);
      if (rec.list) rec.list.changed(rec);
      for (const resolve of rec.onRestored || []) resolve();
      rec.onRestored = null;
    }
    // A record of the range the server did not send (its index moved): the view starts over.
    for (const rec of restoreWanted) if (rec.index >= lo && rec.index <= hi && !got.has(rec)) { reconnect(); return; }
  }).catch((e) => {
    if (asked === epoch) banner("Cannot load entries: " + e.message, "error");
  }).finally(() => {
    restoreBusy = false;
    if (asked === epoch) { schedule(); setTimeout(fetchRestores, 0); }
  });
}

// Which entries the page holds records for (range.js): older ones on demand, far ones let go.
const range = createRange({
  entries, lists, transcript, listFor, cards,
  model: {
    get timeline() { return timeline; },
    set timeline(value) { timeline = value; },
    recs, heldRecs, dirtyFill, dirtyText,
  },
  session: () => current, epoch: () => epoch, generation: () => generation,
  reconnect, schedule, apply, place, newRecord, removeRecord,
  busy: () => restoreBusy || restoreWanted.size > 0 || search.busy(),
  restoring: (rec) => restoring.has(rec),
  frameTime: () => frameTime,
  keepNear: KEEP_NEAR,
  pendingLimit: PENDING_LIMIT,
});

// The search reads the server's entries (the page holds the text of a few only), a page at a
// time; a match is brought in (older entries loaded, its text fetched back) when shown.
const search = createSearch({
  end: () => Math.max(range.newerEnd(), timeline.length ? timeline[timeline.length - 1].index + 1 : 0),
  fetchEntries: (before, limit) => api("/api/sessions/" + encodeURIComponent(current) + "/entries?before=" + before + "&limit=" + limit),
  reveal: async (match, done) => {
    const asked = epoch;
    while (!recs.has(match.id) && range.loadedFrom() > 0 && asked === epoch) if (!(await range.loadOlder(500))) break;
    while (!recs.has(match.id) && range.newerFrom() !== null && asked === epoch) if (!(await range.loadNewer(500))) break;
    const rec = recs.get(match.id);
    if (!rec || asked !== epoch) return;
    restore(rec);
    await whenRestored(rec);
    if (!entries.drawnAt(rec, match.offset)) { entries.expand(rec); await whenRestored(rec); }
    const list = rec.list;
    if (list) { list.reveal(rec, "center", done); schedule(); return; }
    if (rec.node) { rec.node.scrollIntoView({ block: "center" }); done(rec.node); }
  },
});

// Every op the server sends, by name (ops.js).
const handlers = opHandlers({
  model, range, panels, cards, banner, setState, refreshSessions,
  setUsage: (op) => { usageOp = op; },
  setCommands: (list) => {
    commands = Array.isArray(list) ? list.filter((c) => c && typeof c === "object") : [];
    panels.showCommands(commands);
  },
});

// ---- status ----------------------------------------------------------------------------

function setState(op) {
  const st = op.state || {};
  const state = String(st.status || "idle");
  const s = $("state");
  s.dataset.state = state;
  // An unknown state is shown as busy, never as idle.
  s.textContent = state === "requires_action" ? "requires action" : state;
  const reason = st.stopReason;
  const error = st.error && st.error.message ? " (" + st.error.message + ")" : "";
  $("stop-reason").textContent = reason ? "stop reason: " + reason + error : "";
  running = !!(st.turnOpen || state === "running" || state === "requires_action");
  $("cancel").disabled = !running;
}

// ---- controls ----------------------------------------------------------------------------

$("cancel").addEventListener("click", async () => {
  if (current === null) return;
  try { await api("/api/sessions/" + encodeURIComponent(current) + "/cancel", {}); }
  catch (e) { banner("Cancel failed: " + e.message, "error"); }
});

panels.showTab(document.body.dataset.tab || "chat");

// The page's one global, the hook of the browser tests and the page benchmark (tests/browser,
// bench/browser); no module publishes anything else. A read-only view of the applied state:
// `entries()` is what each entry's text buffer holds, in timeline order (every entry the page
// holds: after a reopen, the tail and what was loaded since); `loadAll()` loads the others;
// `stats()` counts what is drawn; `recordFrames()` starts the per-frame timings `frameLog()`.
window.SpindleView = Object.freeze({
  // (Entries dropped back to "not loaded" are answered with the server's when their digests add
  // up to what the page dropped; see range.js.)
  entries: async () => {
    const transcriptDoc = () => api("/api/sessions/" + encodeURIComponent(current) + "/transcript");
    const doc = range.dropped().count() ? await transcriptDoc() : null;
    const list = timeline.slice();
    const held = await entries.checked(list, doc ? () => doc : transcriptDoc);
    if (!doc) return held;
    return range.checkDropped(held, list, doc);
  },
  loadAll: () => range.loadAll(),
  stats: () => ({
    // (`held` and `textLength` count the dropped entries too: what the page applied.)
    held: timeline.length + range.dropped().count(), loaded: timeline.length, ...range.stats(), queued, frames, events, batches, slowFrames,
    drawn: transcript.drawnCount() + thoughts.drawnCount(), following: transcript.following(),
    withText: heldRecs.size, textLength: range.dropped().textLength() + timeline.reduce((n, rec) => n + (rec.shed ? rec.shed.length : entries.lengthOf(rec)), 0),
  }),
  recordFrames: () => { if (!frameLog) frameLog = []; },
  frameLog: () => frameLog,
});

(window.requestIdleCallback || ((f) => setTimeout(f, 50)))(entries.warmFonts);

(async () => {
  const sessions = (await refreshSessions()) || [];
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted && sessions.some((s) => String(s.id) === wanted)) select(wanted);
})();
