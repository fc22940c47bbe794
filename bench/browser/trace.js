// Where a streaming turn's main-thread time goes: one tab, `/stream N mixed`, a CDP trace
// (devtools.timeline, v8, blink.user_timing) from the prompt to the done frame, summarised as
// self time per trace event name, per message event / animation frame task, and the longest tasks
// with what they held. A profiling aid, not part of the benchmark's tables.
//
//   node bench/browser/trace.js [--assets DIR] [--size N] [--json FILE] PATH/TO/spindle
//   node bench/browser/trace.js --no-trace ...   # no trace: frame gaps and the page's own per-frame
//                                                # timings (SpindleView.frameLog()) instead
"use strict";

const fs = require("node:fs");
const { chromium } = require("playwright-core");
const srv = require("./server.js");
const probe = require("./probe.js");

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args.splice(i, 2)[1] : dflt; };
const assets = opt("--assets", null);
const size = Number(opt("--size", "20000"));
const jsonOut = opt("--json", null);
const noTrace = args.includes("--no-trace") ? (args.splice(args.indexOf("--no-trace"), 1), true) : false;
const spindle = args[0];
if (!spindle) { console.error("usage: trace.js [--assets DIR] [--size N] [--json FILE] PATH/TO/spindle"); process.exit(2); }

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function serveAssets(context, dir) {
  const path = require("node:path");
  await context.route((url) => url.pathname === "/" || /^\/[\w.-]+\.(js|css)$/.test(url.pathname), async (route) => {
    const url = new URL(route.request().url());
    const name = url.pathname === "/" ? "index.html" : url.pathname.slice(1);
    const file = path.join(dir, name);
    if (url.search || !fs.existsSync(file)) { await route.continue(); return; }
    const body = fs.readFileSync(file, "utf8");
    if (name === "index.html") { const response = await route.fetch(); await route.fulfill({ response, body }); return; }
    await route.fulfill({ status: 200, contentType: name.endsWith(".css") ? "text/css" : "text/javascript", body });
  });
}

// Self time per event name on one thread (complete events nested by time).
function selfTimes(events) {
  const sorted = events.filter((e) => e.ph === "X" && e.dur !== undefined).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const self = new Map();
  const stack = [];
  const add = (name, us) => self.set(name, (self.get(name) || 0) + us);
  for (const e of sorted) {
    while (stack.length && stack[stack.length - 1].end <= e.ts) stack.pop();
    const parent = stack[stack.length - 1];
    if (parent) add(parent.name, -Math.min(e.dur, parent.end - e.ts));
    add(e.name, e.dur);
    stack.push({ name: e.name, end: e.ts + e.dur });
  }
  return self;
}

function summarise(trace, fromUs, toUs) {
  const threads = new Map();
  for (const e of trace) if (e.ph === "M" && e.name === "thread_name") threads.set(e.pid + ":" + e.tid, e.args.name);
  const byThread = new Map();
  for (const e of trace) {
    if (e.ts < fromUs || e.ts > toUs) continue;
    const key = e.pid + ":" + e.tid;
    if (!byThread.has(key)) byThread.set(key, []);
    byThread.get(key).push(e);
  }
  const out = { threads: [] };
  for (const [key, events] of byThread) {
    const name = threads.get(key) || key;
    if (!/CrRendererMain|Worker/.test(name)) continue;
    const tasks = events.filter((e) => e.ph === "X" && (e.name === "ThreadControllerImpl::RunTask" || e.name === "RunTask"));
    const busy = tasks.reduce((s, e) => s + e.dur, 0);
    const self = [...selfTimes(events)].sort((a, b) => b[1] - a[1]).slice(0, 20)
      .map(([n, us]) => n + " " + (us / 1000).toFixed(1)).join(", ");
    const long = tasks.filter((t, i, all) => t.dur > 30000 && !all.slice(0, i).some((o) => o.ts === t.ts)).map((t) => {
      const inside = events.filter((e) => e.ts >= t.ts && e.ts < t.ts + t.dur && e !== t);
      const s = [...selfTimes(inside)].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([n, us]) => n + " " + (us / 1000).toFixed(1));
      return { at: +((t.ts - fromUs) / 1000).toFixed(0), ms: +(t.dur / 1000).toFixed(1), top: s };
    });
    // Tasks by kind: an animation frame's task, a message/other script task, the rest.
    const kinds = new Map();
    let ti = 0;
    const inner = events.filter((e) => e.ph === "X" && (e.name === "FireAnimationFrame" || e.name === "FunctionCall" || e.name === "EventDispatch" || /GC_SCAVENGER_SCAVENGE$|MAJOR|MarkCompact/.test(e.name) || e.name === "Commit" || e.name === "Paint")).sort((a, b) => a.ts - b.ts);
    for (const t of tasks.sort((a, b) => a.ts - b.ts)) {
      let kind = "other";
      while (ti < inner.length && inner[ti].ts < t.ts) ti++;
      const names = new Set();
      for (let j = ti; j < inner.length && inner[j].ts < t.ts + t.dur; j++) names.add(inner[j].name);
      if (names.has("FireAnimationFrame")) kind = "animation frame";
      else if (names.has("FunctionCall") || names.has("EventDispatch")) kind = "script (message, timer)";
      else if (names.has("Commit") || names.has("Paint")) kind = "paint/commit";
      const k = kinds.get(kind) || { n: 0, ms: 0, max: 0 };
      k.n++; k.ms += t.dur / 1000; k.max = Math.max(k.max, t.dur / 1000);
      kinds.set(kind, k);
    }
    const frames = events.filter((e) => e.ph === "X" && e.name === "FireAnimationFrame").map((e) => +(e.dur / 1000).toFixed(1));
    const gcs = events.filter((e) => e.ph === "X" && /GC|Scavenge|MarkCompact/i.test(e.name) && !/Task$/.test(e.name)).reduce((s, e) => s + e.dur, 0);
    const messages = events.filter((e) => e.ph === "X" && e.name === "EventDispatch" && e.args && e.args.data && e.args.data.type === "message");
    out.threads.push({
      thread: name, busyMs: +(busy / 1000).toFixed(1), tasks: tasks.length, gcMs: +(gcs / 1000).toFixed(1),
      messageEvents: messages.length, messageMs: +(messages.reduce((s, e) => s + e.dur, 0) / 1000).toFixed(1),
      animationFrames: frames.length, animationFrameMs: +frames.reduce((s, d) => s + d, 0).toFixed(1),
      taskKinds: Object.fromEntries([...kinds].map(([k, v]) => [k, v.n + " tasks, " + v.ms.toFixed(1) + " ms, max " + v.max.toFixed(1)])),
      longestFrames: [...frames].sort((a, b) => b - a).slice(0, 8), self, long,
    });
  }
  return out;
}

