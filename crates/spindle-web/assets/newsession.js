// The new-session form's choices beyond the agent and the directory: the additional directories
// (one absolute path a line; the server checks them) and which of the configured MCP servers the
// session gets (GET /api/mcp-servers: names, kinds and targets, never a secret; all checked at
// first). panels.js owns the form and asks this module what to add to the body of
// POST /api/sessions; it also shows a session's MCP servers in the agent pane with `mcpRows`.

import { $, el, api, banner } from "./dom.js";

export function createSessionForm() {
  let servers = []; // [{name, type, target}] as the server listed them

  async function loadMcpServers() {
    let list;
    try { list = await api("/api/mcp-servers"); } catch (e) { banner("Cannot list the MCP servers: " + e.message, "error", "mcp-servers"); return; }
    banner(null, null, "mcp-servers");
    const kept = new Map([...document.querySelectorAll("#new-session-mcp-list input")].map((b) => [b.value, b.checked]));
    servers = Array.isArray(list && list.servers) ? list.servers.filter((s) => s && typeof s.name === "string") : [];
    const box = $("new-session-mcp-list");
    box.replaceChildren();
    for (const s of servers) {
      const label = el("label", "new-session-mcp-server");
      const check = el("input");
      check.type = "checkbox";
      check.value = s.name;
      check.checked = kept.has(s.name) ? kept.get(s.name) : true;
      const kind = String(s.type || "");
      label.title = kind + (s.target ? ": " + String(s.target) : "");
      label.append(check, el("span", "new-session-mcp-name", s.name), el("span", "new-session-mcp-kind", kind));
      box.appendChild(label);
    }
    $("new-session-mcp").hidden = servers.length === 0;
  }
  loadMcpServers();

  // What the form adds to POST /api/sessions: `mcpServers` only when servers are configured
  // (absent: every one, which is also what a server with none expects).
  function fill(body) {
    const dirs = $("new-session-dirs").value.split("\n").map((d) => d.trim()).filter(Boolean);
    if (dirs.length) body.additionalDirectories = dirs;
    if (servers.length) {
      body.mcpServers = [...document.querySelectorAll("#new-session-mcp-list input")]
        .filter((b) => b.checked).map((b) => b.value);
    }
    return body;
  }

  return Object.freeze({ fill, loadMcpServers });
}

// The MCP servers the agent was given (`--mcp-config`) and those left out, as the server
// describes them: name, transport and command or URL; secret values never reach the page.
export function mcpRows(mcp) {
  if (!mcp || typeof mcp !== "object") return null;
  const passed = Array.isArray(mcp.passed) ? mcp.passed : [];
  const skipped = Array.isArray(mcp.skipped) ? mcp.skipped : [];
  if (!passed.length && !skipped.length) return null;
  const box = el("div", "agent-mcp");
  box.appendChild(el("div", "agent-mcp-title", "MCP servers"));
  for (const s of passed) {
    box.appendChild(el("div", "agent-mcp-server", `${s.name} \u00b7 ${s.type} \u00b7 ${s.target}`));
  }
  for (const s of skipped) {
    box.appendChild(el("div", "agent-mcp-skipped", `${s.name} (${s.type}) not passed: ${s.reason}`));
  }
  return box;
}
