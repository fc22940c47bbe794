// The server side of the page benchmark: `spindle serve` with the reference agent on a loopback
// port and a temporary database, its HTTP API, and a plain SSE reader of a session's events
// (the "server time" of a turn is when this reader sees the turn end).
"use strict";

const { spawn } = require("node:child_process");
const http = require("node:http");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** Wall-clock milliseconds, sub-millisecond resolution, comparable with a page's
 *  `performance.timeOrigin + performance.now()` on the same machine. */
const epochNow = () => performance.timeOrigin + performance.now();

/** Starts `spindle serve` in a fresh temporary directory (its cwd and database); resolves to
 *  { url, child, dir, stderr(), stop() } once it prints its address. */
function startServer(spindle) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "spindle-page-bench-"));
  return new Promise((resolve, reject) => {
    const child = spawn(
      spindle,
      // Protocol 2: the bench waits for the reference agent's greeting, which it sends in v2.
      ["serve", "--no-checkpoints", "--protocol", "2", "--bind", "127.0.0.1:0", "--db", path.join(dir, "spindle.db"), "--", spindle, "agent"],
      { cwd: dir, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    let err = "";
    let started = false;
    const timer = setTimeout(() => reject(new Error("spindle serve did not start in 30 s: " + out + err)), 30000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m && !started) {
        started = true;
        clearTimeout(timer);
        const stop = () => new Promise((done) => {
          if (child.exitCode !== null || child.signalCode !== null) { cleanup(); done(); return; }
          // SIGTERM, then SIGKILL if it has not exited in 5 s (a stuck server must not hang the bench).
          const force = setTimeout(() => child.kill("SIGKILL"), 5000);
          child.once("exit", () => { clearTimeout(force); cleanup(); done(); });
          child.kill("SIGTERM");
        });
        const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
        resolve({ url: m[1].replace(/\/$/, ""), child, dir, stderr: () => err, stop });
      }
    });
    child.stderr.on("data", (d) => { err += d; });
    child.on("exit", (code, signal) => {
      if (!started) {
        clearTimeout(timer);
        reject(new Error("spindle serve exited (" + (code ?? signal) + "): " + err));
      }
    });
  });
}

/** The server process's resident memory, from /proc (kB): { rssKb, peakKb }. */
function serverMemory(child) {
  try {
    const status = fs.readFileSync("/proc/" + child.pid + "/status", "utf8");
    const kb = (key) => Number((status.match(new RegExp("^" + key + ":\\s+(\\d+) kB", "m")) || [])[1]) || null;
    return { rssKb: kb("VmRSS"), peakKb: kb("VmHWM") };
  } catch (_) {
    return { rssKb: null, peakKb: null };
  }
}

async function api(base, route, body) {
  const response = await fetch(base + route, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(route + ": HTTP " + response.status + " " + text.slice(0, 300));
  return text ? JSON.parse(text) : null;
}

const createSession = async (base) => (await api(base, "/api/sessions", {})).id;
const postPrompt = (base, id, text) => api(base, "/api/sessions/" + id + "/prompt", { text });
const transcript = (base, id) => api(base, "/api/sessions/" + id + "/transcript");

/** The entries as the page's `SpindleView.entries()` lists them. */
const expectedEntries = (doc) => doc.entries.map((e) => ({ id: e.id, kind: e.kind, text: e.text || "" }));

/** Kinds the page shows outside the transcript pane (thoughts and plan panes). */
const SIDE_PANE_KINDS = new Set(["agent_thought", "plan", "plan_text"]);

/** A plain SSE reader of /api/sessions/{id}/events (node:http): parses every frame's JSON and watches the
 *  set_state ops. `turnEnd(afterEpoch)` resolves with { at, stats }: the epoch ms at which the
 *  first set_state op saying idle with a stop reason arrived after `afterEpoch`, and the frame,
 *  byte and op counts read so far. */
function openEvents(base, id) {
  const stats = { frames: 0, bytes: 0, ops: 0 };
  const states = []; // [epochMs, state]
  const waiters = [];
  let failure = null;
  let connectedResolve;
  const connected = new Promise((r) => { connectedResolve = r; });

  const settle = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      const hit = states.find(([at, st]) => at >= w.after && st.status === "idle" && st.stopReason);
      if (hit) { waiters.splice(i, 1); w.resolve({ at: hit[0], stats: { ...stats } }); } else if (failure) { waiters.splice(i, 1); w.reject(failure); }
    }
  };
  const onFrame = (event, data) => {
    if (event !== "ops" && event !== "reset") return;
    const at = epochNow();
    stats.frames += 1;
    let batch;
    try { batch = JSON.parse(data); } catch (e) { failure = new Error("SSE frame is not JSON: " + e.message); settle(); return; }
    for (const op of batch.ops || []) {
      stats.ops += 1;
      if (op.op === "set_state" && op.state) states.push([at, op.state]);
    }
    settle();
  };

  // node:http, not fetch: the reader should cost as little as a plain client can.
  const request = http.get(base + "/api/sessions/" + id + "/events", { headers: { Accept: "text/event-stream" } }, (response) => {
    if (response.statusCode !== 200) {
      failure = new Error("events: HTTP " + response.statusCode);
      response.resume();
      connectedResolve();
      settle();
      return;
    }
    connectedResolve();
    response.setEncoding("utf8");
    let buffer = "";
    let scanned = 0; // where to look for the next blank line (big frames come in many chunks)
    response.on("data", (text) => {
      stats.bytes += Buffer.byteLength(text);
      buffer += text;
      let end;
      while ((end = buffer.indexOf("\n\n", scanned)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        scanned = 0;
        let event = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onFrame(event, data.join("\n"));
      }
      scanned = Math.max(0, buffer.length - 1);
    });
    response.on("error", (e) => { if (!closed) { failure = e; settle(); } });
  });
  let closed = false;
  request.on("error", (e) => {
    if (!closed) { failure = e; settle(); }
    connectedResolve();
  });

  return {
    connected,
    stats,
    turnEnd: (after) => new Promise((resolve, reject) => { waiters.push({ after, resolve, reject }); settle(); }),
    close: () => { closed = true; request.destroy(); },
  };
}

module.exports = {
  epochNow, startServer, serverMemory, createSession, postPrompt, transcript, expectedEntries,
  SIDE_PANE_KINDS, openEvents,
};
