// Question cards and file diffs. A card (a permission request, a write to review, an answer a
// standing permission gave) sits inside the entry it is about: the tool call, or the engine's
// own entry for the request, so it stays with that entry whatever comes later (a reset snapshot
// included). A card whose entry is not known yet waits at the end of the transcript and moves in
// when the entry appears. Entries are windowed (only those near the viewport are drawn): an entry
// holding a card keeps its DOM while scrolled away. app.js creates the cards (createCards);
// entries.js draws every diff with fileDiff.

import { $, el, api, banner } from "./dom.js";

// Whether the entry holds a card (its DOM is then kept while it is scrolled away).
export const hasCards = (rec) => !!(rec.cards && rec.cards.childNodes.length);

const CHANGE_LABELS = { add: "new file", delete: "deleted", modify: "modified", move: "moved", copy: "copied" };

// One file of the engine's `diffs`: a header naming the change and the path, then the hunks
// as a unified diff, one element per line (its class says added, removed, context or header).
export function fileDiff(diff) {
  const change = String(diff.change || "modify");
  const box = el("div", "file-diff");
  box.dataset.change = change;
  const head = el("div", "file-diff-head");
  head.append(el("span", "change-label", CHANGE_LABELS[change] || change));
  const path = String(diff.path ?? "");
  head.append(el("span", "path", diff.oldPath ? String(diff.oldPath) + " \u2192 " + path : path));
  box.append(head);
  const body = el("pre", "diff-body");
  for (const hunk of Array.isArray(diff.hunks) ? diff.hunks : []) {
    body.append(el("span", "hunk", String(hunk.header ?? "@@") + "\n"));
    for (const line of Array.isArray(hunk.lines) ? hunk.lines : []) {
      const text = String(line);
      const cls = text[0] === "+" ? "add" : text[0] === "-" ? "del" : "ctx";
      body.append(el("span", cls, text + "\n"));
    }
  }
  if (diff.binary) body.append(el("span", "ctx", "(binary file)\n"));
  if (body.childNodes.length) box.append(body);
  return box;
}

