// The session lifecycle of ACP schema 1.20.0 in the page, each shown only when the session's
// agent offers it (its facts from GET /api/sessions/{id}/agent: canFork, canDelete, canLogout):
// Fork in a session row's menu (POST .../fork: a new session, "forked from" its parent in the
// list and above the transcript), "also delete the agent's copy" in the delete dialog
// (DELETE ...?agent=true), Sign out in the agent pane (POST .../logout). panels.js owns the list,
// the menu, the dialog and the pane and calls these.

import { $, el, api, banner } from "./dom.js";

const path = (id, tail) => "/api/sessions/" + encodeURIComponent(id) + (tail || "");

// A session's agent facts, or null when they cannot be read (the menu then offers no more).
async function facts(id) {
  try { return await api(path(id, "/agent")); } catch (_) { return null; }
}

// "forked from TITLE" of a listed session (its parent may be gone), or "".
export function forkedFrom(s) {
  if (!s || !s.parent || typeof s.parent !== "object") return "";
  const title = typeof s.parent.title === "string" && s.parent.title ? s.parent.title : "session " + s.parent.id;
  return "forked from " + title + (s.parent.title == null ? " (deleted)" : "");
}

// Adds Fork to a row's open menu once the agent says it can fork; `item(action, label)` builds
// a menu item like the others, `done(created)` is called with the new session.
export async function offerFork(menu, s, item, done) {
  const f = await facts(s.id);
  if (!f || f.canFork !== true || !menu.isConnected) return;
  const fork = item("fork", "Fork");
  fork.title = "A new session that starts from this one's conversation (the agent's session/fork)";
  fork.addEventListener("click", async () => {
    try {
      const created = await api(path(s.id, "/fork"), {});
      banner(null, null, "fork");
      done(created);
    } catch (e) {
      banner("Cannot fork the session: " + e.message, "error", "fork");
    }
  });
  menu.insertBefore(fork, menu.querySelector('[data-action="delete"]'));
}

// The delete dialog's "also delete the agent's copy" box, shown when the agent can delete.
export async function offerAgentDelete(s) {
  const box = $("confirm-agent");
  const check = $("confirm-agent-check");
  check.checked = false;
  box.hidden = true;
  const f = await facts(s.id);
  box.hidden = !(f && f.canDelete === true);
}

// The DELETE path the dialog's choice asks for.
export const deletePath = (s) => path(s.id, $("confirm-agent").hidden || !$("confirm-agent-check").checked ? "" : "?agent=true");

// The agent pane's Sign out button, when the agent offers logout and the user is signed in;
// `after()` reloads the pane (the session then asks for a sign-in).
export function signOutButton(id, agentFacts, after) {
  if (!agentFacts || agentFacts.canLogout !== true || agentFacts.needsAuth) return null;
  const button = el("button", "agent-sign-out", "Sign out");
  button.type = "button";
  button.title = "Sign out of the agent (its logout); the session asks for a sign-in again";
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await api(path(id, "/logout"), {});
      banner(null, null, "logout");
    } catch (e) {
      banner("Cannot sign out: " + e.message, "error", "logout");
    }
    await after();
  });
  return button;
}
