// Who the page is signed in as (`GET /api/me`, `spindle serve --users`): the header names them,
// `body[data-role]` lets the style offer only what their role may do (the server refuses the rest
// anyway: roles.rs), and prompts and answers name their author when it is someone else.

import { $, api } from "./dom.js";

export const me = { name: null, role: "admin" };

export async function loadMe() {
  let who;
  try { who = await api("/api/me"); } catch (_) { return; }
  if (!who || typeof who.name !== "string") return;
  me.name = who.name;
  me.role = String(who.role || "observer");
  document.body.dataset.role = me.role;
  if (me.role === "observer") {
    // The mode and options stay visible but cannot be changed (not by keyboard either).
    const bar = $("session-bar");
    const inert = () => { for (const select of bar.querySelectorAll("select")) select.disabled = true; };
    new MutationObserver(inert).observe(bar, { childList: true, subtree: true });
    inert();
  }
  // The local admin of a server without users is everyone: nothing to say.
  const badge = $("me");
  if (badge && me.name !== "local") {
    badge.textContent = me.name;
    badge.title = "Signed in as " + me.name + " (" + me.role + ")";
    badge.dataset.role = me.role;
    badge.hidden = false;
  }
}

// "You" for the signed-in user's own prompts (and every prompt without an author).
export const authorLabel = (author) => (!author || author === me.name ? "You" : String(author));
