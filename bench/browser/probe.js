// The page side of the benchmark: an init script that runs before the page's own scripts in
// every document (a requestAnimationFrame counter, a long-task observer, the reopen probe), and
// the Node helpers that arm, read and measure it through playwright-core and CDP.
//
// DOM signals read (announced in /work/notes/page.md for the page rewrite):
// - turn done: `#state[data-state="idle"]` and `#stop-reason` naming the stop reason (end_turn);
// - last screen visible: the node `#transcript [data-entry-id=ID]` of the last transcript-pane
//   entry exists, shows its text ("rendered"), and intersects both the `#transcript` box and
//   the window ("visible");
// - the page's whole state: `window.SpindleView.entries()` ({id, kind, text} in timeline order).
"use strict";

const REOPEN_KEY = "spindle-page-bench-reopen";

/** Runs in the page before any of its scripts (page.addInitScript). */
function initScript(reopenKey) {
  const bench = {
    frames: [], // performance.now() of every animation frame
    longtasks: [], // [startTime, duration] of every task over 50 ms
    done: null, // performance.now() of the first frame showing the finished turn
    doneDom: null, // performance.now() at which the DOM said the turn is done
    reopen: null, // performance.now() of the first frame showing the last screen (in view)
    reopenWanted: null,
  };
  window.__spindleBench = bench;
  const tick = () => {
    bench.frames.push(performance.now());
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) bench.longtasks.push([e.startTime, e.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (_) {
    bench.longtasks = null; // not supported: reported as unknown
  }

  // The last entry of the transcript pane: "rendered" when its node exists and shows its text
  // (its last word, when it has text); "visible" when it also lies inside the transcript's box
  // and the window.
  bench.lastScreen = (want) => {
    const box = document.getElementById("transcript");
    if (!box) return null;
    const node = box.querySelector('[data-entry-id="' + CSS.escape(want.entryId) + '"]');
    if (!node) return null;
    const text = node.textContent || "";
    if (!text.trim() || (want.tail && !text.includes(want.tail))) return null;
    const r = node.getBoundingClientRect();
    const v = box.getBoundingClientRect();
    const visible = r.height > 0 && r.bottom > v.top && r.top < v.bottom && r.bottom > 0 && r.top < window.innerHeight;
    return { visible, top: r.top, windowHeight: window.innerHeight, scrollY: window.scrollY, boxScrollTop: box.scrollTop };
  };

  let wanted = null;
  try {
    wanted = JSON.parse(sessionStorage.getItem(reopenKey) || "null");
    sessionStorage.removeItem(reopenKey);
  } catch (_) {
    wanted = null;
  }
  if (wanted) {
    bench.reopenWanted = wanted;
    bench.rendered = null; // performance.now() of the first frame with the last entry rendered
    bench.renderedWhere = null;
    const check = () => {
      let seen = null;
      try { seen = bench.lastScreen(wanted); } catch (_) { seen = null; }
      if (seen && bench.rendered === null) { bench.rendered = performance.now(); bench.renderedWhere = seen; }
      if (seen && seen.visible) bench.reopen = performance.now();
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  }

  // Watches the status pane from now on: the first time it says the turn is done (idle and a
  // stop reason), records when, and the next frame. Returns false when it already says so.
  bench.arm = () => {
    const state = document.getElementById("state");
    const stop = document.getElementById("stop-reason");
    if (!state || !stop) throw new Error("the page has no #state / #stop-reason");
    const isDone = () => state.dataset.state === "idle" && /end_turn/.test(stop.textContent || "");
    if (isDone()) return false;
    bench.done = null;
    bench.doneDom = null;
    const observer = new MutationObserver(() => {
      if (bench.doneDom !== null || !isDone()) return;
      bench.doneDom = performance.now();
      observer.disconnect();
      // What the page held when it said done (checked against the server's transcript later).
      // (stats(): how many entries and how much text the page has applied, whether it still holds
      // that text or only its length and hash; entries() is a Promise that may ask the server.)
      try {
        const st = window.SpindleView.stats();
        bench.heldAtDone = { entries: st.held, textLength: st.textLength };
      } catch (_) {
        bench.heldAtDone = null;
      }
      requestAnimationFrame(() => { bench.done = performance.now(); });
    });
    const watch = { attributes: true, childList: true, characterData: true, subtree: true };
    observer.observe(state, watch);
    observer.observe(stop, watch);
    return true;
  };
}

/** Sets up a page for measuring: the init script and a CDP session with Performance on. */
async function instrument(context, page) {
  await page.addInitScript(initScript, REOPEN_KEY);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Performance.enable");
  return cdp;
}

async function metrics(cdp) {
  const { metrics: list } = await cdp.send("Performance.getMetrics");
  return Object.fromEntries(list.map((m) => [m.name, m.value]));
}

/** Heap and DOM after a garbage collection: { heapUsed, heapTotal (bytes), nodes (CDP, with
 *  text nodes), elements (document elements), listeners }. */
async function memory(cdp, page) {
  await cdp.send("HeapProfiler.collectGarbage").catch(() => {});
  const m = await metrics(cdp);
  const elements = await page.evaluate(() => document.getElementsByTagName("*").length);
  return { heapUsed: m.JSHeapUsedSize, heapTotal: m.JSHeapTotalSize, nodes: m.Nodes, elements, listeners: m.JSEventListeners };
}

/** Polls `read` (a page.evaluate) until it gives a non-null value or `timeoutMs` passes. */
async function waitFor(what, read, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out after " + timeoutMs / 1000 + " s waiting for " + what);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Frames and long tasks of the page between two of its performance.now() times. */
async function window_(page, from, to) {
  return page.evaluate(([a, b]) => {
    const bench = window.__spindleBench;
    const frames = bench.frames.filter((t) => t >= a && t <= b);
    let gap = 0;
    let last = a;
    for (const t of frames) { gap = Math.max(gap, t - last); last = t; }
    gap = Math.max(gap, b - last);
    const tasks = bench.longtasks === null ? null
      : bench.longtasks.filter(([s, d]) => s + d > a && s < b);
    return {
      frames: frames.length,
      fps: frames.length / Math.max(0.001, (b - a) / 1000),
      longestFrameGapMs: gap,
      longTasks: tasks === null ? null : tasks.length,
      longTaskTotalMs: tasks === null ? null : tasks.reduce((s, [, d]) => s + d, 0),
      longestTaskMs: tasks === null ? null : tasks.reduce((m, [, d]) => Math.max(m, d), 0),
      visibility: document.visibilityState,
      heldAtDone: bench.heldAtDone || null,
    };
  }, [from, to]);
}

/** Frames per second of the page doing nothing (no stream) over `ms`: the floor this browser on
 *  this machine gives at best, measured in the same run as the turn. */
const idleFps = (page, ms) => page.evaluate((span) => new Promise((resolve) => {
  const frames = window.__spindleBench.frames;
  const from = performance.now();
  const n0 = frames.length;
  setTimeout(() => resolve((frames.length - n0) / ((performance.now() - from) / 1000)), span);
}), ms);

/** The page's clock origin (epoch ms). */
const timeOrigin = (page) => page.evaluate(() => performance.timeOrigin);

const arm = (page) => page.evaluate(() => window.__spindleBench.arm());
const doneAt = (page) => page.evaluate(() => window.__spindleBench.done);
const reopenState = (page) => page.evaluate(() => {
  const b = window.__spindleBench;
  return b ? { rendered: b.rendered, reopen: b.reopen, where: b.renderedWhere } : null;
});
const viewEntries = (page) => page.evaluate(() => window.SpindleView.entries());
const wantReopen = (page, want) => page.evaluate(([key, w]) => sessionStorage.setItem(key, JSON.stringify(w)), [REOPEN_KEY, want]);

module.exports = { idleFps, instrument, metrics, memory, waitFor, window_, timeOrigin, arm, doneAt, reopenState, viewEntries, wantReopen };
