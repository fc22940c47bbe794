// The page is a view: it applies the render ops the server's engine sends and holds no protocol
// logic. Ops are queued as they arrive and applied once per animation frame: text ops only edit
// the page's model of an entry (its text), so many appends to one entry cost one DOM update; the
// transcript and the thoughts are windowed (window.js): only entries near the viewport have DOM.
// A reopened session comes with its tail; older entries are fetched as the reader scrolls up or
// the search needs them.
//
// The page's entry module: index.html loads only this file, the others are its imports (ES
// modules, no build step). It creates the page's parts and owns the frame loop; the model of the
// entries is model.js's, which entries have records range.js's; ops.js maps each op to its part.

import { $, api, banner, clearBanners } from "./dom.js";
import { createPanels } from "./panels.js";
import { createComposer } from "./composer.js";
import { createQueue } from "./queue.js";
import { createEntries } from "./entries.js";
import { createCards, hasCards } from "./cards.js";
import { createWindow, renderAll } from "./window.js";
import { createFeed, parseId } from "./feed.js";
import { createTrees } from "./trees.js";
import { createRange } from "./range.js";
import { createSearch } from "./search.js";
import { createShortcuts } from "./shortcuts.js";
import { opHandlers } from "./ops.js";
import { loadMe } from "./people.js";
import {
  bindModel, entryOps, session, epoch, setSession, setGeneration, setFrameTime, recs, timeline, heldRecs,
  clearRecords, flushRecords, shed, restore, whenRestored,
} from "./model.js";

let applied = 0; // counter of the last batch applied
let commands = []; // the agent's available commands (SetCommands)

const refreshSessions = () => panels.refreshSessions();
const panels = createPanels({
  session,
  select: (id) => select(id),
  deselect: () => deselect(),
  // The page's layout changed (a phone tab shown): the windowed lists measure again.
  layoutChanged: () => { for (const list of lists) list.invalidate(); schedule(); },
});
const composer = createComposer({
  session,
  agent: () => panels.agent(),
  commands: () => commands,
  sent: () => { refreshSessions(); range.followEnd(); schedule(); },
});
const promptQueue = createQueue({ session });
const entries = createEntries({
  changed: (rec) => { if (rec.list) rec.list.changed(rec); schedule(); },
  wantWhole: (rec) => restore(rec),
});

