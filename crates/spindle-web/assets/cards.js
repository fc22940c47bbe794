// Question cards and file diffs. A card (a permission request, a write to review, an answer a
// standing permission gave) sits inside the entry it is about: the tool call, or the engine's
// own entry for the request, so it stays with that entry whatever comes later (a reset snapshot
// included). A card whose entry is not known yet waits at the end of the transcript and moves in
// when the entry appears. Entries are windowed (only those near the viewport are drawn): an entry
// holding a card keeps its DOM while scrolled away. app.js creates the cards (createCards);
// entries.js draws every diff with fileDiff.

import { $, el, api, banner } from "./dom.js";
import { authorLabel } from "./people.js";

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
        // `false`: nothing was sent (the card said why); the choices stay open.
        onChoose(value).then((sent) => {
          if (sent === false) for (const other of box.querySelectorAll("button")) other.disabled = false;
        }, (e) => {
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
    card.node.appendChild(el("div", "outcome", "answered: " + (op.outcome || "done") + answeredBy(op)));
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

  // ---- elicitation: a form or a URL the agent asks about (`web_elicitation`) ----
  const ELICITATION_OUTCOMES = { accept: "answered", decline: "declined", cancel: "cancelled",
    cancelled: "withdrawn by the agent", complete: "completed" };

  // One input per field, filled with its default; `read()` gives [value, error] (value undefined:
  // no answer). The checks are the server's (spindle-host's form model), which checks again.
  function elicitationField(field) {
    const box = el("div", "elicitation-field");
    const label = el("label", "field-label", String(field.title ?? field.name) + (field.required ? " *" : ""));
    box.appendChild(label);
    if (field.description) box.appendChild(el("div", "field-help", field.description));
    const error = el("div", "field-error");
    let read;
    const id = "elicit-" + Math.random().toString(36).slice(2);
    const kind = field.kind;
    if (kind === "boolean") {
      const input = el("input");
      input.type = "checkbox";
      input.id = id;
      input.checked = field.default === true;
      label.htmlFor = id;
      box.insertBefore(input, label);
      read = () => [input.checked, null];
    } else if (kind === "choice") {
      const select = el("select");
      select.id = id;
      label.htmlFor = id;
      select.appendChild(el("option", null, field.required ? "(choose)" : "(none)")).value = "";
      for (const o of field.options || []) {
        const option = el("option", null, o.title);
        option.value = o.value;
        if (o.value === field.default) option.selected = true;
        select.appendChild(option);
      }
      box.appendChild(select);
      read = () => [select.value === "" ? undefined : select.value, null];
    } else if (kind === "multi") {
      const list = el("div", "field-options");
      const chosen = new Set(field.default || []);
      const boxes = (field.options || []).map((o) => {
        const item = el("label", "field-option");
        const input = el("input");
        input.type = "checkbox";
        input.value = o.value;
        input.checked = chosen.has(o.value);
        item.appendChild(input);
        item.appendChild(document.createTextNode(" " + o.title));
        list.appendChild(item);
        return input;
      });
      box.appendChild(list);
      read = () => {
        const values = boxes.filter((b) => b.checked).map((b) => b.value);
        if (values.length === 0) return [undefined, null];
        if (field.minItems != null && values.length < field.minItems) return [values, "choose at least " + field.minItems];
        if (field.maxItems != null && values.length > field.maxItems) return [values, "choose at most " + field.maxItems];
        return [values, null];
      };
    } else if (kind === "unsupported") {
      box.appendChild(el("div", "field-help", "A field of type " + JSON.stringify(field.type) + ", which the page cannot show."));
      read = () => [undefined, field.required ? "cannot be answered here" : null];
    } else {
      const input = el("input");
      input.id = id;
      label.htmlFor = id;
      const numeric = kind === "number" || kind === "integer";
      input.type = numeric ? "number" : "text";
      if (numeric) input.step = kind === "integer" ? "1" : "any";
      if (field.maxLength != null) input.maxLength = field.maxLength;
      if (field.format) input.placeholder = { email: "name@example.org", uri: "https://…", date: "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SSZ" }[field.format] || "";
      if (field.default != null) input.value = String(field.default);
      box.appendChild(input);
      read = () => {
        const text = input.value.trim();
        if (text === "") return [undefined, null];
        if (numeric) {
          const n = Number(text);
          if (!Number.isFinite(n)) return [text, "not a number"];
          if (kind === "integer" && !Number.isInteger(n)) return [text, "not a whole number"];
          if (field.minimum != null && n < field.minimum) return [n, "at least " + field.minimum];
          if (field.maximum != null && n > field.maximum) return [n, "at most " + field.maximum];
          return [n, null];
        }
        const length = [...text].length;
        if (field.minLength != null && length < field.minLength) return [text, "at least " + field.minLength + " characters"];
        if (field.maxLength != null && length > field.maxLength) return [text, "at most " + field.maxLength + " characters"];
        return [text, formatError(field.format, text)];
      };
    }
    box.appendChild(error);
    // A corrected field drops its old complaint at once.
    const fresh = () => { error.textContent = ""; box.classList.remove("invalid"); };
    box.addEventListener("input", fresh);
    box.addEventListener("change", fresh);
    return { node: box, name: field.name, required: !!field.required, read, error };
  }

  function formatError(format, text) {
    const date = (s) => {
      const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
      if (!m) return false;
      const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
      return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
    };
    switch (format) {
      case "email": return /^[^\s@]+@[^\s@.][^\s@]*\.[^\s@]*[^\s@.]$/.test(text) ? null : "not an email address";
      case "uri": return /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(text) ? null : "not a URI (scheme:rest)";
      case "date": return date(text) ? null : "not a date (YYYY-MM-DD)";
      case "date-time": {
        const [d, t] = text.split(/[Tt]/);
        return t !== undefined && date(d) && /^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.test(t)
          ? null : "not a date and time (YYYY-MM-DDTHH:MM:SS)";
      }
      default: return null;
    }
  }

  function showElicitation(op) {
    const key = String(op.key);
    const view = op.elicitation || {};
    const node = el("div", "card elicitation-card open");
    node.dataset.elicitation = key;
    node.appendChild(el("div", "who", "The agent asks"));
    node.appendChild(el("div", "card-title", view.message || "(no message)"));
    let fields = [];
    if (view.mode === "form" && view.form) {
      if (view.form.title) node.appendChild(el("div", "elicitation-form-title", view.form.title));
      if (view.form.description) node.appendChild(el("div", "field-help", view.form.description));
      const form = el("form", "elicitation-form");
      form.addEventListener("submit", (e) => e.preventDefault());
      fields = (view.form.fields || []).map(elicitationField);
      for (const f of fields) form.appendChild(f.node);
      node.appendChild(form);
    } else if (view.mode === "url" && view.url) {
      const box = el("div", "elicitation-url");
      const host = el("div", "url-host");
      if (view.url.host) {
        host.appendChild(document.createTextNode("It leads to "));
        host.appendChild(el("strong", null, view.url.host));
      } else {
        host.textContent = "Not an http(s) URL with a host: do not visit it.";
        host.classList.add("unsafe");
      }
      box.appendChild(host);
      box.appendChild(el("code", "url-text", view.url.url));
      box.appendChild(el("div", "field-help", "Spindle does not open it. Copy it into a browser yourself if you trust that host."));
      node.appendChild(box);
    } else {
      node.appendChild(el("div", "field-help", "A kind of question the page cannot show (" + String(view.unsupportedMode ?? "") + ")."));
    }
    for (const d of view.diagnostics || []) node.appendChild(el("div", "elicitation-note", "note: " + d));
    const actions = [];
    if (view.mode === "form") actions.push(["accept", "Submit"]);
    if (view.mode === "url") actions.push(["accept", "Done there"]);
    actions.push(["decline", "Decline"], ["cancel", "Cancel"]);
    node.appendChild(choiceButtons(actions, async (action) => {
      let content;
      if (action === "accept" && view.mode === "form") {
        content = {};
        const wrong = [];
        for (const f of fields) {
          const [value, problem] = f.read();
          const message = problem || (value === undefined && f.required ? "required" : null);
          f.error.textContent = message || "";
          f.node.classList.toggle("invalid", !!message);
          if (message) wrong.push(f.name + ": " + message);
          else if (value !== undefined) content[f.name] = value;
        }
        if (wrong.length) {
          node.querySelector(".elicitation-field.invalid input, .elicitation-field.invalid select")?.focus();
          return false;
        }
      }
      try {
        await api("/api/sessions/" + encodeURIComponent(ctx.session()) + "/elicitation", { key, action, content });
      } catch (e) {
        throw new Error("The answer was not taken: " + e.message);
      }
    }));
    // A question from inside a tool call (an MCP server's, relayed) sits in that call, like a
    // permission card; the others wait at the end of the transcript.
    placeCard("elicitation:" + key, node, view.toolCallId != null ? toolMatch(view.toolCallId) : () => false);
  }

  // Who answered, when the server names them (`--users`): "You" for the signed-in user.
  const answeredBy = (op) => (op.by ? " (" + authorLabel(op.by) + ")" : "");

  function resolveElicitation(op) {
    const card = cards.get("elicitation:" + String(op.key));
    if (!card) return;
    const action = String(op.action || "done");
    card.node.classList.remove("open");
    card.node.dataset.action = action;
    for (const part of card.node.querySelectorAll(".choices, .elicitation-form")) part.remove();
    card.node.appendChild(el("div", "outcome", (ELICITATION_OUTCOMES[action] || action) + answeredBy(op)));
  }

  function clear() {
    cards.clear();
    floating = 0;
  }

  return Object.freeze({
    showPermission, resolvePermission, showAutoAnswer, showReview, resolveReview, showElicitation,
    resolveElicitation, adopt, release, clear,
  });
}
