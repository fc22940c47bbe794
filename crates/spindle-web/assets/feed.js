// A shared worker: one event stream per session for every tab of this origin. Browsers allow only
// about six HTTP/1.1 connections per host, and every open EventSource holds one, so a seventh tab
// on the same server would never load. The tabs (app.js) post {type: "watch", session} and
// {type: "unwatch"}; the worker posts each stream's frames to the tabs watching it, as
// {session, type: "reset" | "ops", data, id}, its connection state as {session, type: "state"},
// and {session, type: "joined", fresh, state} once a tab watches (`fresh`: the stream was opened
// for it, so its first `reset` is coming; otherwise the tab fetches a snapshot itself).
//
// The frames are posted as they came: the server already sends each batch's appends to one entry
// as one op, so the worker neither parses nor rewrites them (on two cores it competed with the
// tab for a core while a fast stream lasted).
// Loaded as a page script too: the tab's side of the feed (`SpindleFeed.create`).
"use strict";

(function () {
// In a page: the tab's side of the feed (app.js). `reset(data, id)` starts the view from a
// snapshot frame, `ops(data, id, after)` queues a frame (with `after`: only its batches after that
// counter), `broken()` when the worker failed (the view starts over).
function create({ api, banner, setConn, parseId, session, reset, ops, broken }) {
  let port = null; // the shared worker's port
  let source = null; // this tab's own EventSource, without a shared worker
  let base = null; // batch counter of the snapshot the view is built on (shared feed), null before
  let early = []; // frames that came before that snapshot: [data, id]
  try {
    if (self.SharedWorker) {
      const worker = new SharedWorker("/feed.js");
      port = worker.port;
      port.addEventListener("message", (event) => fromFeed(event.data || {}));
      worker.addEventListener("error", () => { port = null; broken(); });
      port.start();
      self.addEventListener("pagehide", () => { if (port) port.postMessage({ type: "unwatch" }); });
    }
  } catch (_) {
    port = null;
  }

  function connect() {
    if (port) {
      base = null;
      early = [];
      port.postMessage({ type: "watch", session: session() });
      return;
    }
    const es = new EventSource("/api/sessions/" + encodeURIComponent(session()) + "/events");
    source = es;
    es.addEventListener("open", () => setConn("live"));
    es.addEventListener("error", () => setConn(es.readyState === EventSource.CLOSED ? "offline" : "reconnecting"));
    es.addEventListener("reset", (event) => { if (source === es) reset(event.data, event.lastEventId); });
    es.addEventListener("ops", (event) => { if (source === es) ops(event.data, event.lastEventId); });
  }

  function close() {
    if (source) source.close();
    source = null;
  }

  function fromFeed(message) {
    if (String(message.session) !== String(session())) return;
    if (message.type === "state") setConn(message.state);
    else if (message.type === "joined") {
      setConn(message.state === "connecting" ? "reconnecting" : message.state);
      // A stream other tabs opened already: this tab starts from a snapshot of its own.
      if (!message.fresh) fetchSnapshot();
    } else if (message.type === "reset") {
      const cut = parseId(message.id);
      base = cut ? cut.counter : 0;
      early = [];
      reset(message.data, message.id);
    } else if (message.type === "ops") {
      if (base === null) early.push([message.data, message.id]);
      else ops(message.data, message.id, base);
    }
  }

  function fetchSnapshot() {
    const asked = session();
    api("/api/sessions/" + encodeURIComponent(asked) + "/snapshot").then((snapshot) => {
      // A reset that came meanwhile is as good.
      if (asked !== session() || base !== null) return;
      const cut = parseId(snapshot.event);
      base = cut ? cut.counter : 0;
      reset(JSON.stringify({ ops: snapshot.ops || [] }), snapshot.event);
      const waiting = early;
      early = [];
      for (const [data, id] of waiting) ops(data, id, base);
    }).catch((e) => {
      if (asked === session()) { banner("Cannot load the session: " + e.message, "error"); setTimeout(() => { if (asked === session() && base === null) fetchSnapshot(); }, 1000); }
    });
  }

  return Object.freeze({ connect, close });
}

if (typeof SharedWorkerGlobalScope === "undefined" || !(self instanceof SharedWorkerGlobalScope)) {
  self.SpindleFeed = Object.freeze({ create });
  return;
}


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
    source.addEventListener(type, (event) => post(stream, { session, type, data: event.data, id: event.lastEventId }));
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
