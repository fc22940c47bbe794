// A shared worker: one event stream per session for every tab of this origin. Browsers allow only
// about six HTTP/1.1 connections per host, and every open EventSource holds one, so a seventh tab
// on the same server would never load. The tabs (app.js) post {type: "watch", session} and
// {type: "unwatch"}; the worker posts each stream's frames to the tabs watching it, as
// {session, type: "reset" | "ops", data, id}, its connection state as {session, type: "state"},
// and {session, type: "joined", fresh, state} once a tab watches (`fresh`: the stream was opened
// for it, so its first `reset` is coming; otherwise the tab fetches a snapshot itself).
//
// The worker also coalesces each `ops` frame before posting it: consecutive `append_text` ops of
// one batch to the same entry become one op (a fast stream's batch is mostly chunks of one
// message: about three ops in four go). The tab then parses a smaller frame and applies fewer
// ops; each batch's op count (`batches`) is rewritten so the tab still knows each op's batch.
// Loaded as a page script too (app.js coalesces the frames of its own EventSource the same way).
"use strict";

(function () {
// One frame's JSON text coalesced: appends merged within each batch only (the tab skips ops of
// batches a record's content already reflects, so an op never spans two batches). Returns the
// text unchanged when nothing merges or it is not a frame of ops.
function coalesceOps(text) {
  let frame;
  try { frame = JSON.parse(text); } catch (_) { return text; }
  if (!frame || !Array.isArray(frame.ops)) return text;
  const ops = frame.ops;
  const marks = Array.isArray(frame.batches) ? frame.batches : null;
  const spans = marks || [[null, ops.length]];
  const out = [];
  const outMarks = [];
  let at = 0;
  let merged = 0;
  for (const mark of spans) {
    const end = Math.min(ops.length, at + Math.max(0, Number(mark[1]) || 0));
    const first = out.length;
    let run = null; // texts of the append run that ends `out`, or null
    let runOp = null;
    for (let k = at; k < end; k++) {
      const op = ops[k];
      if (run !== null && op && op.op === "append_text" && op.id === runOp.id && typeof op.text === "string") {
        run.push(op.text);
        merged += 1;
        continue;
      }
      if (run !== null && run.length > 1) runOp.text = run.join("");
      run = null;
      if (op && op.op === "append_text" && typeof op.text === "string") { run = [op.text]; runOp = op; }
      out.push(op);
    }
    if (run !== null && run.length > 1) runOp.text = run.join("");
    outMarks.push([mark[0], out.length - first]);
    at = end;
  }
  if (merged === 0) return text;
  for (; at < ops.length; at++) out.push(ops[at]);
  frame.ops = out;
  if (marks) frame.batches = outMarks;
  return JSON.stringify(frame);
}
self.SpindleCoalesce = coalesceOps;

// In a page (not the worker) only the function above is wanted.
if (typeof SharedWorkerGlobalScope === "undefined" || !(self instanceof SharedWorkerGlobalScope)) return;


const streams = new Map(); // session -> { source, ports: Set<MessagePort>, state }
const watching = new Map(); // port -> session

function post(stream, message) {
  for (const port of stream.ports) {
    try { port.postMessage(message); } catch (_) { stream.ports.delete(port); }
  }
}

function unwatch(port) {
  const session = watching.get(port);
  if (session === undefined) return;
  watching.delete(port);
  const stream = streams.get(session);
  if (!stream) return;
  stream.ports.delete(port);
  if (stream.ports.size === 0) {
    stream.source.close();
    streams.delete(session);
  }
}

function open(session) {
  const source = new EventSource("/api/sessions/" + encodeURIComponent(session) + "/events");
  const stream = { source, ports: new Set(), state: "connecting" };
  const state = (value) => {
    stream.state = value;
    post(stream, { session, type: "state", state: value });
  };
  source.addEventListener("open", () => state("live"));
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) {
      // Given up (the session is gone, or the server refused): the next watch opens anew.
      if (streams.get(session) === stream) streams.delete(session);
      state("offline");
    } else {
      state("reconnecting");
    }
  });
  for (const type of ["reset", "ops"]) {
    source.addEventListener(type, (event) => post(stream, { session, type, data: type === "ops" ? coalesceOps(event.data) : event.data, id: event.lastEventId }));
  }
  streams.set(session, stream);
  return stream;
}

function watch(port, session) {
  unwatch(port);
  watching.set(port, session);
  const known = streams.get(session);
  const stream = known || open(session);
  stream.ports.add(port);
  port.postMessage({ session, type: "joined", fresh: !known, state: stream.state });
}

self.addEventListener("connect", (event) => {
  const port = event.ports[0];
  port.addEventListener("message", (message) => {
    const data = message.data;
    if (!data || typeof data !== "object") return;
    if (data.type === "watch" && data.session != null) watch(port, String(data.session));
    else if (data.type === "unwatch") unwatch(port);
  });
  port.start();
});
})();