export function createCards(ctx) {
  const cards = new Map(); // "permission:KEY" | "review:ID" -> { node, matches(rec), rec }
  let floating = 0; // cards not inside an entry

  // The entry's card box. An entry not drawn gets its DOM built for the card (app.js keeps the
  // DOM of an entry with cards while it is scrolled away, so a card keeps its state).
  function cardSlot(rec) {
    const node = ctx.nodeOf(rec);
    if (!rec.cards || rec.cards.parentNode !== node) {
      rec.cards = el("div", "cards");
      node.appendChild(rec.cards);
    }
    return rec.cards;
  }

  function attachCard(card, rec) {
    cardSlot(rec).appendChild(card.node);
    card.rec = rec;
    card.node.classList.add("anchored");
  }

  function placeCard(id, node, matches) {
    dropCard(id);
    const card = { node, matches, rec: null };
    cards.set(id, card);
    const rec = ctx.latest(matches);
    if (rec) attachCard(card, rec);
    if (!card.rec) {
      floating += 1;
      $("transcript").appendChild(node);
    }
    ctx.scrollToEnd();
    return card;
  }

  function dropCard(id) {
    const card = cards.get(id);
    if (!card) return;
    if (!card.rec) floating -= 1;
    card.node.remove();
    cards.delete(id);
  }

  // A new or changed entry takes in the waiting cards that are about it (only while any wait).
  function adopt(rec) {
    if (floating === 0) return;
    for (const card of cards.values()) {
      if (!card.rec && card.matches(rec)) {
        attachCard(card, rec);
        floating -= 1;
      }
    }
  }

  // An entry that goes away lets its cards wait again at the end.
  function release(rec) {
    if (!rec.cards) return;
    for (const card of cards.values()) {
      if (card.rec === rec) {
        card.rec = null;
        card.node.classList.remove("anchored");
        floating += 1;
        $("transcript").appendChild(card.node);
      }
    }
  }

  const toolMatch = (toolCallId) => (rec) =>
    toolCallId != null && rec.kind === "tool_call" && (rec.id === String(toolCallId) || rec.toolCallId === String(toolCallId));

  function choiceButtons(choices, onChoose) {
    const box = el("div", "choices");
    for (const [value, label, kind] of choices) {
      const b = el("button", null, label);
      b.type = "button";
      b.dataset.option = value;
      if (kind) b.dataset.kind = kind;
      b.addEventListener("click", () => {
        for (const other of box.querySelectorAll("button")) other.disabled = true;
        onChoose(value).catch((e) => {
          for (const other of box.querySelectorAll("button")) other.disabled = false;
          banner(e.message, "error");
        });
      });
      box.appendChild(b);
    }
    return box;
  }

  function showPermission(op) {
    const key = String(op.key);
    const node = el("div", "card permission-card open");
    node.dataset.permission = key;
    node.appendChild(el("div", "who", "Permission requested"));
    node.appendChild(el("div", "card-title", op.title || "The agent asks for permission"));
    const options = (Array.isArray(op.options) ? op.options : []).filter((o) => o && o.optionId != null);
    node.appendChild(choiceButtons(options.map((o) => [String(o.optionId), o.name || o.optionId, o.kind]),
      (optionId) => answerPermission(key, optionId)));
    const matches = op.toolCallId != null ? toolMatch(op.toolCallId)
      : (rec) => rec.kind === "permission" && rec.requestKey === key && rec.open;
    placeCard("permission:" + key, node, matches);
  }

  function resolvePermission(op) {
    const id = "permission:" + String(op.key);
    const card = cards.get(id);
    if (!card) return;
    if (card.rec) {
      // Inside its entry the engine's own record shows the answer from now on.
      dropCard(id);
      return;
    }
    card.node.classList.remove("open");
    card.node.querySelector(".choices")?.remove();
    card.node.appendChild(el("div", "outcome", "answered: " + (op.outcome || "done")));
  }

  async function answerPermission(key, optionId) {
    try {
      await api("/api/sessions/" + encodeURIComponent(ctx.session()) + "/permission", { key, optionId });
    } catch (e) {
      throw new Error("Permission answer failed: " + e.message);
    }
    // An "always" answer becomes a standing permission.
    ctx.answered();
  }

  // A question the server answered from a standing permission: noted in its tool call.
  function showAutoAnswer(op) {
    const node = el("div", "card auto-answer", "answered by a standing permission: " + String(op.optionId || "") + (op.title ? " (" + op.title + ")" : ""));
    placeCard("auto:" + String(op.ruleKey) + ":" + String(op.toolCallId), node, toolMatch(op.toolCallId));
  }

  const REVIEW_OUTCOMES = { accept: "accepted: written", reject: "rejected", cancelled: "cancelled by the agent", error: "failed" };

  function showReview(op) {
    const requestId = String(op.requestId);
    const path = String(op.path ?? "");
    const node = el("div", "card review-card open");
    node.dataset.review = requestId;
    node.appendChild(el("div", "who", "Write review"));
    node.appendChild(el("div", "card-title", "The agent wants to write " + path));
    // The diff is the engine's, in the entry it shows the write in (made from the same logged
    // request, so it is there before this card); the card only asks.
    node.appendChild(choiceButtons([["accept", "Accept"], ["reject", "Reject"]], async (decision) => {
      try {
        await api("/api/sessions/" + encodeURIComponent(ctx.session()) + "/review", { requestId, decision });
      } catch (e) {
        throw new Error("Review answer failed: " + e.message);
      }
    }));
    const byTool = toolMatch(op.toolCallId);
    const matches = (rec) => byTool(rec) || (!!rec.diffKeys && (rec.diffKeys.has("request:" + requestId) ||
      [...rec.diffKeys].some((k) => k === "path:" + path || k.endsWith("/" + path))));
    placeCard("review:" + requestId, node, matches);
  }

  function resolveReview(op) {
    const card = cards.get("review:" + String(op.requestId));
    if (!card) return;
    const decision = String(op.decision || "done");
    card.node.classList.remove("open");
    card.node.dataset.decision = decision;
    card.node.querySelector(".choices")?.remove();
    card.node.appendChild(el("div", "outcome", (REVIEW_OUTCOMES[decision] || decision) + (op.message ? ": " + op.message : "")));
  }

  function clear() {
    cards.clear();
    floating = 0;
  }

  return Object.freeze({
    showPermission, resolvePermission, showAutoAnswer, showReview, resolveReview, adopt, release, clear,
  });
}
