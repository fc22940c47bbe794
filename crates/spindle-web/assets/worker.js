// A shared worker: one event stream per session for every tab of this origin. Browsers allow only
// about six HTTP/1.1 connections per host, and every open EventSource holds one, so a seventh tab
// on the same server would never load. The tabs (feed.js) post {type: "watch", session} and
// {type: "unwatch"}; the worker posts each stream's frames to the tabs watching it, as
// {session, type: "reset" | "ops", data, id}, its connection state as {session, type: "state"},
// and {session, type: "joined", fresh, state} once a tab watches (`fresh`: the stream was opened
// for it, so its first `reset` is coming; otherwise the tab fetches a snapshot itself).
//
// The frames are posted as they came: the server already sends each batch's appends to one entry
// as one op, so the worker neither parses nor rewrites them (on two cores it competed with the
// tab for a core while a fast stream lasted).
//
// A classic worker script (see feed.js, the tabs' side, for why not a module).
"use strict";

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
