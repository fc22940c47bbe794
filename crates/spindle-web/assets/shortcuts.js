// The page's keyboard shortcuts, in one table, and the dialog that lists them (`?`, or the
// header's "?" button) with the send-key setting. Keys were picked not to clash with the
// browser's or the text box's own: Alt+letter and Alt+arrows (Ctrl+N, Ctrl+Tab and the like
// belong to the browser), Esc only when nothing else on the page takes it (a completion list,
// the search, a dialog, a menu, a rename). `?` acts only outside text fields, where it types.
// app.js creates it (createShortcuts) and passes what each shortcut does.

import { $, el } from "./dom.js";

const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent || "");
const mod = isMac ? "Cmd" : "Ctrl";

// [keys, what they do]; keys are shown as <kbd>s, "/" between alternatives.
function table(sendKey) {
  const send = sendKey === "enter"
    ? [["Enter", "Send the prompt"], ["Shift+Enter", "Add a line to the prompt"]]
    : [[mod + "+Enter", "Send the prompt"], ["Enter", "Add a line to the prompt"]];
  return [
    ...send,
    ["Esc", "Cancel the running turn (first closes a completion list, the search, a menu or a dialog)"],
    ["Alt+N", "New session (with the agent and folder of the form)"],
    ["Alt+\u2193 / Alt+\u2191", "Next / previous session in the list"],
    ["Alt+P", "Focus the prompt"],
    [mod + "+F", "Search the whole transcript (Enter / Shift+Enter: next / previous match)"],
    ["\u2191 / \u2193", "In the / and @ completion list: choose"],
    ["Enter / Tab", "In the completion list: take the chosen one"],
    ["?", "This list (outside text fields)"],
  ];
}

const editable = (node) => !!node && (node.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(node.tagName));

export function createShortcuts(ctx) {
  const dialog = $("shortcuts-dialog");

  function fill() {
    const body = $("shortcuts-list");
    body.replaceChildren();
    for (const [keys, what] of table(ctx.sendKey())) {
      const tr = el("tr");
      const cell = el("td");
      keys.split(" / ").forEach((alternative, i) => {
        if (i) cell.append(" / ");
        cell.appendChild(el("kbd", null, alternative));
      });
      tr.append(cell, el("td", null, what));
      body.appendChild(tr);
    }
    $("send-key").value = ctx.sendKey();
  }

  function open() {
    if (dialog.open) return;
    fill();
    dialog.showModal();
  }

  $("shortcuts-open").addEventListener("click", open);
  $("send-key").addEventListener("change", () => { ctx.setSendKey($("send-key").value); fill(); });

  // Something on the page that Esc closes first.
  const escTaken = () =>
    !!document.querySelector("dialog[open]") || !$("search").hidden || !$("palette").hidden
    || !!document.querySelector(".session-menu, .session-rename");

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.isComposing) return;
    const plainAlt = event.altKey && !event.ctrlKey && !event.metaKey;
    if (event.key === "Escape" && !event.altKey && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      if (escTaken()) return;
      if (ctx.cancel()) event.preventDefault();
      return;
    }
    if (plainAlt && !event.shiftKey && event.code === "KeyN") {
      event.preventDefault();
      ctx.newSession();
      return;
    }
    if (plainAlt && !event.shiftKey && event.code === "KeyP") {
      event.preventDefault();
      ctx.focusPrompt();
      return;
    }
    if (plainAlt && !event.shiftKey && (event.key === "ArrowDown" || event.key === "ArrowUp")) {
      event.preventDefault();
      ctx.stepSession(event.key === "ArrowDown" ? 1 : -1);
      return;
    }
    if (event.key === "?" && !event.ctrlKey && !event.metaKey && !event.altKey && !editable(event.target)) {
      event.preventDefault();
      open();
    }
  });

  return Object.freeze({ open });
}
