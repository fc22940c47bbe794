// Session-level controls around the transcript: the new-session form (which agent, which
// directory), the session's agent named above the transcript, the agent's own session history, what the agent offers (sign-in methods, prompt capabilities, standing permissions) and
// the mode and config pickers. Like the transcript they only show what the server says and post
// what the user picks; app.js creates them (createPanels).

import { $, el, api, banner } from "./dom.js";
import { createSessionForm, mcpRows } from "./newsession.js";
import { forkedFrom, offerFork, offerAgentDelete, deletePath, signOutButton } from "./lifecycle.js";
import { openInspector } from "./inspector.js";

export function createPanels(ctx) {
  const sessionPath = (tail) => "/api/sessions/" + encodeURIComponent(ctx.session()) + tail;

  // ---- the agent's facts (GET /api/sessions/{id}/agent) ------------------------------------

  let agent = null; // the current session's agent facts, null until loaded
  let agentFor = null; // the session they belong to
  let agentLoads = 0; // answers of older loads are dropped

  function clear() {
    agent = null;
    agentFor = null;
    lastStatus = null;
    authMessage = "";
    showAuth(false);
    $("agent-info").replaceChildren();
    $("standing-list").replaceChildren();
    $("standing-pane").hidden = true;
    renderedInfo = "";
    $("session-bar").hidden = true;
    $("session-bar").replaceChildren();
    showSessionAgent();
  }

  // ---- the agent a session runs (`agent` of GET /api/sessions and .../agent) ----------------

  let sessionAgents = new Map(); // session id -> {id, name, version, available}, from the list

  // "Name 1.2.3" of a session's agent.
  const agentLabel = (a) => String(a.name || a.id) + (a.version ? " " + a.version : "");

  // The selected session's agent above its transcript.
  function showSessionAgent() {
    const a = ctx.session() === null ? null : sessionAgents.get(String(ctx.session()));
    const head = $("session-head");
    head.hidden = !a;
    if (!a) return;
    const name = $("session-agent");
    name.textContent = agentLabel(a);
    name.dataset.available = String(a.available !== false);
    $("session-parent").textContent = forkedFrom(listed.get(String(ctx.session())));
    head.title = a.available === false ? "This server does not offer this agent: the session is read-only here" : "Agent id: " + a.id;
  }

  async function loadAgent() {
    const session = ctx.session();
    if (session === null) return null;
    const load = ++agentLoads;
    let facts;
    try {
      facts = await api(sessionPath("/agent"));
    } catch (e) {
      if (load === agentLoads && session === ctx.session()) {
        $("agent-info").replaceChildren(el("div", "muted", "Agent facts not available: " + e.message));
      }
      return null;
    }
    if (load !== agentLoads || session !== ctx.session()) return agent;
    agent = facts && typeof facts === "object" ? facts : {};
    agentFor = session;
    if (agent.agent && typeof agent.agent === "object") {
      sessionAgents.set(String(session), agent.agent);
      showSessionAgent();
    }
    renderAgent();
    if (Array.isArray(agent.standingPermissions)) renderStanding(agent.standingPermissions);
    // The facts carry the status's reason too: the card says why even when they come before
    // the status itself (a sign-out answered before its status reached the page).
    if (agent.needsAuth && agent.status === "needs_auth" && agent.statusMessage && !authMessage) {
      authMessage = String(agent.statusMessage);
    }
    showAuth(!!agent.needsAuth);
    return agent;
  }

  // The agent facts of the selected session, when loaded.
  const currentAgent = () => (agentFor === ctx.session() ? agent : null);
  // The same, only when they come from a started agent's handshake.
  const startedAgent = () => {
    const facts = currentAgent();
    return facts && (facts.status === "ready" || facts.status == null) && facts.protocol != null ? facts : null;
  };

  function renderAgent() {
    const box = $("agent-info");
    const info = agent.agentInfo && typeof agent.agentInfo === "object" ? agent.agentInfo : {};
    // The agent's own name from its handshake; else the name the server knows it by.
    const known = agent.agent && typeof agent.agent === "object" ? agent.agent : null;
    const name = info.title || info.name
      ? (info.title || info.name) + (info.version ? " " + info.version : "")
      : known && agent.protocol != null ? agentLabel(known)
      // Said why (stopped after being idle, run by another replica): it ran, or cannot here.
      : agent.statusMessage ? "The agent is not running" : "The agent has not started yet";
    const rows = [el("div", "agent-name", name)];
    const facts = [];
    if (agent.status && agent.status !== "ready") facts.push(String(agent.status).replace(/_/g, " "));
    if (agent.protocol != null) facts.push("protocol v" + agent.protocol);
    // Files and terminals as negotiated: protocol v2 has no client file system or terminals, so
    // the --fs and --terminals settings do nothing there and are not shown as if they did.
    if (agent.hostInProtocol === false) {
      const missing = "not in protocol v" + agent.protocol;
      facts.push("files: " + missing, "terminals: " + missing);
    } else {
      if (agent.fsPolicy) facts.push("files: " + agent.fsPolicy);
      if (agent.terminals != null) facts.push("terminals: " + (agent.terminals ? "on" : "off"));
    }
    // What the agent accepts is known from its handshake only.
    const caps = agent.status === "ready" || agent.status == null ? agent.promptCapabilities : null;
    if (caps && typeof caps === "object") {
      facts.push("images: " + (caps.image ? "accepted" : "not accepted"));
      if (caps.embeddedContext) facts.push("embeds @files");
    }
    rows.push(el("div", "agent-facts", facts.join(" \u00b7 ")));
    // Why no agent runs (stopped after being idle, on another replica, refused), when said.
    if (agent.status !== "ready" && agent.status !== "needs_auth" && agent.statusMessage) {
      rows.push(el("div", "agent-note", String(agent.statusMessage)));
    }
    const mcp = mcpRows(agent.mcpServers);
    if (mcp) rows.push(mcp);
    const signOut = signOutButton(ctx.session(), agent, loadAgent);
    if (signOut) rows.push(signOut);
    box.replaceChildren(...rows);
  }

  // ---- authentication ----------------------------------------------------------------------

  // A method the client would have to run the agent's program for, interactively (`type` on
  // the wire, `kind` in Spindle's description of it).
  const runsInTerminal = (m) => m.type === "terminal" || m.kind === "terminal";

  function showAuth(needed, methods) {
    const card = $("auth");
    card.hidden = !needed;
    if (!needed) return;
    const list = Array.isArray(methods) ? methods : (agent && Array.isArray(agent.authMethods) ? agent.authMethods : []);
    const buttons = $("auth-methods");
    buttons.replaceChildren();
    // The agent's reason (a sign-out, an expired login) stays while the card does.
    $("auth-error").textContent = authMessage;
    if (!list.length) {
      buttons.appendChild(el("div", "muted", "The agent names no sign-in method; sign in outside Spindle and restart the session."));
    }
    for (const m of list) {
      if (!m || typeof m !== "object" || m.id == null) continue;
      const item = el("div", "auth-method");
      const b = el("button", null, m.name || m.id);
      b.type = "button";
      b.dataset.method = String(m.id);
      if (runsInTerminal(m)) {
        // The agent wants its own program run interactively: a browser cannot do that.
        b.disabled = true;
        item.append(b, el("span", "muted", " run the agent in a terminal to sign in this way"));
      } else {
        b.addEventListener("click", () => authenticate(String(m.id)));
        item.appendChild(b);
      }
      if (m.description) item.appendChild(el("div", "auth-description", m.description));
      buttons.appendChild(item);
    }
  }

  async function authenticate(methodId) {
    const session = ctx.session();
    for (const b of $("auth-methods").querySelectorAll("button")) b.disabled = true;
    $("auth-error").textContent = "Signing in\u2026";
    try {
      await api(sessionPath("/authenticate"), { methodId });
      if (session !== ctx.session()) return;
      $("auth-error").textContent = "";
      showAuth(false);
      loadAgent();
    } catch (e) {
      if (session !== ctx.session()) return;
      enableAuthButtons();
      $("auth-error").textContent = "Sign-in failed: " + e.message;
    }
  }

  function enableAuthButtons() {
    const methods = agent && Array.isArray(agent.authMethods) ? agent.authMethods : [];
    for (const b of $("auth-methods").querySelectorAll("button")) {
      const m = methods.find((x) => x && String(x.id) === b.dataset.method);
      b.disabled = !!(m && runsInTerminal(m));
    }
  }

  // A session status from the server (`web_status` op). The agent's
  // facts are known once it is ready, so they are asked for again when the status changes.
  let lastStatus = null;
  let authMessage = ""; // why the agent asks for a sign-in (web_status), shown on the card

  function onStatus(status) {
    if (!status || typeof status !== "object") return;
    const changed = status.status !== lastStatus;
    lastStatus = status.status;
    authMessage = status.status === "needs_auth" && status.message ? String(status.message) : "";
    showAuth(status.status === "needs_auth", status.authMethods);
    if (changed) loadAgent();
  }

  // ---- standing permissions ------------------------------------------------------------------

  // The "always" answers the server remembers for this session (`web_standing_permissions`
  // op, or the agent facts).
  function renderStanding(list) {
    list = Array.isArray(list) ? list : [];
    const ul = $("standing-list");
    ul.replaceChildren();
    $("standing-pane").hidden = list.length === 0;
    for (const p of list) {
      if (!p || typeof p !== "object" || p.key == null) continue;
      const li = el("li");
      li.dataset.key = String(p.key);
      const decision = String(p.kind || p.decision || p.optionKind || "");
      const allow = /allow/.test(decision);
      const badge = el("span", "standing-decision", allow ? "always allow" : /reject/.test(decision) ? "always reject" : decision);
      badge.dataset.decision = allow ? "allow" : "reject";
      const label = el("span", "standing-label", p.label || p.title || p.tool || p.key);
      const forget = el("button", null, "Forget");
      forget.type = "button";
      forget.addEventListener("click", () => forgetPermission(String(p.key), forget));
      li.append(badge, label, forget);
      ul.appendChild(li);
    }
  }

  async function forgetPermission(key, button) {
    button.disabled = true;
    try {
      await api(sessionPath("/permission/forget"), { key });
      banner(null, null, "forget");
    } catch (e) {
      banner("Cannot forget that permission: " + e.message, "error", "forget");
    }
    loadAgent();
  }

  // ---- mode and config pickers (from the engine's SetSessionInfo op) -------------------------

  let renderedInfo = "";

  function onSessionInfo(info) {
    info = info && typeof info === "object" ? info : {};
    agentTitle = typeof info.title === "string" ? info.title : "";
    showTitle();
    const modeState = info.modes && typeof info.modes === "object" ? info.modes : {};
    const modes = Array.isArray(modeState.availableModes) ? modeState.availableModes
      : Array.isArray(info.availableModes) ? info.availableModes : [];
    const currentMode = info.currentModeId != null ? info.currentModeId : modeState.currentModeId;
    const configs = (Array.isArray(info.configOptions) ? info.configOptions : [])
      .filter((c) => c && typeof c === "object" && (c.configId != null || c.id != null));
    // Rebuilt only when something it shows changed: an open dropdown is not reset by
    // unrelated title updates.
    const signature = JSON.stringify([modes, currentMode, configs]);
    if (signature === renderedInfo) return;
    renderedInfo = signature;
    const bar = $("session-bar");
    const parts = [];
    // An agent that offers config options names its mode there too (category "mode"); the
    // separate mode picker is then left out, as the protocol asks of clients.
    const modeConfig = configs.some((c) => c.category === "mode");
    if (!modeConfig && modes.length) parts.push(modePicker(modes, currentMode));
    else if (!modeConfig && currentMode != null) parts.push(el("span", "picker-static", "mode: " + currentMode));
    for (const c of configs) {
      const picker = configPicker(c);
      if (picker) parts.push(picker);
    }
    bar.replaceChildren(...parts);
    bar.hidden = parts.length === 0;
  }

  function modePicker(modes, current) {
    const label = el("label", "picker");
    label.appendChild(el("span", "picker-name", "Mode"));
    const select = el("select");
    select.id = "mode-select";
    for (const m of modes) {
      if (!m || m.id == null) continue;
      const o = el("option", null, m.name || m.id);
      o.value = String(m.id);
      if (m.description) o.title = m.description;
      select.appendChild(o);
    }
    if (current != null) select.value = String(current);
    select.dataset.current = select.value;
    select.addEventListener("change", () => choose(select, "/mode", { modeId: select.value }));
    label.appendChild(select);
    return label;
  }

  function configPicker(c) {
    const id = String(c.configId != null ? c.configId : c.id);
    const label = el("label", "picker");
    label.dataset.category = String(c.category || "");
    label.appendChild(el("span", "picker-name", c.name || id));
    if (c.description) label.title = c.description;
    if (c.type === "boolean" || typeof c.currentValue === "boolean") {
      const box = el("input");
      box.type = "checkbox";
      box.dataset.configId = id;
      box.checked = c.currentValue === true;
      box.addEventListener("change", async () => {
        box.disabled = true;
        try {
          await api(sessionPath("/config"), { configId: id, value: box.checked });
          banner(null, null, "choice");
        } catch (e) {
          box.checked = !box.checked;
          banner("Cannot change " + (c.name || id) + ": " + e.message, "error", "choice");
        } finally {
          box.disabled = false;
        }
      });
      label.appendChild(box);
      return label;
    }
    if (!Array.isArray(c.options)) return null; // an option type this page does not know
    const select = el("select");
    select.dataset.configId = id;
    const addOption = (parent, o) => {
      if (!o || o.value == null) return;
      const opt = el("option", null, o.name || o.value);
      opt.value = String(o.value);
      if (o.description) opt.title = o.description;
      parent.appendChild(opt);
    };
    for (const item of c.options) {
      if (item && Array.isArray(item.options)) {
        const group = el("optgroup");
        group.label = String(item.name || item.groupId || item.group || "");
        for (const o of item.options) addOption(group, o);
        select.appendChild(group);
      } else {
        addOption(select, item);
      }
    }
    if (c.currentValue != null) select.value = String(c.currentValue);
    select.dataset.current = select.value;
    select.addEventListener("change", () => choose(select, "/config", { configId: id, value: select.value }));
    label.appendChild(select);
    return label;
  }

  // Posts a picked value; on refusal the picker goes back to the value the agent has.
  async function choose(select, tail, body) {
    select.disabled = true;
    try {
      await api(sessionPath(tail), body);
      select.dataset.current = select.value;
      banner(null, null, "choice");
    } catch (e) {
      select.value = select.dataset.current || "";
      banner("The agent did not take that choice: " + e.message, "error", "choice");
    } finally {
      select.disabled = false;
    }
  }

  // ---- new sessions and the agent's history ----------------------------------------------------

  // The agents a session may run (GET /api/agents), the default one picked.
  async function loadAgents() {
    let list;
    try { list = await api("/api/agents"); } catch (e) { banner("Cannot list the agents: " + e.message, "error", "agents"); return; }
    banner(null, null, "agents");
    const select = $("new-session-agent");
    const picked = select.value;
    select.replaceChildren();
    for (const a of Array.isArray(list && list.agents) ? list.agents : []) {
      if (!a || a.id == null) continue;
      const o = el("option", null, agentLabel(a));
      o.value = String(a.id);
      o.title = "Agent id: " + a.id;
      if (a.default) o.selected = true;
      select.appendChild(o);
    }
    if (picked && [...select.options].some((o) => o.value === picked)) select.value = picked;
  }
  loadAgents();

  // The agent picked in the form (the server's default until the list is loaded).
  const pickedAgent = () => $("new-session-agent").value || null;
  const sessionForm = createSessionForm();

  $("new-session-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const cwd = $("new-session-cwd").value.trim();
    const body = cwd ? { cwd } : {};
    if (pickedAgent()) body.agent = pickedAgent();
    await open(sessionForm.fill(body), "Cannot create a session: ");
  });
  // The history is the picked agent's.
  $("new-session-agent").addEventListener("change", () => {
    if ($("history-pane").open) refreshHistory(false);
  });

  async function open(body, failure) {
    try {
      const created = await api("/api/sessions", body);
      banner(null, null, "create");
      await refreshSessions();
      ctx.select(created.id);
      return true;
    } catch (e) {
      banner(failure + e.message, "error", "create");
      return false;
    }
  }

  let historyCursor = null;

  async function refreshHistory(more) {
    const status = $("history-status");
    status.textContent = "Asking the agent\u2026";
    const query = new URLSearchParams();
    const agentId = pickedAgent();
    if (agentId) query.set("agent", agentId);
    if (more && historyCursor) query.set("cursor", historyCursor);
    let list;
    try {
      // Spindle's own list too: the sessions open there are left out of the agent's.
      [list] = await Promise.all([api("/api/agent-sessions" + (query.size ? "?" + query : "")), refreshSessions()]);
    } catch (e) {
      status.textContent = "Cannot list the agent's sessions: " + e.message;
      return;
    }
    const ul = $("history-list");
    if (!more) ul.replaceChildren();
    if (!list || list.supported === false) {
      status.textContent = "This agent does not list its sessions.";
      $("history-more").hidden = true;
      return;
    }
    const sessions = Array.isArray(list.sessions) ? list.sessions : [];
    for (const s of sessions) {
      if (s && s.sessionId != null) ul.appendChild(historyItem(s, agentId));
    }
    hideOpenHistory();
    const shown = [...ul.children].filter((li) => !li.hidden).length;
    status.textContent = shown ? "" : ul.children.length ? "Every earlier session of the agent is open in Spindle's list." : "The agent has no earlier sessions.";
    historyCursor = list.nextCursor || null;
    $("history-more").hidden = !historyCursor;
  }

  function historyItem(s, agentId) {
    const li = el("li", "history-item");
    li.dataset.agentSession = String(s.sessionId);
    const title = plainText(s.title);
    li.appendChild(el("div", "history-title", title || s.sessionId));
    if (title && s.title !== title) li.title = title;
    const where = [s.cwd, s.updatedAt ? formatTime(s.updatedAt) : ""].filter(Boolean).join(" \u00b7 ");
    if (where) li.appendChild(el("div", "history-where", where));
    const buttons = el("div", "history-actions");
    // Known only from a started agent of the same id: until then both ways are offered.
    const running = ctx.session() === null ? null : sessionAgents.get(String(ctx.session()));
    const facts = running && running.id === agentId ? startedAgent() : null;
    for (const [how, label, can] of [["load", "Open", "canLoad"], ["resume", "Resume", "canResume"]]) {
      if (facts && facts[can] === false) continue;
      const b = el("button", null, label);
      b.type = "button";
      b.dataset.open = how;
      b.title = how === "load" ? "Open it with its history replayed" : "Continue it without replaying the history";
      b.addEventListener("click", async () => {
        b.disabled = true;
        const body = { agentSessionId: String(s.sessionId), open: how };
        if (s.cwd) body.cwd = String(s.cwd);
        if (agentId) body.agent = agentId;
        await open(body, "Cannot open that session: ");
        b.disabled = false;
      });
      buttons.appendChild(b);
    }
    li.appendChild(buttons);
    return li;
  }

  // The sessions already in Spindle's list are not offered again (they are opened from there).
  function hideOpenHistory() {
    for (const li of document.querySelectorAll("#history-list .history-item")) {
      li.hidden = openAgentSessions.has(li.dataset.agentSession);
    }
  }

  // An agent's session title is often the start of a markdown prompt or reply: shown as the
  // words a reader sees (no #, *, `, links' targets), on one line. Raw HTML stays text, as the
  // page's markdown shows it.
  function plainText(text) {
    if (text == null) return "";
    return String(text)
      .replace(/```[^\n]*\n?/g, " ")
      .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/\[([^\]]*)\]\([^)]*$/, "$1") // a link the title's end cut
      .replace(/^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+)/gm, "")
      .replace(/(\*\*|__)(.+?)\1/g, "$2")
      .replace(/(^|[\s(])[*_]([^*_\s][^*_]*?)[*_](?=[\s).,;:!?]|$)/g, "$1$2")
      .replace(/~~(.+?)~~/g, "$1")
      .replace(/`+([^`]*)`+/g, "$1")
      .replace(/\s+/g, " ")
      .trim();
  }

  function formatTime(text) {
    const d = new Date(String(text));
    return Number.isNaN(d.getTime()) ? String(text) : d.toLocaleString();
  }

  $("history-pane").addEventListener("toggle", () => {
    if ($("history-pane").open) refreshHistory(false);
  });
  $("history-refresh").addEventListener("click", () => refreshHistory(false));
  $("history-more").addEventListener("click", () => refreshHistory(true));

  // ---- usage, notices, phone tabs (moved from app.js) -------------------------------------

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

  // Phone width: the sessions, the chat and the panes are tabs (see app.css); arrows move along.
  const tabs = [...document.querySelectorAll("#tabs [role=tab]")];
  function showTab(name, focus) {
    document.body.dataset.tab = name;
    for (const tab of tabs) {
      const on = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      if (on && focus) tab.focus();
    }
    ctx.layoutChanged();
  }
  for (const tab of tabs) {
    tab.addEventListener("click", () => showTab(tab.dataset.tab));
    tab.addEventListener("keydown", (event) => {
      const at = tabs.indexOf(tab);
      const step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
      if (!step) return;
      event.preventDefault();
      showTab(tabs[(at + step + tabs.length) % tabs.length].dataset.tab, true);
    });
  }

  // The session list (GET /api/sessions), the current one marked; resolves with the sessions.
  // A session that left the list (deleted here or on another page) is closed if shown.
  let openAgentSessions = new Set(); // the agent session ids Spindle's sessions hold
  let listing = 0; // answers of older listings are dropped
  async function refreshSessions() {
    const asked = ++listing;
    let list;
    try { list = await api("/api/sessions"); } catch (e) { banner("Cannot list sessions: " + e.message, "error", "sessions"); return; }
    if (asked !== listing) return list.sessions;
    banner(null, null, "sessions");
    // A row being renamed or with its menu open is left alone until the user is done.
    if (document.querySelector("#session-list .session-rename, #session-list .session-menu")) {
      pendingList = list.sessions;
    } else {
      drawSessions(list.sessions);
    }
    openAgentSessions = new Set(list.sessions.filter((s) => s.agentSessionId).map((s) => String(s.agentSessionId)));
    hideOpenHistory();
    if (ctx.session() !== null && !list.sessions.some((s) => String(s.id) === String(ctx.session()))) ctx.deselect();
    return list.sessions;
  }

  let pendingList = null; // a list that came while a row was being edited
  let listed = new Map(); // session id -> its row of the list ({title, titleSource, ...})
  let agentTitle = ""; // the shown session's title from the agent (session_info_update)

  // The tab's title: a user's rename wins over the agent's title (as in every list).
  function showTitle() {
    const row = ctx.session() === null ? null : listed.get(String(ctx.session()));
    const title = row && row.titleSource === "user" ? row.title : agentTitle || (row && row.title) || "";
    document.title = title ? title + " - Spindle" : "Spindle";
  }

  function drawSessions(sessions) {
    pendingList = null;
    const ul = $("session-list");
    ul.replaceChildren();
    sessionAgents = new Map();
    listed = new Map(sessions.map((s) => [String(s.id), s]));
    showTitle();
    for (const s of sessions) {
      const li = el("li");
      li.dataset.session = String(s.id);
      const b = el("button", "session-open");
      b.type = "button";
      b.dataset.session = String(s.id);
      b.appendChild(el("span", "session-title", plainText(s.title) || "Session " + s.id));
      if (s.agent && typeof s.agent === "object") {
        sessionAgents.set(String(s.id), s.agent);
        const name = b.appendChild(el("span", "session-agent-name", agentLabel(s.agent)));
        name.dataset.available = String(s.agent.available !== false);
      }
      const where = [forkedFrom(s), s.cwd, s.agentSessionId ? "agent session " + s.agentSessionId : ""].filter(Boolean).join(" \u00b7 ");
      if (where) { b.title = where; b.appendChild(el("span", "session-where", where)); }
      if (String(s.id) === String(ctx.session())) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => ctx.select(s.id));
      const more = el("button", "session-menu-button", "\u22ef");
      more.type = "button";
      more.setAttribute("aria-haspopup", "menu");
      more.setAttribute("aria-expanded", "false");
      more.setAttribute("aria-label", "Rename or delete " + (s.title || "session " + s.id));
      more.title = "Rename or delete";
      more.addEventListener("click", (event) => { event.stopPropagation(); toggleMenu(li, s, more); });
      li.append(b, more);
      ul.appendChild(li);
    }
    showSessionAgent();
  }

  // ---- a session row's menu: rename, delete ---------------------------------------------------

  function closeMenus(except) {
    for (const menu of document.querySelectorAll("#session-list .session-menu")) {
      if (menu === except) continue;
      const button = menu.parentNode.querySelector(".session-menu-button");
      if (button) button.setAttribute("aria-expanded", "false");
      menu.remove();
    }
    if (!except && pendingList && !document.querySelector("#session-list .session-rename")) drawSessions(pendingList);
  }

  function toggleMenu(li, s, button) {
    const shown = li.querySelector(".session-menu");
    if (shown) { closeMenus(); button.focus(); return; }
    closeMenus();
    const menu = el("div", "session-menu");
    menu.setAttribute("role", "menu");
    const item = (action, label) => {
      const node = el("button", null, label);
      node.type = "button";
      node.dataset.action = action;
      node.setAttribute("role", "menuitem");
      node.addEventListener("click", (event) => {
        event.stopPropagation();
        closeMenus(menu);
        menu.remove();
        button.setAttribute("aria-expanded", "false");
        if (action === "rename") startRename(li, s);
        else if (action === "delete") confirmDelete(s);
        else if (action === "wire") openInspector(s.id, s.title);
      });
      return node;
    };
    menu.append(item("rename", "Rename\u2026"), item("delete", "Delete\u2026"), item("wire", "Wire inspector"));
    offerFork(menu, s, item, async (created) => { await refreshSessions(); ctx.select(created.id); });
    menu.addEventListener("keydown", (event) => {
      const items = [...menu.querySelectorAll("button")];
      const at = items.indexOf(document.activeElement);
      if (event.key === "Escape") { event.preventDefault(); closeMenus(); button.focus(); }
      else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        items[(at + (event.key === "ArrowDown" ? 1 : items.length - 1)) % items.length].focus();
      }
    });
    li.appendChild(menu);
    button.setAttribute("aria-expanded", "true");
    menu.querySelector("button").focus();
  }

  document.addEventListener("click", (event) => {
    if (!event.target.closest || !event.target.closest(".session-menu")) closeMenus();
  });

  function startRename(li, s) {
    const current = s.title || "";
    const form = el("form", "session-rename");
    const field = el("input");
    field.type = "text";
    field.value = current;
    field.maxLength = 200;
    field.setAttribute("aria-label", "New name of the session");
    const save = el("button", "primary", "Save");
    save.type = "submit";
    const cancel = el("button", null, "Cancel");
    cancel.type = "button";
    form.append(field, save, cancel);
    const shown = [...li.children];
    for (const node of shown) node.hidden = true;
    li.appendChild(form);
    const done = () => {
      form.remove();
      for (const node of shown) node.hidden = false;
      if (pendingList) drawSessions(pendingList);
    };
    cancel.addEventListener("click", () => { done(); li.querySelector(".session-menu-button").focus(); });
    field.addEventListener("keydown", (event) => {
      if (event.key === "Escape") { event.preventDefault(); done(); li.querySelector(".session-menu-button").focus(); }
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const title = field.value.trim();
      if (!title || title === current) { done(); return; }
      save.disabled = true;
      try {
        await api("/api/sessions/" + encodeURIComponent(s.id), { title }, "PATCH");
        banner(null, null, "rename");
        s.title = title;
        done();
        if (String(s.id) === String(ctx.session())) document.title = title + " - Spindle";
        await refreshSessions();
      } catch (e) {
        save.disabled = false;
        banner("Cannot rename the session: " + e.message, "error", "rename");
      }
    });
    field.focus();
    field.select();
  }

  // Asks first (a dialog of the page's own, not the browser's confirm()).
  function confirmDelete(s) {
    const dialog = $("confirm-dialog");
    const name = s.title || "Session " + s.id;
    $("confirm-title").textContent = "Delete \u201c" + name + "\u201d?";
    $("confirm-text").textContent = "Its agent is stopped, and Spindle deletes its transcript and log. "
      + "What the agent keeps of the session on its side stays. This cannot be undone.";
    $("confirm-ok").textContent = "Delete";
    offerAgentDelete(s);
    dialog.returnValue = "";
    dialog.addEventListener("close", async () => {
      if (dialog.returnValue !== "confirm") return;
      try {
        await api(deletePath(s), undefined, "DELETE");
        banner(null, null, "delete");
      } catch (e) {
        banner("Cannot delete the session: " + e.message, "error", "delete");
      }
      await refreshSessions();
    }, { once: true });
    dialog.showModal();
    $("confirm-cancel").focus();
  }

  // Keeps the list's order for the next/previous session shortcuts.
  function stepSession(delta) {
    const buttons = [...document.querySelectorAll("#session-list .session-open")];
    if (!buttons.length) return;
    const at = buttons.findIndex((b) => b.getAttribute("aria-current") === "true");
    const next = at < 0 ? (delta > 0 ? 0 : buttons.length - 1) : Math.min(buttons.length - 1, Math.max(0, at + delta));
    if (next === at) return;
    buttons[next].focus();
    ctx.select(buttons[next].dataset.session);
  }

  // The agent's commands (set_commands), listed in the commands pane.
  function showCommands(commands) {
    const ul = $("commands");
    ul.replaceChildren();
    for (const c of commands) {
      const li = el("li", null, "/" + String(c.name || ""));
      const hint = c.input && typeof c.input.hint === "string" ? c.input.hint : "";
      if (hint) li.appendChild(el("span", "palette-hint", " " + hint));
      if (c.description) li.appendChild(el("div", "palette-description", c.description));
      ul.appendChild(li);
    }
  }

  return Object.freeze({
    refreshSessions, showCommands, clear, loadAgent, agent: startedAgent, onStatus, onSessionInfo,
    onStanding: renderStanding, refreshHistory, setUsage, showNotice, showTab, stepSession,
  });
}
