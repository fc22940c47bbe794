// The page is a view: it applies the render ops the server's engine sends and holds no protocol
// logic. Every op touches only what it names: append_text/truncate_text edit one text buffer, and
// markdown is re-rendered at most once per animation frame, block by block (see markdown.js).
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const api = (path, body) =>
    fetch(path, {
      method: body === undefined ? "GET" : "POST",
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    }).then(async (response) => {
      const text = await response.text();
      let data = null;
      try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
      if (!response.ok) throw new Error((data && data.error) || response.statusText);
      return data;
    });

  let current = null; // selected session id
  let source = null; // EventSource of the selected session
  const entries = new Map(); // entry id -> view record
  let order = []; // entry ids in transcript order
  const dirty = new Set(); // entry ids whose markdown needs a re-render
  let frameRequested = false;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function banner(text, level) {
    const b = $("banner");
    if (!text) { b.hidden = true; b.textContent = ""; return; }
    b.hidden = false;
    b.dataset.level = level || "info";
    b.textContent = text;
  }

  // ---- sessions ----------------------------------------------------------------------------

  async function refreshSessions() {
    let list;
    try { list = await api("/api/sessions"); } catch (e) { banner("Cannot list sessions: " + e.message, "error"); return; }
    const ul = $("session-list");
    ul.replaceChildren();
    for (const s of list.sessions) {
      const li = el("li");
      const b = el("button", null, s.title || "Session " + s.id);
      b.type = "button";
      b.dataset.session = String(s.id);
      if (String(s.id) === String(current)) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => select(s.id));
      li.appendChild(b);
      ul.appendChild(li);
    }
    return list.sessions;
  }

  function select(id) {
    if (source) { source.close(); source = null; }
    current = String(id);
    history.replaceState(null, "", "#session=" + encodeURIComponent(current));
    clearView();
    $("empty").hidden = true;
    $("prompt-form").hidden = false;
    for (const b of document.querySelectorAll("#session-list button")) {
      if (b.dataset.session === current) b.setAttribute("aria-current", "true");
      else b.removeAttribute("aria-current");
    }
    connect();
  }

  function connect() {
    const es = new EventSource("/api/sessions/" + encodeURIComponent(current) + "/events");
    source = es;
    const setConn = (state) => { const c = $("connection"); c.dataset.state = state; c.textContent = state; };
    es.addEventListener("open", () => setConn("live"));
    es.addEventListener("error", () => setConn(es.readyState === EventSource.CLOSED ? "offline" : "reconnecting"));
    es.addEventListener("reset", (event) => {
      if (source !== es) return;
      clearView();
      applyBatch(event.data, event.lastEventId);
    });
    es.addEventListener("ops", (event) => {
      if (source !== es) return;
      applyBatch(event.data, event.lastEventId);
    });
  }

  function applyBatch(data, id) {
    let batch;
    try { batch = JSON.parse(data); } catch (_) { return; }
    for (const op of batch.ops || []) {
      const handler = handlers[op.op];
      if (handler) {
        try { handler(op); } catch (e) { console.warn("op failed", op.op, e); }
      }
    }
    document.body.dataset.lastEvent = id || "";
  }

  // ---- the view ----------------------------------------------------------------------------

  function clearView() {
    entries.clear();
    order = [];
    dirty.clear();
    $("transcript").replaceChildren();
    $("thoughts").replaceChildren();
    $("plan").replaceChildren();
    $("commands").replaceChildren();
    setState({ state: "idle" });
    setUsage({});
    banner(null);
  }

  // Which pane an entry lives in: thoughts have their own, everything else is the transcript.
  const containerFor = (kind) => (kind === "thought" ? $("thoughts") : $("transcript"));

  function entryKind(entry) {
    const k = String(entry.kind || entry.type || "");
    if (k.includes("thought")) return "thought";
    if (k.startsWith("user")) return "user";
    if (k.startsWith("agent")) return "agent";
    if (k.startsWith("tool")) return "tool";
    if (k.includes("compaction")) return "compaction";
    if (k.includes("boundary") || k.includes("clear")) return "boundary";
    if (k.includes("notice")) return "notice";
    if (k.includes("permission")) return "permission";
    return "other";
  }

  function entryText(entry) {
    if (typeof entry.text === "string") return entry.text;
    const blocks = entry.content || entry.blocks;
    if (Array.isArray(blocks)) {
      return blocks.map((b) => (b && typeof b.text === "string" ? b.text : b && b.type ? "[" + b.type + "]" : "")).join("");
    }
    return "";
  }

  function buildEntry(entry) {
    const kind = entryKind(entry);
    const rec = { id: String(entry.id), kind, text: "", node: null, body: null, cache: [] };
    switch (kind) {
      case "thought": {
        rec.node = el("div", "thought");
        rec.body = document.createTextNode("");
        rec.node.appendChild(rec.body);
        break;
      }
      case "user":
      case "agent": {
        rec.node = el("article", "entry " + kind);
        rec.node.appendChild(el("div", "who", kind === "user" ? "You" : "Agent"));
        rec.body = el("div", "md");
        rec.node.appendChild(rec.body);
        break;
      }
      case "boundary":
      case "compaction": {
        rec.node = el("div", "divider");
        rec.body = el("span");
        rec.node.appendChild(rec.body);
        break;
      }
      default: {
        rec.node = el("article", "entry " + kind);
        rec.body = el("div");
        rec.node.appendChild(rec.body);
      }
    }
    rec.node.dataset.entryId = rec.id;
    fillEntry(rec, entry);
    return rec;
  }

  function fillEntry(rec, entry) {
    switch (rec.kind) {
      case "thought":
        rec.text = entryText(entry);
        rec.body.data = rec.text;
        break;
      case "user":
      case "agent":
        rec.text = entryText(entry);
        markDirty(rec);
        break;
      case "boundary":
        rec.body.textContent = entry.label || entry.title || "context cleared";
        break;
      case "compaction": {
        const status = entry.status || "in_progress";
        rec.node.dataset.status = status;
        rec.body.textContent = "compaction: " + status + (entry.summary ? " - " + entryText({ content: entry.summary }) : "");
        break;
      }
      case "tool":
        fillTool(rec, entry);
        break;
      case "notice":
        rec.body.replaceChildren(el("strong", null, entry.title || "notice"), el("span", null, entry.description ? " " + entry.description : ""));
        rec.node.dataset.severity = entry.severity || "info";
        break;
      default:
        rec.body.textContent = entry.title || entryText(entry) || rec.kind;
    }
  }

  function fillTool(rec, entry) {
    const status = entry.status || "pending";
    rec.node.dataset.status = status;
    const head = el("div", "tool-head");
    head.appendChild(el("span", "title", entry.title || entry.name || "tool call"));
    head.appendChild(el("span", "status", status));
    const parts = [head];
    for (const item of entry.content || []) {
      if (!item) continue;
      if (item.type === "diff") {
        parts.push(el("pre", "diff", (item.path ? item.path + "\n" : "") + (item.newText || item.text || "")));
      } else {
        const inner = item.content || item;
        parts.push(el("pre", "tool-output", typeof inner.text === "string" ? inner.text : "[" + (inner.type || item.type) + "]"));
      }
    }
    rec.body.replaceChildren(...parts);
  }

  function markDirty(rec) {
    if (rec.kind !== "agent" && rec.kind !== "user") return;
    dirty.add(rec.id);
    if (!frameRequested) {
      frameRequested = true;
      requestAnimationFrame(flushMarkdown);
    }
  }

  function flushMarkdown() {
    frameRequested = false;
    for (const id of dirty) {
      const rec = entries.get(id);
      if (rec) window.SpindleMarkdown.render(rec.body, rec.text, rec.cache);
    }
    dirty.clear();
  }

  function insertEntry(index, entry) {
    const rec = buildEntry(entry);
    if (entries.has(rec.id)) removeEntry(rec.id);
    entries.set(rec.id, rec);
    const at = Math.max(0, Math.min(order.length, Number.isInteger(index) ? index : order.length));
    order.splice(at, 0, rec.id);
    const container = containerFor(rec.kind);
    let before = null;
    for (let n = at + 1; n < order.length; n++) {
      const next = entries.get(order[n]);
      if (next && next.node.parentNode === container) { before = next.node; break; }
    }
    container.insertBefore(rec.node, before);
    scrollToEnd();
  }

  function removeEntry(id) {
    const rec = entries.get(String(id));
    if (!rec) return;
    rec.node.remove();
    entries.delete(rec.id);
    order = order.filter((x) => x !== rec.id);
    dirty.delete(rec.id);
  }

  function scrollToEnd() {
    const t = $("transcript");
    t.scrollTop = t.scrollHeight;
  }

  function setState(op) {
    const state = String(op.state || "idle");
    const s = $("state");
    s.dataset.state = state;
    s.textContent = state === "requires_action" ? "requires action" : state;
    const reason = op.stop_reason || op.stopReason;
    $("stop-reason").textContent = reason ? "stop reason: " + reason : "";
  }

  function setUsage(op) {
    const used = Number(op.used), size = Number(op.size);
    const meter = $("usage-meter");
    if (Number.isFinite(used) && Number.isFinite(size) && size > 0) {
      meter.max = size;
      meter.value = Math.min(used, size);
      $("usage-text").textContent = "context: " + used + " / " + size + " (" + Math.round((100 * used) / size) + "%)";
    } else {
      meter.max = 1;
      meter.value = 0;
      $("usage-text").textContent = "context: n/a";
    }
  }

  function setPlan(op) {
    const ol = $("plan");
    ol.replaceChildren();
    for (const item of op.entries || []) {
      const li = el("li", null, item.content || "");
      li.dataset.status = item.status || "pending";
      ol.appendChild(li);
    }
  }

  function showPermission(op) {
    const key = String(op.key);
    const card = el("article", "entry permission");
    card.dataset.permission = key;
    card.appendChild(el("div", "who", "Permission requested"));
    card.appendChild(el("div", null, op.title || "The agent asks for permission"));
    const buttons = el("div", "choices");
    for (const option of op.options || []) {
      const b = el("button", null, option.name || option.optionId);
      b.type = "button";
      b.dataset.option = option.optionId;
      b.addEventListener("click", () => answerPermission(key, option.optionId));
      buttons.appendChild(b);
    }
    card.appendChild(buttons);
    const old = document.querySelector('[data-permission="' + CSS.escape(key) + '"]');
    if (old) old.replaceWith(card);
    else $("transcript").appendChild(card);
    scrollToEnd();
  }

  function resolvePermission(op) {
    const card = document.querySelector('[data-permission="' + CSS.escape(String(op.key)) + '"]');
    if (!card) return;
    card.querySelector(".choices")?.remove();
    card.appendChild(el("div", "outcome", "answered: " + (op.outcome || "done")));
  }

  async function answerPermission(key, optionId) {
    try {
      await api("/api/sessions/" + encodeURIComponent(current) + "/permission", { key, optionId });
    } catch (e) {
      banner("Permission answer failed: " + e.message, "error");
    }
  }

  const handlers = {
    insert_entry: (op) => insertEntry(op.index, op.entry),
    update_entry: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) { insertEntry(order.length, op.entry); return; }
      const kind = entryKind(op.entry);
      if (kind !== rec.kind) {
        const at = order.indexOf(rec.id);
        removeEntry(rec.id);
        insertEntry(at, op.entry);
        return;
      }
      fillEntry(rec, op.entry);
    },
    remove_entry: (op) => removeEntry(op.id),
    append_text: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) return;
      rec.text += op.text;
      if (rec.kind === "thought") rec.body.appendData(op.text);
      else markDirty(rec);
    },
    truncate_text: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) return;
      // `len` counts UTF-16 code units, the unit of JavaScript strings.
      const len = Math.max(0, Math.min(rec.text.length, Number(op.len) || 0));
      if (len === rec.text.length) return;
      rec.text = rec.text.slice(0, len);
      if (rec.kind === "thought") rec.body.deleteData(len, rec.body.length - len);
      else markDirty(rec);
    },
    set_state: setState,
    set_usage: setUsage,
    set_plan: setPlan,
    set_commands: (op) => {
      const ul = $("commands");
      ul.replaceChildren();
      for (const c of op.commands || []) ul.appendChild(el("li", null, "/" + (c.name || "") + (c.description ? " - " + c.description : "")));
    },
    web_banner: (op) => banner(op.text, op.level),
    web_permission: showPermission,
    web_permission_resolved: resolvePermission,
    web_session: () => refreshSessions(),
  };

  // ---- controls ----------------------------------------------------------------------------

  $("new-session").addEventListener("click", async () => {
    try {
      const created = await api("/api/sessions", {});
      await refreshSessions();
      select(created.id);
    } catch (e) {
      banner("Cannot create a session: " + e.message, "error");
    }
  });

  $("prompt-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("prompt-input");
    const text = input.value;
    if (!text.trim() || current === null) return;
    $("send").disabled = true;
    try {
      await api("/api/sessions/" + encodeURIComponent(current) + "/prompt", { text });
      input.value = "";
    } catch (e) {
      banner("Prompt not sent: " + e.message, "error");
    } finally {
      $("send").disabled = false;
    }
  });

  $("prompt-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("prompt-form").requestSubmit();
  });

  $("cancel").addEventListener("click", async () => {
    if (current === null) return;
    try { await api("/api/sessions/" + encodeURIComponent(current) + "/cancel", {}); }
    catch (e) { banner("Cancel failed: " + e.message, "error"); }
  });

  (async () => {
    const sessions = (await refreshSessions()) || [];
    const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
    if (wanted && sessions.some((s) => String(s.id) === wanted)) select(wanted);
  })();
})();
