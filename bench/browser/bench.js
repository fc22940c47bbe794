// The page benchmark of issue #15: `spindle serve` with the reference agent, `/stream N mixed`
// turns in a fresh session, measured in headless Chromium (playwright-core, Debian's chromium).
// Usage (through run.sh): node bench.js [options] PATH/TO/spindle
//   --quick            N = 2,000 and 2 tabs: checks every page ends with the server's transcript,
//                      live and after a reload, and that the reload opens at the last entry; exits 1
//                      when one does not (timings not asserted)
//   --sizes A,B        turn sizes (default 20000,100000)
//   --tabs K           tabs of the many-tabs run (default 10; 0 skips it)
//   --label NAME       the run's name in the report (default "current")
//   --json FILE        where the JSON results go (default: stdout only gets the table); with --only,
//                      the runs of the other kinds already in FILE are kept
//   --assets DIR       serve the page's files (/, *.js, *.css) from DIR instead of the binary
//   --timeout SECS     longest wait for one turn or reopen (default 600; --quick 60)
//   --only KINDS       run only some of: single (1 tab + reopen), shared (K tabs in one browser
//                      context), separate (K tabs, a context each; not in --quick)
"use strict";

const { chromium } = require("playwright-core");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const srv = require("./server.js");
const probe = require("./probe.js");
const report = require("./report.js");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const LAUNCH_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];
const VIEWPORT = { width: 1280, height: 860 };

