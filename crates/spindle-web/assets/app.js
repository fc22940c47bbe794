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
  let commands = []; // the agent's available commands (SetCommands)

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

  const panels = window.SpindlePanels.create({
    $, el, api, banner,
    session: () => current,
    select: (id) => select(id),
    refreshSessions: () => refreshSessions(),
  });
  const composer = window.SpindleComposer.create({
    $, el, api,
    session: () => current,
    agent: () => panels.agent(),
    commands: () => commands,
    sent: () => refreshSessions(),
  });

  const cards = window.SpindleCards.create({
    $, api, banner,
    session: () => current,
    // The latest entry `matches` accepts.
    latest: (matches) => {
      for (let i = order.length - 1; i >= 0; i--) {
        const rec = entries.get(order[i]);
        if (rec && matches(rec)) return rec;
      }
      return null;
    },
    scrollToEnd: () => scrollToEnd(),
    // An "always" answer becomes a standing permission.
    answered: () => panels.loadAgent(),
  });
  const fileDiff = window.SpindleCards.fileDiff;

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
      const where = [s.cwd, s.agentSessionId ? "agent session " + s.agentSessionId : ""].filter(Boolean).join(" \u00b7 ");
      if (where) { b.title = where; b.appendChild(el("span", "session-where", where)); }
      if (String(s.id) === String(current)) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => select(s.id));
      li.appendChild(b);
      ul.appendChild(li);
    }
    return list.sessions;
  }

  function select(id) {
    if (source) { source.close(); source = null; }
    followStream = true;
    current = String(id);
    history.replaceState(null, "", "#session=" + encodeURIComponent(current));
    clearView();
    panels.clear();
    composer.reset();
    panels.loadAgent();
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
    commands = [];
    cards.clear();
    setState({ state: "idle" });
    setUsage({});
    banner(null);
  }

  // Which pane an entry lives in: thoughts and plans have their own panes, the rest is the
  // transcript. The kinds are the engine's EntryKind names.
  function containerFor(kind) {
    if (kind === "agent_thought") return $("thoughts");
    if (kind === "plan" || kind === "plan_text") return $("plan");
    return $("transcript");
  }

  // Entries whose text streams: markdown for messages, plain text for the rest.
  const MARKDOWN_KINDS = new Set(["user_message", "agent_message"]);
  const PLAIN_TEXT_KINDS = new Set(["agent_thought", "plan_text", "terminal"]);

  function buildEntry(entry) {
    const kind = String(entry.kind || "unknown");
    const rec = { id: String(entry.id), kind, text: "", node: null, body: null, head: null, cache: [] };
    if (kind === "agent_thought" || kind === "plan_text") {
      rec.node = el("div", kind === "agent_thought" ? "thought" : "plan-text");
      rec.body = document.createTextNode("");
      rec.node.appendChild(rec.body);
    } else if (kind === "boundary") {
      rec.node = el("div", "divider");
      rec.head = el("span", "label");
      rec.node.appendChild(rec.head);
      rec.body = document.createTextNode("");
    } else if (kind === "plan") {
      rec.node = el("div", "plan-entry");
      rec.head = el("ol");
      rec.node.appendChild(rec.head);
    } else {
      const cls = kind === "user_message" ? "user" : kind === "agent_message" ? "agent" : kind === "tool_call" ? "tool" : kind;
      rec.node = el("article", "entry " + cls);
      rec.head = el("div", "who");
      rec.node.appendChild(rec.head);
      if (MARKDOWN_KINDS.has(kind)) {
        rec.body = el("div", "md");
        rec.node.appendChild(rec.body);
      } else if (kind === "terminal") {
        const pre = el("pre", "terminal-output");
        rec.body = document.createTextNode("");
        pre.appendChild(rec.body);
        rec.node.appendChild(pre);
      }
      rec.extra = el("div", "details");
      rec.node.appendChild(rec.extra);
      if (kind === "tool_call") {
        // A tool call's text is the output of its display-only terminal (`_meta.terminal_*`):
        // append_text streams into this text node; the box shows once the entry has a terminal.
        rec.term = el("div", "tool-terminal");
        const pre = el("pre", "terminal-output");
        rec.body = document.createTextNode("");
        pre.appendChild(rec.body);
        rec.termExit = el("div", "terminal-exit");
        rec.term.append(pre, rec.termExit);
        rec.term.hidden = true;
        rec.node.appendChild(rec.term);
      }
    }
    rec.node.dataset.entryId = rec.id;
    rec.node.dataset.kind = kind;
    setText(rec, typeof entry.text === "string" ? entry.text : "");
    fillEntry(rec, entry);
    return rec;
  }

  // Terminal output is shown with its control characters made visible (ESC as U+241B, ...),
  // one character for one, so UTF-16 offsets of truncate_text still hold.
  const TERMINAL_KINDS = new Set(["terminal", "tool_call"]);
  function shown(rec, text) {
    if (!TERMINAL_KINDS.has(rec.kind)) return text;
    return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
      c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)));
  }

  // Replaces the entry's whole text (insert/update ops carry it whole).
  function setText(rec, text) {
    if (rec.text === text) return;
    rec.text = text;
    if (rec.body && rec.body.nodeType === Node.TEXT_NODE) rec.body.data = shown(rec, text);
    else markDirty(rec);
  }

  // Non-text parts of an entry; the text itself is kept by setText and the text ops.
  function fillEntry(rec, entry) {
    const kind = rec.kind;
    if (kind === "user_message") {
      rec.head.textContent = "You";
      rec.node.classList.toggle("pending", !!entry.pending);
      rec.node.classList.toggle("rejected", !!entry.rejected);
      showAttachments(rec, entry.attachments);
    } else if (kind === "agent_message") {
      rec.head.textContent = "Agent";
      showAttachments(rec, entry.attachments);
    } else if (kind === "boundary") {
      const reason = entry.reason === "compaction" ? "context compacted" : "context cleared";
      const status = entry.reason === "compaction" && entry.status ? " (" + entry.status + ")" : "";
      rec.head.textContent = reason + status + (rec.text ? ": " + rec.text : "");
      rec.node.dataset.reason = entry.reason || "clear";
    } else if (kind === "plan") {
      const items = (entry.plan && Array.isArray(entry.plan.entries)) ? entry.plan.entries : [];
      rec.head.replaceChildren(...items.map((item) => {
        const li = el("li", null, item && item.content != null ? item.content : "");
        li.dataset.status = (item && item.status) || "pending";
        return li;
      }));
      rec.node.hidden = !!entry.removed;
    } else if (kind === "tool_call") {
      fillTool(rec, entry);
    } else if (kind === "terminal") {
      const term = entry.terminal && typeof entry.terminal === "object" ? entry.terminal : {};
      rec.head.textContent = "Terminal " + (term.command ? "$ " + term.command : "");
      rec.extra.textContent = exitText(term.exitStatus);
    } else if (kind === "permission") {
      rec.head.textContent = "Permission request";
      const raw = entry.raw && typeof entry.raw === "object" ? entry.raw : {};
      const o = raw.permission ? raw.permission.outcome : null;
      rec.extra.textContent = String(raw.title || "") + (o ? " - answered: " + String(o.optionId || o.outcome) : "");
      // The web's question card about this request finds its entry by the request id.
      rec.requestKey = raw.permission ? JSON.stringify(raw.permission.requestId) : null;
      rec.open = !o;
    } else if (kind !== "agent_thought" && kind !== "plan_text") {
      rec.head.textContent = kind === "unknown" ? "Unrecognised update" : kind;
      if (Array.isArray(entry.diffs)) {
        // An entry of its own that shows file changes (a write outside any tool call).
        rec.extra.replaceChildren(...diffBlocks(rec, entry.diffs));
        return;
      }
      const raw = entry.raw !== undefined ? entry.raw : entry;
      let shown = "";
      try { shown = JSON.stringify(raw).slice(0, 2000); } catch (_) { shown = ""; }
      rec.extra.replaceChildren(el("pre", null, shown));
    }
  }

  function contentText(item) {
    if (!item || typeof item !== "object") return "";
    if (item.type === "content") return contentText(item.content);
    if (item.type === "text") return String(item.text ?? "");
    if (item.type === "diff") {
      if (item.patch && typeof item.patch.text === "string") return item.patch.text;
      return (item.path ? "--- " + item.path + "\n" : "") + String(item.newText ?? "");
    }
    if (item.type === "terminal") return "[terminal " + String(item.terminalId ?? "") + "]";
    if (item.type === "resource_link") return "[" + String(item.name || item.uri || "resource") + "]";
    return "[" + String(item.type || "content") + "]";
  }

  // How a terminal ended (v2 `exitStatus`, or a tool call's `_meta.terminal_exit`, which the
  // engine spells the same way); empty while it runs.
  function exitText(exit) {
    if (!exit || typeof exit !== "object") return "";
    if (exit.signal) return "killed by " + String(exit.signal);
    return exit.exitCode != null ? "exited with " + String(exit.exitCode) : "exited";
  }

  // Every diff of an entry, one block per file; the paths and request ids are kept so that a
  // write review card finds the entry that shows its diff. A diff of a client write carries its
  // outcome (written, rejected, ...) once the client answered.
  function diffBlocks(rec, diffs) {
    rec.diffKeys = new Set();
    const blocks = [];
    const list = diffs.filter((d) => d && typeof d === "object");
    // A client write (`write`: its request and status) usually repeats the diff the agent showed
    // on the same tool call: that one is then drawn once, as the write.
    const hunksOf = (d) => JSON.stringify([d.path, d.hunks]);
    const written = new Set(list.filter((d) => d.write).map(hunksOf));
    for (const diff of list) {
      if (written.size && !diff.write && written.has(hunksOf(diff))) continue;
      if (diff.path != null) rec.diffKeys.add("path:" + String(diff.path));
      const write = diff.write && typeof diff.write === "object" ? diff.write : null;
      if (write && write.requestId != null) rec.diffKeys.add("request:" + JSON.stringify(write.requestId));
      const block = fileDiff(diff);
      const status = write ? write.status ?? write.outcome : null;
      if (typeof status === "string" && status) {
        const label = el("span", "write-outcome", status);
        label.dataset.outcome = status;
        block.firstChild.appendChild(label);
      }
      blocks.push(block);
    }
    return blocks;
  }

  // Non-text blocks of a message: images drawn as thumbnails (decoded from their data, never
  // loaded from a URL), files as chips. Redrawn only when they change.
  function showAttachments(rec, attachments) {
    const list = Array.isArray(attachments) ? attachments : [];
    const signature = list.length + ":" + list.map((a) => (a && a.type) + (a && (a.uri || a.mimeType)) + (a && a.data ? a.data.length : "")).join("|");
    if (rec.attachmentSignature === signature) return;
    rec.attachmentSignature = signature;
    if (!rec.attachments) {
      rec.attachments = el("div", "message-attachments");
      rec.node.insertBefore(rec.attachments, rec.extra);
    }
    rec.attachments.replaceChildren();
    for (const a of list) {
      if (!a || typeof a !== "object") continue;
      if (a.type === "image" && typeof a.data === "string") {
        const figure = el("figure", "thumb");
        figure.dataset.mime = String(a.mimeType || "");
        rec.attachments.appendChild(figure);
        let bytes;
        try { bytes = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0)); } catch (_) { bytes = null; }
        const fail = () => figure.appendChild(el("span", "chip", "image (" + String(a.mimeType || "unknown type") + ")"));
        if (!bytes) { fail(); continue; }
        createImageBitmap(new Blob([bytes], { type: String(a.mimeType || "") }))
          .then((bitmap) => figure.prepend(window.SpindleComposer.drawThumbnail(bitmap, 96)))
          .catch(fail);
      } else {
        const resource = a.type === "resource" && a.resource && typeof a.resource === "object" ? a.resource : a;
        const name = a.name || resource.uri || a.uri || a.type || "attachment";
        const chip = el("span", "chip", (a.type === "resource" ? "embedded " : "") + "@" + String(name).replace(/^file:\/\//, ""));
        chip.dataset.type = String(a.type || "");
        if (resource.uri) chip.title = String(resource.uri);
        rec.attachments.appendChild(chip);
      }
    }
    rec.attachments.hidden = rec.attachments.children.length === 0;
  }

  // The tool call's wire fields are nested under `toolCall` (its `kind` is the tool kind);
  // `toolName`, `terminal` and `diffs` are what the engine read out of them for display.
  function fillTool(rec, entry) {
    const tc = entry.toolCall && typeof entry.toolCall === "object" ? entry.toolCall : {};
    rec.toolCallId = tc.toolCallId != null ? String(tc.toolCallId) : rec.id;
    const status = String(tc.status || "pending");
    rec.node.dataset.status = status;
    const toolName = typeof entry.toolName === "string" ? entry.toolName : "";
    rec.head.replaceChildren(
      el("span", "title", tc.title || toolName || "Tool call"),
      el("span", "status", status),
      el("span", "tool-kind", tc.kind && tc.kind !== "other" ? " " + tc.kind : ""),
      el("span", "tool-name", toolName && toolName !== tc.title ? toolName : ""),
    );
    const terminal = entry.terminal && typeof entry.terminal === "object" ? entry.terminal : null;
    const diffs = Array.isArray(entry.diffs) ? entry.diffs : null;
    const parts = [];
    // Streamed output arrives as many small content items: consecutive text joins one block.
    let text = null;
    for (const item of Array.isArray(tc.content) ? tc.content : []) {
      if (item && item.type === "diff" && diffs) continue;
      if (item && item.type === "terminal" && terminal && item.terminalId === terminal.terminalId) continue;
      const isText = item && item.type === "content" && item.content && item.content.type === "text";
      if (isText && text) {
        text.textContent += contentText(item);
        continue;
      }
      const block = el("pre", item && item.type === "diff" ? "diff" : "tool-output", contentText(item));
      text = isText ? block : null;
      parts.push(block);
    }
    parts.push(...diffBlocks(rec, diffs || []));
    const permission = entry.permission;
    if (permission && typeof permission === "object") {
      const o = permission.outcome;
      const answer = o === null || o === undefined ? "waiting for an answer" : String(o.optionId || o.outcome || "answered");
      parts.push(el("div", "outcome permission-record", "permission: " + answer));
    }
    rec.extra.replaceChildren(...parts);
    rec.term.hidden = !terminal;
    rec.termExit.textContent = terminal ? exitText(terminal.exitStatus) : "";
    if (terminal && terminal.cwd) rec.term.title = "cwd: " + String(terminal.cwd);
  }

  function markDirty(rec) {
    if (!MARKDOWN_KINDS.has(rec.kind)) return;
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
    scrollToEnd();
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
    cards.adopt(rec);
    scrollToEnd();
  }

  function removeEntry(id) {
    const rec = entries.get(String(id));
    if (!rec) return;
    cards.release(rec);
    rec.node.remove();
    entries.delete(rec.id);
    order = order.filter((x) => x !== rec.id);
    dirty.delete(rec.id);
  }

  // Follow the stream while the reader is at the bottom; leave them alone when they scrolled up.
  let followStream = true;
  $("transcript").addEventListener("scroll", () => {
    const t = $("transcript");
    followStream = t.scrollHeight - t.scrollTop - t.clientHeight < 80;
  });

  function scrollToEnd() {
    if (!followStream) return;
    const t = $("transcript");
    t.scrollTop = t.scrollHeight;
  }

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
    $("cancel").disabled = !(st.turnOpen || state === "running" || state === "requires_action");
  }

  function setUsage(op) {
    const usage = op.usage || {};
    const used = Number(usage.used), size = Number(usage.size);
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

  // Notices are live events: shown for a while, never part of the transcript.
  function showNotice(op) {
    const box = $("notices");
    const n = el("div", "notice");
    n.dataset.severity = String(op.severity || "info");
    n.appendChild(el("strong", null, op.title || "notice"));
    if (op.description) n.appendChild(el("span", null, " " + op.description));
    box.appendChild(n);
    while (box.children.length > 3) box.firstChild.remove();
    setTimeout(() => n.remove(), 8000);
  }

  const handlers = {
    insert_entry: (op) => insertEntry(op.index, op.entry),
    update_entry: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) { insertEntry(order.length, op.entry); return; }
      const kind = String(op.entry.kind || "unknown");
      if (kind !== rec.kind) {
        const at = order.indexOf(rec.id);
        removeEntry(rec.id);
        insertEntry(at, op.entry);
        return;
      }
      setText(rec, typeof op.entry.text === "string" ? op.entry.text : "");
      fillEntry(rec, op.entry);
      cards.adopt(rec);
    },
    remove_entry: (op) => removeEntry(op.id),
    append_text: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) return;
      rec.text += op.text;
      if (rec.body && rec.body.nodeType === Node.TEXT_NODE) rec.body.appendData(shown(rec, op.text));
      else markDirty(rec);
      if (rec.kind === "boundary") fillEntry(rec, { reason: rec.node.dataset.reason });
    },
    truncate_text: (op) => {
      const rec = entries.get(String(op.id));
      if (!rec) return;
      // `len` counts UTF-16 code units, the unit of JavaScript strings.
      const len = Math.max(0, Math.min(rec.text.length, Number(op.len) || 0));
      if (len === rec.text.length) return;
      rec.text = rec.text.slice(0, len);
      if (rec.body && rec.body.nodeType === Node.TEXT_NODE) rec.body.deleteData(len, rec.body.length - len);
      else markDirty(rec);
    },
    set_state: setState,
    set_usage: setUsage,
    set_commands: (op) => {
      commands = Array.isArray(op.commands) ? op.commands.filter((c) => c && typeof c === "object") : [];
      const ul = $("commands");
      ul.replaceChildren();
      for (const c of commands) {
        const li = el("li", null, "/" + String(c.name || ""));
        const hint = c.input && typeof c.input.hint === "string" ? c.input.hint : "";
        if (hint) li.appendChild(el("span", "palette-hint", " " + hint));
        if (c.description) li.appendChild(el("div", "palette-description", c.description));
        ul.appendChild(li);
      }
    },
    set_session_info: (op) => panels.onSessionInfo(op.info),
    notice: (op) => showNotice(op),
    web_banner: (op) => banner(op.text, op.level),
    web_permission: cards.showPermission,
    web_permission_resolved: cards.resolvePermission,
    web_review: cards.showReview,
    web_review_resolved: cards.resolveReview,
    web_status: (op) => panels.onStatus(op),
    web_modes: (op) => panels.onModes(op.modes),
    web_standing_permissions: (op) => panels.onStanding(op.permissions),
    web_permission_auto: cards.showAutoAnswer,
    web_session: () => refreshSessions(),
  };

  // ---- controls ----------------------------------------------------------------------------

  $("cancel").addEventListener("click", async () => {
    if (current === null) return;
    try { await api("/api/sessions/" + encodeURIComponent(current) + "/cancel", {}); }
    catch (e) { banner("Cancel failed: " + e.message, "error"); }
  });

  // Read-only view of the applied state, for tests and debugging: what each entry's text
  // buffer holds, in timeline order.
  window.SpindleView = Object.freeze({
    entries: () => order.map((id) => {
      const rec = entries.get(id);
      return { id, kind: rec ? rec.kind : "", text: rec ? rec.text : "" };
    }),
  });

  (async () => {
    const sessions = (await refreshSessions()) || [];
    const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
    if (wanted && sessions.some((s) => String(s.id) === wanted)) select(wanted);
  })();
})();