const cards = createCards({
  session,
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

// ---- sessions ----------------------------------------------------------------------------

function select(id) {
  feed.close();
  setSession(String(id));
  history.replaceState(null, "", "#session=" + encodeURIComponent(session()));
  clearView();
  panels.clear();
  composer.reset();
  panels.loadAgent();
  $("empty").hidden = true;
  $("prompt-form").hidden = false;
  // At phone width a chosen session is shown at once.
  if (document.body.dataset.tab !== "chat") panels.showTab("chat");
  for (const b of document.querySelectorAll("#session-list button")) {
    if (b.dataset.session === session()) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
  connect();
}

// The shown session left the list (deleted): the page shows no session.
function deselect() {
  feed.close(true);
  setSession(null);
  setConn(null);
  history.replaceState(null, "", location.pathname + location.search);
  clearView();
  panels.clear();
  composer.reset();
  $("empty").hidden = false;
  $("prompt-form").hidden = true;
  document.title = "Spindle";
}

// The session's events (feed.js: through the shared worker, one stream per session for all the
// tabs of this origin, where there is one, else an EventSource of this tab's own).
// The shown session's event stream: live, reconnecting, offline; no badge while no session is
// shown (there is no stream, and "offline" would read as the server being down).
const setConn = (state) => {
  const c = $("connection");
  c.hidden = state === null;
  c.dataset.state = state ?? "none";
  c.textContent = state ?? "";
};
const feed = createFeed({
  setConn, session,
  reset: (data, id) => reset(data, id),
  ops: (data, id, after) => receive(data, id, after),
  broken: () => { if (session() !== null) reconnect(); },
  ended: () => refreshSessions(),
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
  if (parsed) setGeneration(parsed.generation);
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
  setFrameTime(started);
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
  range.trim();
  shed(queue.length > 0);
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
  search: { redrawn: (rec) => search.redrawn(rec) }, schedule,
  streaming: (rec) => running && rec === timeline[timeline.length - 1],
});

function apply(op, counter) {
  const handler = handlers[op && op.op];
  if (!handler) return;
  try { handler(op, counter); } catch (e) { console.warn("op failed", op.op, e); }
}

// The last set_usage op of the frame: drawn once in flush (a fast stream sends one per chunk).
let usageOp = null;

function flush() {
  if (usageOp) { panels.setUsage(usageOp); usageOp = null; }
  flushRecords();
}

// ---- the view starts over ------------------------------------------------------------------

function clearView() {
  clearRecords();
  range.reset();
  // Cards waiting outside any entry go too (the spacers stay).
  for (const node of [...$("transcript").children]) if (!node.classList.contains("spacer")) node.remove();
  $("plan").replaceChildren();
  $("commands").replaceChildren();
  commands = [];
  cards.clear();
  promptQueue.clear();
  setState({ state: "idle" });
  usageOp = null;
  panels.setUsage({});
  clearBanners(true);
  search.reset();
}

// The model is wired to the parts its records go to (model.js) before anything uses it.
bindModel({ entries, cards, transcript, thoughts, schedule, reconnect, apply });

// Which entries the page holds records for (range.js): older ones on demand, far ones let go.
const range = createRange({ schedule, reconnect, apply, searching: () => search.busy() });

// The search reads the server's entries (the page holds the text of a few only), a page at a
// time; a match is brought in (older entries loaded, its text fetched back) when shown.
const search = createSearch({
  end: () => Math.max(range.newerEnd(), timeline.length ? timeline[timeline.length - 1].index + 1 : 0),
  fetchEntries: (before, limit) => api("/api/sessions/" + encodeURIComponent(session()) + "/entries?before=" + before + "&limit=" + limit),
  reveal: async (match, done) => {
    const asked = epoch();
    while (!recs.has(match.id) && range.loadedFrom() > 0 && asked === epoch()) if (!(await range.loadOlder(500))) break;
    while (!recs.has(match.id) && range.newerFrom() !== null && asked === epoch()) if (!(await range.loadNewer(500))) break;
    const rec = recs.get(match.id);
    if (!rec || asked !== epoch()) return;
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
  model: entryOps(range), range, panels, cards, promptQueue, setState, refreshSessions,
  // The server's banner has a key of its own: the page's banners do not replace it.
  banner: (text, level) => banner(text, level, "server"),
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
  const wasRunning = running;
  running = !!(st.turnOpen || state === "running" || state === "requires_action");
  $("cancel").disabled = !running;
  showQueueing();
  // The phone's Chat tab shows that a turn runs while another tab is shown.
  document.querySelector("#tabs .tab-running").hidden = !(state === "running" || state === "requires_action");
  // A turn that ended well: the page's banners of earlier failures no longer apply.
  if (wasRunning && !running && !st.error && reason && reason !== "cancelled" && reason !== "refusal") clearBanners();
}

// A v1 agent takes one prompt at a time: while its turn runs, what is sent is queued (the
// server decides; the page says so). The protocol is unknown until the agent answered: v1 then,
// serve's default.
function showQueueing() {
  const agent = panels.agent();
  const v1 = !(agent && agent.protocol >= 2);
  promptQueue.setRunning(running);
  composer.setQueueing(running && v1);
}

// ---- controls ----------------------------------------------------------------------------

async function cancelTurn() {
  if (session() === null) return;
  try {
    await api("/api/sessions/" + encodeURIComponent(session()) + "/cancel", {});
    banner(null, null, "cancel");
  } catch (e) { banner("Cancel failed: " + e.message, "error", "cancel"); }
}
$("cancel").addEventListener("click", cancelTurn);

// Keyboard shortcuts (shortcuts.js): Esc cancels a running turn, Alt+N, Alt+arrows, Alt+P, `?`.
createShortcuts({
  cancel: () => { if (!running || session() === null) return false; cancelTurn(); return true; },
  newSession: () => $("new-session-form").requestSubmit(),
  stepSession: (delta) => panels.stepSession(delta),
  focusPrompt: () => {
    if ($("prompt-form").hidden) return;
    if (document.body.dataset.tab !== "chat") panels.showTab("chat");
    composer.focus();
  },
  sendKey: () => composer.sendKey(),
  setSendKey: (value) => composer.setSendKey(value),
});

// Other pages rename and delete sessions: a page coming back into view lists them again (a
// page watching a session hears of it at once, through its stream: `web_session`; one showing
// none asks every 15 s).
document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") refreshSessions(); });
// A page showing no session has no stream to hear it through: it asks now and then.
setInterval(() => { if (session() === null && document.visibilityState === "visible") refreshSessions(); }, 15000);

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
    const transcriptDoc = () => api("/api/sessions/" + encodeURIComponent(session()) + "/transcript");
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

// Who the page is signed in as: the header and what the page offers follow the role.
loadMe();
