// Checkpoints in the page: "Restore files" on each user turn that has a checkpoint (the one
// taken before that turn), a view that shows the diff first (GET .../checkpoints/N/diff: what a
// restore would change, per file with its +/- lines), Confirm or Cancel, then the outcome with
// "Undo this restore" (POST .../checkpoints/restore-K/restore); and, after the turn a restore
// followed, a line saying what was restored. What the session has comes from the server's
// `web_checkpoints` op (the notes of its log), so the page holds no checkpoint logic of its own.
// entries.js calls decorateUserTurn and decorateTurnEnd when it fills an entry; ops.js calls
// onCheckpoints.

import { el, api } from "./dom.js";
import { fileDiff } from "./cards.js";
import { session } from "./model.js";

// The last `web_checkpoints` op, for the session it came with.
let state = { session: null, turns: new Map(), restores: [] };

const path = (tail) => "/api/sessions/" + encodeURIComponent(session()) + "/checkpoints" + tail;

const current = () => (state.session === session() ? state : { turns: new Map(), restores: [] });

// {checkpoints: [{turn, at, files, skipped, skippedCount, replica}], restores: [{checkpoint,
// turn | restore, undo, written, deleted, at, afterTurn}]}
export function onCheckpoints(op) {
  const turns = new Map();
  for (const c of Array.isArray(op.checkpoints) ? op.checkpoints : []) {
    if (c && Number.isInteger(c.turn)) turns.set(c.turn, c);
  }
  state = { session: session(), turns, restores: Array.isArray(op.restores) ? op.restores.filter((r) => r && typeof r === "object") : [] };
  for (const node of document.querySelectorAll("#transcript .entry.user[data-turn]")) showButton(node, Number(node.dataset.turn));
  for (const node of document.querySelectorAll("#transcript .turn-end[data-turn]")) showRestores(node, Number(node.dataset.turn));
}

// A user message's entry: its "Restore files" button, when its turn has a checkpoint.
export function decorateUserTurn(rec) {
  if (!rec.node || !rec.view || !Number.isInteger(rec.view.turn)) return;
  rec.node.dataset.turn = String(rec.view.turn);
  showButton(rec.node, rec.view.turn);
}

// A turn's end: the restores made after that turn.
export function decorateTurnEnd(rec) {
  if (!rec.node || !rec.view || !Number.isInteger(rec.view.turn)) return;
  rec.node.dataset.turn = String(rec.view.turn);
  showRestores(rec.node, rec.view.turn);
}

function showButton(node, turn) {
  let button = node.querySelector(":scope > .restore-turn");
  const checkpoint = current().turns.get(turn);
  if (!checkpoint) { if (button) button.remove(); return; }
  if (!button) {
    button = el("button", "restore-turn", "\u21ba Restore files");
    button.type = "button";
    button.addEventListener("click", () => openRestore(String(Number(node.dataset.turn))));
    node.appendChild(button);
  }
  button.title = "Restore the files to how they were before this turn (turn " + turn + "): the changes are shown first";
  button.setAttribute("aria-label", "Restore to before this turn (turn " + turn + ")");
}

// What one restore put back, in words.
function restoredText(r) {
  const what = Number.isInteger(r.turn) ? "before turn " + r.turn : "before restore " + r.restore + " (that restore undone)";
  const counts = Number.isInteger(r.written) ? " \u00b7 " + r.written + " written, " + r.deleted + " deleted" : "";
  return "\u21ba Files restored to " + what + counts;
}

function showRestores(node, turn) {
  let box = node.querySelector(":scope > .restore-notes");
  const restores = current().restores.filter((r) => r.afterTurn === turn);
  if (!restores.length) { if (box) box.remove(); return; }
  if (!box) { box = el("div", "restore-notes"); node.appendChild(box); }
  box.replaceChildren(...restores.map((r) => {
    const line = el("div", "restore-note", restoredText(r));
    line.setAttribute("role", "note");
    if (r.at) line.title = new Date(r.at).toLocaleString();
    return line;
  }));
}

// ---- the restore view ----------------------------------------------------------------------

// The diff goes from now to the checkpoint: a file it adds comes back, one it deletes goes.
const CHANGES = { add: "comes back", delete: "removed", modify: "changed back", move: "moved back", copy: "copied" };
let dialog = null;

