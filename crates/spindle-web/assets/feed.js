// The tab's side of the session's event stream. Where there is a SharedWorker, the stream comes
// through the shared worker (worker.js): one stream per session for all the tabs of this origin.
// Elsewhere, or when the worker fails, the tab opens an EventSource of its own.
//
// The worker stays a classic script (not `{type: "module"}`): it imports nothing, and classic
// shared workers run in every browser that has shared workers, module ones only in newer ones.

import { api, banner } from "./dom.js";

// A stream event id "GENERATION-COUNTER" (the server generation and the batch counter), or null.
export function parseId(id) {
  const m = /^(\d+)-(\d+)$/.exec(String(id || ""));
  return m ? { generation: m[1], counter: Number(m[2]) } : null;
}

// `reset(data, id)` starts the view from a snapshot frame, `ops(data, id, after)` queues a frame
// (with `after`: only its batches after that counter), `broken()` when the worker failed (the
// view starts over), `ended()` when the server ended the stream for good (the session may be
// deleted: the list is asked for again).
// `ended()` when the server ended the stream for good (the session may have been deleted).
export function createFeed({ setConn, session, reset, ops, broken, ended }) {
  let port = null; // the shared worker's port
  let source = null; // this tab's own EventSource, without a shared worker
  let base = null; // batch counter of the snapshot the view is built on (shared feed), null before
  let early = []; // frames that came before that snapshot: [data, id]
  try {
    if (self.SharedWorker) {
      const worker = new SharedWorker("/worker.js");
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
    es.addEventListener("error", () => {
      setConn(es.readyState === EventSource.CLOSED ? "offline" : "reconnecting");
      if (es.readyState === EventSource.CLOSED && source === es) ended();
    });
    es.addEventListener("reset", (event) => { if (source === es) reset(event.data, event.lastEventId); });
    es.addEventListener("ops", (event) => { if (source === es) ops(event.data, event.lastEventId); });
  }

  // Stops this tab's stream; with `leave` the shared worker's too (no session is shown).
  function close(leave) {
    if (source) source.close();
    source = null;
    if (leave && port) port.postMessage({ type: "unwatch" });
  }

  function fromFeed(message) {
    if (String(message.session) !== String(session())) return;
    if (message.type === "state") {
      setConn(message.state);
      if (message.state === "offline") ended();
    }
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
      banner(null, null, "load");
      reset(JSON.stringify({ ops: snapshot.ops || [] }), snapshot.event);
      const waiting = early;
      early = [];
      for (const [data, id] of waiting) ops(data, id, base);
    }).catch((e) => {
      if (asked === session()) { banner("Cannot load the session: " + e.message, "error", "load"); setTimeout(() => { if (asked === session() && base === null) fetchSnapshot(); }, 1000); }
    });
  }

  return Object.freeze({ connect, close });
}