// Self time per function (name file:line) of a CPU profile, the top 30.
function profileSelf(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const n = byId.get(profile.samples[i]);
    const f = n.callFrame;
    const key = (f.functionName || "(anon)") + " " + f.url.replace(/^.*\//, "") + ":" + (f.lineNumber + 1);
    self.set(key, (self.get(key) || 0) + (dt[i + 1] || 0));
  }
  return [...self].sort((a, b) => b[1] - a[1]).slice(0, 30).map(([k, us]) => k + " " + (us / 1000).toFixed(1)).join(", ");
}

async function main() {
  const server = await srv.startServer(spindle);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    if (assets) await serveAssets(context, assets);
    const id = await srv.createSession(server.url);
    const page = await context.newPage();
    const cdp = await probe.instrument(context, page);
    await page.goto(server.url + "/#session=" + id, { waitUntil: "domcontentloaded" });
    await page.waitForSelector("#prompt-form:not([hidden])");
    await probe.waitFor("the greeting", async () => ((await probe.viewEntries(page)).length > 0 ? true : null), 30000);
    await sleep(800);
    if (noTrace) await page.evaluate(() => window.SpindleView.recordFrames());
    const browserCdp = await browser.newBrowserCDPSession();
    const chunks = [];
    browserCdp.on("Tracing.dataCollected", (e) => chunks.push(...e.value));
    const finished = new Promise((r) => browserCdp.once("Tracing.tracingComplete", r));
    if (!noTrace) await browserCdp.send("Tracing.start", {
      traceConfig: { includedCategories: ["devtools.timeline", "v8", "v8.execute", "blink.user_timing", "toplevel", "disabled-by-default-devtools.timeline"] },
    });
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
    await cdp.send("Profiler.start");
    await sleep(300);
    const origin = await probe.timeOrigin(page);
    await probe.arm(page);
    await page.evaluate(() => performance.mark("trace-from"));
    const t0 = srv.epochNow();
    await srv.postPrompt(server.url, id, "/stream " + size + " mixed");
    const done = await probe.waitFor("done", () => probe.doneAt(page), 120000);
    const w = await probe.window_(page, t0 - origin, done);
    if (noTrace) {
      const st = { frameLog: await page.evaluate(() => window.SpindleView.frameLog()) };
      console.log("stats", JSON.stringify(await page.evaluate(() => { const s = window.SpindleView.stats(); delete s.slowFrames; return s; })));
      const frames = await page.evaluate(() => window.__spindleBench.frames);
      const from = t0 - origin;
      const fr = frames.filter((t) => t >= from && t <= done);
      const gaps = fr.map((t, i) => [Math.round(t - from), Math.round(t - (i ? fr[i - 1] : from))]).filter(([, g]) => g > 20);
      console.log("fps", w.fps.toFixed(1), "longest task", w.longestTaskMs, "page ms", Math.round(origin + done - t0), "frames", fr.length);
      console.log("gaps over 20 ms [at, gap]:", JSON.stringify(gaps));
      const log = (st.frameLog || []).filter(([t]) => t >= from - 5 && t <= done).map(([t, ...r]) => [Math.round(t - from), ...r]);
      console.log("page frames [at, ops, apply, flush, render]:", JSON.stringify(log));
      await browser.close(); await server.stop(); process.exit(0);
    }
    const { profile } = await cdp.send("Profiler.stop");
    await sleep(300);
    await browserCdp.send("Tracing.end");
    await finished;
    // Trace timestamps are monotonic µs: the window starts at the page's mark before the POST.
    const mark = chunks.find((e) => e.name === "trace-from");
    const pageMs = origin + done - t0;
    const summary = summarise(chunks, mark.ts, mark.ts + pageMs * 1000);
    summary.pageMs = +pageMs.toFixed(0);
    summary.fps = +w.fps.toFixed(1);
    summary.longestTaskMs = w.longestTaskMs;
    summary.functions = profileSelf(profile);
    const text = JSON.stringify(summary, null, 1).replace(/\n\s+(?=[^\s{"])/g, " ").replace(/\n\s+\]/g, " ]");
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(chunks));
    console.log(text);
    void cdp;
  } finally {
    await browser.close();
    await server.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