function view() {
  if (dialog) return dialog;
  dialog = el("dialog", "dialog restore-dialog");
  dialog.setAttribute("aria-labelledby", "restore-title");
  const body = el("div", "dialog-body");
  const title = el("h2");
  title.id = "restore-title";
  body.append(title, el("div", "restore-summary"), el("div", "restore-skipped"), el("div", "restore-files"),
    el("div", "restore-outcome"), el("div", "dialog-buttons"));
  body.querySelector(".restore-outcome").setAttribute("role", "status");
  dialog.appendChild(body);
  document.body.appendChild(dialog);
  return dialog;
}

const part = (name) => view().querySelector(".restore-" + name);

function button(label, cls, onClick) {
  const b = el("button", cls, label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

function setButtons(...buttons) {
  view().querySelector(".dialog-buttons").replaceChildren(...buttons);
}

function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }

// The view for checkpoint `id` ("N" or "restore-K"): the diff, then Confirm or Cancel.
export async function openRestore(id) {
  const d = view();
  const turn = /^\d+$/.test(id) ? Number(id) : null;
  d.querySelector("#restore-title").textContent = turn !== null ? "Restore files to before turn " + turn : "Undo the restore";
  part("summary").textContent = "Reading what would change\u2026";
  part("skipped").replaceChildren();
  part("files").replaceChildren();
  part("outcome").replaceChildren();
  setButtons(button("Cancel", "", () => d.close()));
  if (!d.open) d.showModal();
  let diff;
  try {
    diff = await api(path("/" + encodeURIComponent(id) + "/diff"));
  } catch (e) {
    part("summary").textContent = "";
    showError("Cannot show the changes: " + e.message);
    return;
  }
  showDiff(diff, turn);
  if (!diff.files.length) { setButtons(button("Close", "primary", () => d.close())); return; }
  setButtons(button("Cancel", "", () => d.close()), button("Restore", "danger", () => confirmRestore(id)));
}

function showDiff(diff, turn) {
  const files = Array.isArray(diff.files) ? diff.files : [];
  const counts = {};
  for (const f of files) counts[f.change] = (counts[f.change] || 0) + 1;
  const parts = Object.entries(counts).map(([change, n]) => n + " " + (CHANGES[change] || change));
  part("summary").textContent = files.length
    ? plural(files.length, "file", "files") + " would change (" + parts.join(", ") + ") \u00b7 +" + (diff.added || 0) + "\u00a0\u2212" + (diff.removed || 0) + "\u00a0lines"
      + (diff.filesNotShown ? " \u00b7 " + plural(diff.filesNotShown, "more file", "more files") + " not shown" : "")
    : "The files are as they were: nothing to restore.";
  const checkpoint = turn !== null ? current().turns.get(turn) : null;
  if (checkpoint && checkpoint.skippedCount) {
    const list = el("ul");
    for (const s of checkpoint.skipped || []) list.append(el("li", null, String(s.path) + " (" + String(s.why) + ")"));
    part("skipped").replaceChildren(el("p", null, "Left out of this checkpoint, and never touched by a restore: " + plural(checkpoint.skippedCount, "file", "files")), list);
  }
  part("files").replaceChildren(...files.map((f) => {
    const box = fileDiff(f);
    const label = box.querySelector(".change-label");
    if (label) label.textContent = CHANGES[f.change] || String(f.change);
    const head = box.querySelector(".file-diff-head");
    if (head) head.append(el("span", "restore-counts", "+" + (f.added || 0) + " \u2212" + (f.removed || 0)));
    return box;
  }));
}

function showError(text) {
  const alert = el("p", "restore-error", text);
  alert.setAttribute("role", "alert");
  part("outcome").replaceChildren(alert);
  setButtons(button("Close", "primary", () => view().close()));
}

async function confirmRestore(id) {
  const d = view();
  for (const b of d.querySelectorAll(".dialog-buttons button")) b.disabled = true;
  let done;
  try {
    done = await api(path("/" + encodeURIComponent(id) + "/restore"), {});
  } catch (e) {
    showError("Nothing was restored: " + e.message);
    return;
  }
  part("summary").replaceChildren();
  part("skipped").replaceChildren();
  part("files").replaceChildren();
  part("outcome").replaceChildren(el("p", "restore-done", restoredText(done).replace("\u21ba ", "") + "."),
    el("p", "muted", "The files as they were just before this restore were kept first: \u201cUndo this restore\u201d puts them back."));
  d.querySelector("#restore-title").textContent = "Restored";
  setButtons(button("Close", "", () => d.close()), button("Undo this restore", "primary", () => openRestore(String(done.undo))));
}
