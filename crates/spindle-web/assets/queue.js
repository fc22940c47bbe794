// The prompts queued while a v1 agent's turn runs, shown above the prompt box: each with Edit
// (inline), Remove and Send now. The list is the server's (`web_queue` ops: every page of the
// session shows the same queue, kept in the session's log); this file only draws it and sends
// the user's changes (PATCH / DELETE /api/sessions/{id}/queue/{item}, POST .../send-now).
// app.js creates it (createQueue) and tells it whether a turn runs.

import { $, el, api } from "./dom.js";

export function createQueue(ctx) {
  const box = $("queue");
  const list = $("queue-list");
  const head = $("queue-head");
  let items = []; // [{id, text, position, images, acp}]
  let running = false;
  let editing = null; // the id of the item being edited
  let draftText = ""; // its text as typed so far: kept when another page changes the queue

  const route = (id, tail) => "/api/sessions/" + encodeURIComponent(ctx.session()) + "/queue/" + encodeURIComponent(id) + (tail || "");

  function showError(text) {
    const line = $("queue-error");
    line.textContent = text || "";
    line.hidden = !text;
  }

  async function change(action, path, body, method) {
    try {
      await api(path, body, method);
      showError(null);
      return true;
    } catch (e) {
      showError(action + " failed: " + e.message);
      return false;
    }
  }

  function button(label, title, onClick) {
    const b = el("button", "queue-action", label);
    b.type = "button";
    b.title = title;
    b.addEventListener("click", onClick);
    return b;
  }

  function itemNode(item) {
    const li = el("li", "queue-item");
    li.dataset.item = item.id;
    li.appendChild(el("span", "queue-position", "#" + item.position));
    if (editing === item.id) {
      const draft = el("textarea", "queue-draft");
      draft.value = draftText;
      draft.addEventListener("input", () => { draftText = draft.value; });
      draft.rows = 2;
      draft.setAttribute("aria-label", "Queued prompt " + item.position);
      const save = async () => {
        if (!draft.value.trim()) { showError("An empty prompt: remove the item instead."); return; }
        if (await change("Edit", route(item.id), { text: draft.value }, "PATCH")) { editing = null; draw(); }
      };
      draft.addEventListener("keydown", (event) => {
        if (event.isComposing) return;
        if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); save(); }
        if (event.key === "Escape") { event.preventDefault(); editing = null; draw(); }
      });
      const actions = el("div", "queue-actions");
      actions.append(
        button("Save", "Save the new text (Enter)", save),
        button("Cancel", "Keep the text as it was (Esc)", () => { editing = null; draw(); }),
      );
      li.append(draft, actions);
      queueMicrotask(() => draft.focus());
      return li;
    }
    const text = el("span", "queue-text", item.text || "(no text)");
    const extras = [];
    if (item.images) extras.push(item.images + (item.images === 1 ? " image" : " images"));
    if (item.acp) extras.push("from an ACP client");
    if (extras.length) text.appendChild(el("span", "queue-extra", " (" + extras.join(", ") + ")"));
    const actions = el("div", "queue-actions");
    const edit = button("Edit", "Change the text before it is sent", () => { editing = item.id; draftText = item.text; draw(); });
    // An ACP client's prompt is its blocks; the page does not rewrite them.
    edit.disabled = !!item.acp;
    actions.append(
      edit,
      button("Remove", "Remove it unsent", () => change("Remove", route(item.id), undefined, "DELETE")),
      button("Send now", running ? "Cancel the running turn and send this next" : "Send this now", () => change("Send now", route(item.id, "/send-now"), {})),
    );
    li.append(text, actions);
    return li;
  }

  function draw() {
    box.hidden = items.length === 0;
    if (!items.some((i) => i.id === editing)) editing = null;
    const n = items.length;
    const what = n === 1 ? "1 queued prompt" : n + " queued prompts";
    head.textContent = running
      ? what + ": sent when the turn ends, one per turn, in order."
      : what + " held: no turn is running (the last was cancelled, failed or ended with the agent). "
        + "Send now sends one; a prompt you send goes first and these follow when its turn ends.";
    box.dataset.held = running ? "false" : "true";
    list.replaceChildren(...items.map(itemNode));
  }

  // {items}: the whole queue, as the server keeps it.
  function show(next) {
    items = Array.isArray(next) ? next.filter((i) => i && typeof i.id === "string") : [];
    draw();
  }

  function setRunning(value) {
    if (running === value) return;
    running = value;
    if (items.length) draw();
  }

  function clear() {
    items = [];
    editing = null;
    showError(null);
    draw();
  }

  return Object.freeze({ show, setRunning, clear, count: () => items.length });
}