function parseArgs(argv) {
  const o = { quick: false, sizes: null, tabs: null, label: "current", json: null, assets: null, timeout: null, only: null, spindle: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(a + " needs a value");
      return argv[++i];
    };
    if (a === "--quick") o.quick = true;
    else if (a === "--sizes") o.sizes = value().split(",").map((s) => Number(s.replace(/_/g, "")));
    else if (a === "--tabs") o.tabs = Number(value());
    else if (a === "--label") o.label = value();
    else if (a === "--json") o.json = value();
    else if (a === "--assets") o.assets = value();
    else if (a === "--timeout") o.timeout = Number(value());
    else if (a === "--only") o.only = value().split(",");
    else if (a.startsWith("--")) throw new Error("unknown option " + a);
    else if (o.spindle === null) o.spindle = a;
    else throw new Error("unexpected argument " + a);
  }
  if (!o.spindle) throw new Error("usage: bench.js [--quick] [--sizes A,B] [--tabs K] [--label NAME] [--json FILE] [--assets DIR] [--timeout SECS] PATH/TO/spindle");
  o.sizes = o.sizes || (o.quick ? [2000] : [20000, 100000]);
  if (o.sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error("--sizes: positive integers");
  o.tabs = o.tabs ?? (o.quick ? 2 : 10);
  o.timeoutMs = 1000 * (o.timeout || (o.quick ? 60 : 600));
  return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error("[page-bench]", ...a);
const withTimeout = (promise, ms, what) => Promise.race([
  promise,
  new Promise((_, reject) => setTimeout(() => reject(new Error("timed out after " + ms / 1000 + " s waiting for " + what)), ms).unref()),
]);

// Serves the page's own files from a directory (to measure a page without rebuilding the binary);
// the document keeps the server's status and headers (CSP).
async function serveAssets(context, dir) {
  await context.route((url) => url.pathname === "/" || /^\/[\w.-]+\.(js|css)$/.test(url.pathname), async (route) => {
    const url = new URL(route.request().url());
    const name = url.pathname === "/" ? "index.html" : url.pathname.slice(1);
    const file = path.join(dir, name);
    if (url.search || !fs.existsSync(file)) { await route.continue(); return; }
    const body = fs.readFileSync(file, "utf8");
    if (name === "index.html") {
      const response = await route.fetch();
      await route.fulfill({ response, body });
    } else {
      const type = name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8";
      await route.fulfill({ status: 200, contentType: type, body });
    }
  });
}

// A tab on the session, instrumented, with the greeting shown and the connection live.
async function openTab(context, base, id, timeoutMs) {
  const page = await context.newPage();
  const cdp = await probe.instrument(context, page);
  page.setDefaultTimeout(timeoutMs);
  await page.goto(base + "/#session=" + id, { waitUntil: "domcontentloaded", timeout: timeoutMs });
  await page.waitForSelector("#prompt-form:not([hidden])", { timeout: timeoutMs });
  await probe.waitFor("a live connection", async () =>
    ((await page.getAttribute("#connection", "data-state")) === "live" ? true : null), timeoutMs);
  await probe.waitFor("the greeting", async () => ((await probe.viewEntries(page)).length > 0 ? true : null), timeoutMs);
  return { page, cdp };
}

// Compares the page's entries with the server's (retried for up to 10 s while the page settles):
// "equal" or "MISMATCH ...". With `loadAll`, a page that loads older entries on demand is first
// asked to load them all (`SpindleView.loadAll()`, when the page has it).
async function checkEntries(page, expected, loadAll) {
  if (loadAll) {
    await page.evaluate(() => (window.SpindleView && typeof window.SpindleView.loadAll === "function"
      ? window.SpindleView.loadAll() : null));
  }
  const want = JSON.stringify(expected);
  const deadline = Date.now() + 10000;
  for (;;) {
    const shown = await probe.viewEntries(page);
    if (JSON.stringify(shown) === want) return { ok: true, verdict: "equal", shown: shown.length, expected: expected.length };
    if (Date.now() > deadline) {
      const at = shown.findIndex((e, i) => JSON.stringify(e) !== JSON.stringify(expected[i]));
      const verdict = "MISMATCH: page has " + shown.length + " entries, server " + expected.length
        + (at >= 0 ? "; first difference at " + at + " (" + JSON.stringify(shown[at]).slice(0, 160) + ")" : "");
      return { ok: false, verdict, shown: shown.length, expected: expected.length };
    }
    await sleep(250);
  }
}

// One turn of `/stream N mixed` watched by every tab and by a plain SSE reader.
async function measureTurn(base, id, tabs, n, timeoutMs) {
  const events = srv.openEvents(base, id);
  await events.connected;
  for (const tab of tabs) {
    tab.origin = await probe.timeOrigin(tab.page);
    tab.m0 = await probe.metrics(tab.cdp);
    if (!(await probe.arm(tab.page))) throw new Error("the page shows a finished turn before the prompt");
  }
  const t0 = srv.epochNow();
  await srv.postPrompt(base, id, "/stream " + n + " mixed");
  const serverEnd = await withTimeout(events.turnEnd(t0), timeoutMs, "the SSE reader to see the turn end");
  events.close();
  const serverMs = serverEnd.at - t0;
  log("  server: turn ended after " + (serverMs / 1000).toFixed(2) + " s");
  // A tab still busy when the wait ends is reported as not done (it is not read again: a
  // page.evaluate would wait for its task); with one tab that is a failure.
  const waitedMs = Math.max(1000, timeoutMs - (srv.epochNow() - t0));
  const pages = await Promise.all(tabs.map(async (tab) => {
    let done = null;
    try {
      done = await probe.waitFor("the page to show the turn done", () => probe.doneAt(tab.page), waitedMs);
    } catch (error) {
      if (tabs.length === 1) throw error;
      return { tab, done: null };
    }
    const m1 = await probe.metrics(tab.cdp);
    return { tab, done, m1 };
  }));
  await sleep(500); // long-task entries arrive after their task
  const results = [];
  for (const { tab, done, m1 } of pages) {
    if (done === null) { results.push({ pageMs: null, notDoneAfterMs: srv.epochNow() - t0 }); continue; }
    const w = await probe.window_(tab.page, t0 - tab.origin, done);
    const d = (k) => 1000 * ((m1[k] || 0) - (tab.m0[k] || 0));
    results.push({
      pageMs: tab.origin + done - t0,
      taskMs: d("TaskDuration"), scriptMs: d("ScriptDuration"), layoutMs: d("LayoutDuration"),
      styleMs: d("RecalcStyleDuration"), layouts: (m1.LayoutCount || 0) - (tab.m0.LayoutCount || 0),
      ...w,
    });
  }
  return { serverMs, sse: serverEnd.stats, pages: results };
}

// The frame rate this browser gives on this machine at best while the server streams the turn:
// a tab on an idle session of the same server counts its frames while the same turn streams
// into another session (read by the SSE reader only). The page's own fps is read against it.
async function streamingFloor(context, base, n, timeoutMs) {
  const idle = await srv.createSession(base);
  const busy = await srv.createSession(base);
  const tab = await openTab(context, base, idle, timeoutMs);
  await sleep(500);
  const events = srv.openEvents(base, busy);
  await events.connected;
  const origin = await probe.timeOrigin(tab.page);
  const t0 = srv.epochNow();
  await srv.postPrompt(base, busy, "/stream " + n + " mixed");
  const end = await withTimeout(events.turnEnd(t0), timeoutMs, "the SSE reader to see the turn end");
  events.close();
  const w = await probe.window_(tab.page, t0 - origin, end.at - origin);
  await tab.page.close();
  return { fps: w.fps, longestFrameGapMs: w.longestFrameGapMs, longestTaskMs: w.longestTaskMs, serverMs: end.at - t0 };
}

// The reader far up the reopened session while a turn twice as long streams (sent by another
// client; the generator's entry ids repeat, so it writes to the first turn's entries again and adds
// as many new ones): the records the page holds, its DOM and heap after that turn, and its entries,
// all loaded and read at once, against the server's.
async function readingFarUp(tab, base, id, n, timeoutMs) {
  for (let k = 0; k < 5; k++) {
    await tab.page.evaluate(() => { document.getElementById("transcript").scrollTop = 0; });
    await sleep(200);
  }
  const events = srv.openEvents(base, id);
  await events.connected;
  const t0 = srv.epochNow();
  await srv.postPrompt(base, id, "/stream " + 2 * n + " mixed");
  const end = await withTimeout(events.turnEnd(t0), timeoutMs, "the SSE reader to see the turn end");
  events.close();
  await sleep(1500);
  const stats = await tab.page.evaluate(() => { const s = window.SpindleView.stats(); delete s.slowFrames; return s; });
  const memory = await probe.memory(tab.cdp, tab.page);
  const expected = srv.expectedEntries(await srv.transcript(base, id));
  const shown = await tab.page.evaluate(async () => {
    if (typeof window.SpindleView.loadAll === "function") await window.SpindleView.loadAll();
    return window.SpindleView.entries();
  });
  const equal = JSON.stringify(shown) === JSON.stringify(expected);
  const farUp = { serverMs: end.at - t0, entries: expected.length, stats, ...memory, ok: equal, verdict: equal ? "equal" : "MISMATCH: page has " + shown.length + " entries, server " + expected.length };
  log("  reading far up during the next turn: " + stats.loaded + " records held, JS heap " + (memory.heapUsed / 2 ** 20).toFixed(1) + " MiB, " + memory.nodes + " nodes; entries " + farUp.verdict);
  return farUp;
}

async function singleTab(browser, opts, n) {
  const server = await srv.startServer(opts.spindle);
  const context = await browser.newContext({ viewport: VIEWPORT });
  try {
    if (opts.assets) await serveAssets(context, opts.assets);
    const floor = await streamingFloor(context, server.url, n, opts.timeoutMs);
    log(n + " updates: an idle tab had " + floor.fps.toFixed(1) + " fps while the turn streamed into another session");
    const id = await srv.createSession(server.url);
    const tab = await openTab(context, server.url, id, opts.timeoutMs);
    await sleep(500);
    const idleFps = await probe.idleFps(tab.page, 1000);
    log(n + " updates, 1 tab: idle page " + idleFps.toFixed(1) + " fps; streaming");
    const turn = await measureTurn(server.url, id, [tab], n, opts.timeoutMs);
    await sleep(1000);
    const page = turn.pages[0];
    page.idleFps = idleFps;
    page.streamingFloor = floor;
    page.stats = await tab.page.evaluate(() => { const s = window.SpindleView.stats(); delete s.slowFrames; return s; });
    Object.assign(page, await probe.memory(tab.cdp, tab.page));
    const doc = await srv.transcript(server.url, id);
    const expected = srv.expectedEntries(doc);
    page.entries = await checkEntries(tab.page, expected, false);
    const textLength = expected.reduce((n, e) => n + e.text.length, 0);
    page.completeAtDone = !!page.heldAtDone && page.heldAtDone.entries === expected.length && page.heldAtDone.textLength === textLength;
    log("  page: done after " + (page.pageMs / 1000).toFixed(2) + " s (" + (page.completeAtDone ? "every entry and all the text applied then" : "NOT all text applied then: " + JSON.stringify(page.heldAtDone)) + "); entries " + page.entries.verdict);

    // Reopen: reload the finished session; time from navigation start until its last screen shows.
    const last = [...doc.entries].reverse().find((e) => !srv.SIDE_PANE_KINDS.has(e.kind));
    const words = String((last && last.text) || "").match(/[\p{L}\p{N}]{2,}/gu) || [];
    const want = { entryId: String(last ? last.id : ""), tail: words.length ? words[words.length - 1] : null };
    await probe.wantReopen(tab.page, want);
    const before = srv.epochNow();
    await tab.page.reload({ waitUntil: "commit", timeout: opts.timeoutMs });
    log("  reopen: reloading");
    const firstRendered = await probe.waitFor("the last entry rendered after reload",
      async () => { const st = await probe.reopenState(tab.page); return st && st.rendered !== null ? st : null; }, opts.timeoutMs);
    // Once rendered, the last entry must come into view without any scrolling by the reader.
    let st = firstRendered;
    const grace = Date.now() + 3000;
    while (st.reopen === null && Date.now() < grace) { await sleep(200); st = await probe.reopenState(tab.page); }
    const origin = await probe.timeOrigin(tab.page);
    const shownAt = st.reopen !== null ? st.reopen : st.rendered;
    await sleep(500);
    const reopen = {
      ms: st.reopen, renderedMs: st.rendered, wallMs: origin + shownAt - before, lastEntry: want, where: st.where,
      ...(await probe.window_(tab.page, 0, shownAt)),
    };
    await sleep(1500);
    // DOM and heap as the reopened page stands (a page that loads on demand holds only the tail).
    Object.assign(reopen, await probe.memory(tab.cdp, tab.page));
    reopen.entries = await checkEntries(tab.page, expected, true);
    log("  reopen: last entry rendered after " + (reopen.renderedMs / 1000).toFixed(2) + " s, "
      + (reopen.ms === null ? "NOT in view (top at " + Math.round(st.where.top) + " px, window " + st.where.windowHeight + " px)" : "in view after " + (reopen.ms / 1000).toFixed(2) + " s")
      + "; entries " + reopen.entries.verdict);
    const farUp = await readingFarUp(tab, server.url, id, n, opts.timeoutMs);
    return {
      size: n, tabs: 1, serverMs: turn.serverMs, sse: turn.sse, pages: turn.pages, reopen, farUp,
      transcript: { entries: doc.entries.length, textBytes: doc.entries.reduce((s, e) => s + Buffer.byteLength(e.text || ""), 0) },
      server: srv.serverMemory(server.child),
    };
  } finally {
    await context.close().catch(() => {});
    await server.stop();
  }
}

// K tabs on one session, opened before the prompt. `separate`: each tab in a browser context of
// its own (like K devices); otherwise all in one context (one browser profile, as a user opens
// tabs), where a tab that cannot connect within CONNECT_MS is counted as stuck and left out.
const CONNECT_MS = 20000;
async function manyTabs(browser, opts, n, separate) {
  const server = await srv.startServer(opts.spindle);
  const contexts = [];
  const newContext = async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    if (opts.assets) await serveAssets(context, opts.assets);
    contexts.push(context);
    return context;
  };
  try {
    const id = await srv.createSession(server.url);
    const shared = separate ? null : await newContext();
    const tabs = [];
    const stuck = [];
    for (let i = 0; i < opts.tabs; i++) {
      const context = shared || (await newContext());
      try {
        tabs.push(await openTab(context, server.url, id, separate ? opts.timeoutMs : CONNECT_MS));
      } catch (error) {
        if (separate) throw error;
        stuck.push({ tab: i + 1, error: error.message.split("\n")[0] });
        log("  tab " + (i + 1) + " did not connect: " + error.message.split("\n")[0]);
      }
    }
    if (!tabs.length) throw new Error("no tab connected");
    log(n + " updates, " + opts.tabs + " tabs (" + (separate ? "a browser context each" : "one browser context") + ", "
      + tabs.length + " connected): streaming");
    const turn = await measureTurn(server.url, id, tabs, n, opts.timeoutMs);
    await sleep(1000);
    const expected = srv.expectedEntries(await srv.transcript(server.url, id));
    for (let i = 0; i < tabs.length; i++) {
      if (turn.pages[i].pageMs === null) {
        turn.pages[i].entries = { ok: !opts.quick, verdict: "not done after " + Math.round(turn.pages[i].notDoneAfterMs / 1000) + " s" };
        continue;
      }
      Object.assign(turn.pages[i], await probe.memory(tabs[i].cdp, tabs[i].page));
      turn.pages[i].entries = await checkEntries(tabs[i].page, expected, false);
      const held = turn.pages[i].heldAtDone;
      turn.pages[i].completeAtDone = !!held && held.entries === expected.length
        && held.textLength === expected.reduce((n, e) => n + e.text.length, 0);
    }
    const times = turn.pages.map((p) => (p.pageMs === null ? "-" : (p.pageMs / 1000).toFixed(2))).join(", ");
    log("  pages done after " + times + " s; entries " + turn.pages.map((p) => p.entries.verdict).join(", "));
    return {
      size: n, tabs: opts.tabs, separateContexts: separate, connected: tabs.length, stuck,
      serverMs: turn.serverMs, sse: turn.sse, pages: turn.pages, server: srv.serverMemory(server.child),
    };
  } finally {
    for (const context of contexts) await context.close().catch(() => {});
    await server.stop();
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus.length ? cpus[0].model.trim() : "unknown",
    cores: cpus.length,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavg: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(CHROMIUM)) throw new Error("no Chromium at " + CHROMIUM + " (apt-get install chromium, or set CHROMIUM)");
  const result = {
    label: opts.label, quick: opts.quick, date: new Date().toISOString(),
    machine: machine(), node: process.version,
    binary: { path: opts.spindle, commit: process.env.SPINDLE_COMMIT || null, assets: opts.assets ? process.env.SPINDLE_ASSETS_FROM || opts.assets : null },
    runs: [],
  };
  const failures = [];
  const record = (run) => {
    result.runs.push(run);
    const checks = [...run.pages.map((p) => p.entries), ...(run.reopen ? [run.reopen.entries] : []), ...(run.farUp ? [run.farUp] : [])];
    for (const c of checks) if (!c.ok) failures.push(run.size + " updates, " + run.tabs + " tab(s): " + c.verdict);
    // The reopened page opens at its end: a behaviour, checked in --quick (no time involved).
    if (opts.quick && run.reopen && run.reopen.ms === null) {
      failures.push(run.size + " updates: after a reload the last entry was rendered but never came into view");
    }
  };
  const kinds = [{ tabs: 1 }];
  if (opts.tabs > 1) {
    kinds.push({ tabs: opts.tabs, separate: false });
    if (!opts.quick) kinds.push({ tabs: opts.tabs, separate: true });
  }
  for (const n of opts.sizes) {
    for (const { tabs, separate } of kinds) {
      if (opts.only && !opts.only.includes(tabs === 1 ? "single" : separate ? "separate" : "shared")) continue;
      // A browser of its own per run: nothing left over from the previous one.
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS });
      result.chromium = browser.version();
      try {
        record(tabs === 1 ? await singleTab(browser, opts, n) : await manyTabs(browser, opts, n, separate));
      } catch (error) {
        failures.push(n + " updates, " + tabs + " tab(s): " + error.message);
        result.runs.push({ size: n, tabs, separateContexts: separate, error: error.message });
        log("  FAILED: " + error.message);
      } finally {
        await browser.close().catch(() => {});
      }
    }
  }
  result.machine.loadavgAfter = os.loadavg().map((x) => Number(x.toFixed(2)));
  result.failures = failures;
  if (opts.json && opts.only && fs.existsSync(opts.json)) {
    // A partial run (--only) replaces its kinds of runs in the saved results and keeps the others.
    const key = (r) => r.size + ":" + r.tabs + ":" + (r.separateContexts ? 1 : 0);
    const saved = JSON.parse(fs.readFileSync(opts.json, "utf8"));
    const fresh = new Set(result.runs.map(key));
    result.runs = [...saved.runs.filter((r) => !fresh.has(key(r))), ...result.runs]
      .sort((a, b) => a.size - b.size || a.tabs - b.tabs || (a.separateContexts ? 1 : 0) - (b.separateContexts ? 1 : 0));
    result.partialRuns = [...(saved.partialRuns || []), { date: result.date, only: opts.only, loadavg: result.machine.loadavg }];
    result.date = saved.date;
    result.machine = saved.machine;
  }
  if (opts.json) {
    fs.mkdirSync(path.dirname(path.resolve(opts.json)), { recursive: true });
    fs.writeFileSync(opts.json, JSON.stringify(result, null, 2) + "\n");
  }
  console.log(report.markdown([result]));
  if (failures.length) {
    console.log("\npage bench: " + failures.length + " failure(s):\n- " + failures.join("\n- "));
    process.exit(1);
  }
  if (opts.quick) console.log("\npage bench --quick: every page ended with the server's transcript (live and after a reload) and the reload opened at the last entry; timings are not checked");
}

main().catch((error) => {
  console.error("page bench: " + (error && error.stack ? error.stack : error));
  process.exit(1);
});
