// How one timeline entry looks: its DOM is built from the page's record of it (the entry view
// the server sent last, and its text), only while the entry is near the viewport (see
// window.js); what the cards need to find an entry (tool call id, request key, diff keys) is
// kept on the record itself, so that an entry without DOM can still be found.

import { el, api } from "./dom.js";
import { authorLabel } from "./people.js";
import { fileDiff } from "./cards.js";
import { drawThumbnail } from "./composer.js";
import { streaming } from "./markdown.js";
import { session } from "./model.js";
import { decorateUserTurn, decorateTurnEnd } from "./checkpoints.js";

export function createEntries({ changed, wantWhole }) {
  // How much of one entry's text is drawn at most (the rest on request: "Show all"), so that
  // one drawn entry costs a bounded DOM and layout whatever its length.
  const DRAWN_LIMIT = 64 * 1024;
  // The last part of a clipped message drawn below the note (it grows while the message streams).
  const TAIL_SHOWN = 4 * 1024;
  // The first part of a message drawn clipped when its entry is built (a message that grows past
  // DRAWN_LIMIT while drawn keeps what is drawn as its first part): building the DOM of 64 KiB of
  // markdown and laying it out would be one long task when it comes into view.
  const HEAD_SHOWN = 16 * 1024;
  // Entries whose text streams: markdown for messages, plain text for the rest.
  const MARKDOWN_KINDS = new Set(["user_message", "agent_message"]);
  // Terminal output is shown with its control characters made visible (ESC as U+241B, ...),
  // one character for one, so UTF-16 offsets of truncate_text still hold.
  const TERMINAL_KINDS = new Set(["terminal", "tool_call"]);

  // ---- an entry's text as the page holds it ----------------------------------------------
  // A text of up to KEEP_WHOLE characters is held whole (`rec.text`). A longer one (a long
  // message or output, usually while it streams) is held as much as can be drawn: its first
  // DRAWN_LIMIT characters (`rec.long.head`), its last DRAWN_LIMIT to 2 x DRAWN_LIMIT
  // (`rec.text`), its length, and a hash of the whole text (FNV-1a over UTF-16 units, kept up to
  // date on every append) so that what the page applied can still be checked against the
  // server's text. The middle stays on the server ("Show all" fetches it). Every change bumps
  // `rec.version` (what showText compares).
  const KEEP_WHOLE = 2 * DRAWN_LIMIT + TAIL_SHOWN;
  const FNV_OFFSET = 0x811c9dc5;
  function hashText(h, s) {
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }
  // A copy that shares no memory with a longer string (a slice of a string may keep all of it).
  const own = (s) => (s.length < 16 ? s : (" " + s).slice(1));
  const lengthOf = (rec) => (rec.long ? rec.long.length : rec.text.length);
  // The first `n` (at most DRAWN_LIMIT + 1) and the last `n` (at most DRAWN_LIMIT) characters.
  const headOf = (rec, n) => (rec.long ? rec.long.head : rec.text).slice(0, n);
  const tailOf = (rec, n) => rec.text.slice(Math.max(0, rec.text.length - n));
  // The hash of the whole text (computed for a text held whole).
  const hashOf = (rec) => (rec.long ? rec.long.hash : hashText(FNV_OFFSET, rec.text));

  function setText(rec, text) {
    rec.version = (rec.version || 0) + 1;
    rec.long = null;
    if (text.length > KEEP_WHOLE && !rec.expanded) clipText(rec, text);
    else rec.text = text;
  }

  function clipText(rec, text) {
    rec.long = { length: text.length, head: own(text.slice(0, DRAWN_LIMIT + 1)), hash: hashText(FNV_OFFSET, text) };
    rec.text = own(text.slice(text.length - DRAWN_LIMIT));
  }

  function appendText(rec, more) {
    rec.version = (rec.version || 0) + 1;
    if (!rec.long) {
      rec.text += more;
      if (rec.text.length > KEEP_WHOLE && !rec.expanded) clipText(rec, rec.text);
      return;
    }
    rec.long.length += more.length;
    rec.long.hash = hashText(rec.long.hash, more);
    rec.text += more;
    if (rec.text.length > 2 * DRAWN_LIMIT) rec.text = own(rec.text.slice(rec.text.length - DRAWN_LIMIT));
  }

  function shown(rec, text) {
    if (!TERMINAL_KINDS.has(rec.kind)) return text;
    return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, (c) =>
      c === "\u007f" ? "\u2421" : String.fromCharCode(0x2400 + c.charCodeAt(0)));
  }

  // What the cards match an entry by, from its view alone (no DOM needed).
  function facts(rec) {
    const view = rec.view || {};
    if (rec.kind === "tool_call") {
      const tc = view.toolCall && typeof view.toolCall === "object" ? view.toolCall : {};
      rec.toolCallId = tc.toolCallId != null ? String(tc.toolCallId) : rec.id;
    }
    if (rec.kind === "permission") {
      const raw = view.raw && typeof view.raw === "object" ? view.raw : {};
      const o = raw.permission ? raw.permission.outcome : null;
      rec.requestKey = raw.permission ? JSON.stringify(raw.permission.requestId) : null;
      rec.open = !o;
    }
    rec.diffKeys = null;
    if (Array.isArray(view.diffs)) {
      rec.diffKeys = new Set();
      for (const diff of shownDiffs(view.diffs)) {
        if (diff.path != null) rec.diffKeys.add("path:" + String(diff.path));
        const write = diff.write && typeof diff.write === "object" ? diff.write : null;
        if (write && write.requestId != null) rec.diffKeys.add("request:" + JSON.stringify(write.requestId));
      }
    }
  }

  // Builds the entry's DOM (record fields node, head, body, extra, ...). Called when the entry
  // comes near the viewport; dropped again by `unbuild` when it leaves.
  function build(rec) {
    const kind = rec.kind;
    if (rec.of) {
      buildMirror(rec);
    } else if (kind === "turn_end") {
      rec.node = el("div", "turn-end");
      rec.node.setAttribute("role", "note");
      rec.head = el("span", "turn-end-label");
      rec.extra = el("span", "turn-end-detail");
      rec.node.append(el("span", "turn-end-mark"), rec.head, rec.extra);
      rec.body = null;
    } else if (kind === "agent_thought" || kind === "plan_text") {
      rec.node = el("div", kind === "agent_thought" ? "thought" : "plan-text");
      rec.body = document.createTextNode("");
      rec.node.appendChild(rec.body);
    } else if (kind === "boundary") {
      rec.node = el("div", "divider");
      rec.head = el("span", "label");
      rec.node.appendChild(rec.head);
      rec.body = null;
    } else if (kind === "plan") {
      rec.node = el("div", "plan-entry");
      rec.head = el("ol");
      rec.node.appendChild(rec.head);
    } else {
      const cls = kind === "user_message" ? "user" : kind === "agent_message" ? "agent" : kind === "tool_call" ? "tool" : kind;
      rec.node = el("article", "entry " + cls);
      rec.head = el(kind === "tool_call" ? "button" : "div", kind === "tool_call" ? "who tool-head" : "who");
      rec.node.appendChild(rec.head);
      if (kind === "tool_call") {
        rec.head.type = "button";
        rec.head.addEventListener("click", () => toggleTool(rec));
      }
      if (kind === "agent_message") {
        rec.copy = copyButton("Copy message", () => messageText(rec));
        rec.copy.classList.add("copy-message");
        rec.node.appendChild(rec.copy);
      }
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
      if (kind === "tool_call") {
        // One line (kind, title, status) that opens the call's content, diffs and terminal
        // (`rec.toolBody`); cards (a permission asked) go after it, always shown.
        rec.toolBody = el("div", "tool-body");
        rec.toolBody.id = "tool-body-" + (++toolBodies);
        rec.head.setAttribute("aria-controls", rec.toolBody.id);
        rec.toolBody.appendChild(rec.extra);
        rec.node.appendChild(rec.toolBody);
        // A tool call's text is the output of its display-only terminal (`_meta.terminal_*`);
        // the box shows once the entry has a terminal.
        rec.term = el("div", "tool-terminal");
        const pre = el("pre", "terminal-output");
        rec.body = document.createTextNode("");
        pre.appendChild(rec.body);
        rec.termExit = el("div", "terminal-exit");
        rec.term.append(pre, rec.termExit);
        rec.term.hidden = true;
        rec.toolBody.appendChild(rec.term);
      } else {
        rec.node.appendChild(rec.extra);
      }
    }
    rec.node.dataset.entryId = rec.id;
    rec.node.dataset.kind = kind;
    rec.node.dataset.index = String(rec.index);
    rec.shownText = null;
    rec.shownVersion = null;
    rec.renderer = null;
    rec.attachmentSignature = null;
    fill(rec);
    showText(rec);
  }

  // Drops the entry's DOM (it left the viewport). Its record keeps everything else.
  function unbuild(rec) {
    if (rec.node) rec.node.remove();
    for (const key of ["node", "head", "body", "extra", "term", "termExit", "toolBody", "copy", "attachments", "renderer", "shownText", "cards", "treeAsked", "clip", "clipped", "shownVersion"]) rec[key] = null;
    rec.attachmentSignature = null;
  }

  // Brings the entry's text on screen: plain text appended (or replaced after a cut), markdown
  // re-rendered incrementally. Once per frame at most (the caller coalesces the text ops).
  function showText(rec) {
    if (!rec.node) return;
    if (rec.of) { showMirrorText(rec); return; }
    if (rec.kind === "boundary") { fillBoundary(rec); return; }
    if (!rec.body || rec.shownVersion === rec.version) return;
    rec.shownVersion = rec.version;
    const length = lengthOf(rec);
    // Expanded: drawn whole once the whole text is here (until then, clipped).
    const long = length > DRAWN_LIMIT && !(rec.expanded && !rec.long);
    if (rec.body.nodeType === Node.TEXT_NODE) {
      const before = rec.shownText;
      if (long) {
        // Output: its last part is what matters.
        rec.body.data = shown(rec, tailOf(rec, DRAWN_LIMIT));
        clipNote(rec, rec.body.parentNode, length - DRAWN_LIMIT, "beforebegin");
        rec.shownText = null;
        return;
      }
      const text = rec.text;
      if (rec.clip) {
        rec.clip.remove();
        rec.clip = null;
        rec.body.data = shown(rec, text);
      } else if (before !== null && text.startsWith(before)) rec.body.appendData(shown(rec, text.slice(before.length)));
      else rec.body.data = shown(rec, text);
      rec.shownText = text;
      return;
    }
    if (long) {
      showClipped(rec, length);
      rec.shownText = null;
    } else {
      if (rec.clipped) { rec.body.replaceChildren(); rec.clipped = null; rec.renderer = null; rec.shownText = null; }
      showMarkdown(rec, rec.text);
      rec.shownText = rec.text;
    }
  }

  function showMarkdown(rec, text) {
    if (!rec.renderer) rec.renderer = streaming(rec.body);
    if (rec.shownText !== null && !text.startsWith(rec.shownText)) rec.renderer.truncated();
    rec.renderer.update(text);
    codeCopies(rec.body);
  }

  // A message longer than DRAWN_LIMIT: its first part as markdown (HEAD_SHOWN, up to a line end,
  // or what was drawn when it grew past the limit), a note
  // saying how much is not drawn, and its last part as plain text (it grows while it streams).
  function showClipped(rec, length) {
    const before = rec.shownText;
    if (!rec.clipped && rec.renderer && !rec.renderer.hasTree && before && before.length > HEAD_SHOWN) {
      // The message grew past the limit while drawn: what is drawn stays as its start (drawing
      // its first part again would be one long frame), the note and its end go below.
      rec.renderer = null;
      const tail = el("div", "md-tail");
      rec.body.append(tail);
      rec.clipped = { headCut: before.length, tail };
    }
    if (!rec.clipped) {
      rec.body.replaceChildren();
      rec.renderer = null;
      const start = headOf(rec, HEAD_SHOWN + 1);
      const newline = start.lastIndexOf("\n", HEAD_SHOWN);
      const headCut = newline > HEAD_SHOWN / 2 ? newline + 1 : HEAD_SHOWN;
      const head = el("div", "md-head");
      const tail = el("div", "md-tail");
      rec.body.append(head, tail);
      streaming(head).update(start.slice(0, headCut));
      rec.clipped = { headCut, tail };
    }
    const { headCut, tail } = rec.clipped;
    const tailFrom = Math.max(headCut, length - TAIL_SHOWN);
    tail.textContent = tailOf(rec, length - tailFrom);
    clipNote(rec, tail, tailFrom - headCut, "beforebegin");
  }

  // 1234567 -> "1,234,567" (toLocaleString costs tens of milliseconds on its first call: ICU).
  function grouped(n) {
    return String(Math.max(0, Math.floor(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }

  // The note over a clipped text: how many characters are not drawn, and a button to draw all.
  function clipNote(rec, anchor, hidden, where) {
    if (!rec.clip) {
      rec.clip = el("div", "clip-note");
      rec.clip.append(el("span", "clip-count"));
      const all = el("button", "clip-all", "Show all");
      all.type = "button";
      all.addEventListener("click", () => expand(rec));
      rec.clip.append(all);
      anchor.insertAdjacentElement(where, rec.clip);
    }
    const note = grouped(hidden) + " characters not drawn";
    if (rec.clip.firstChild.textContent !== note) rec.clip.firstChild.textContent = note;
  }

  // Draws the whole text of a clipped entry (the reader asked, or the search needs it).
  // (A text held clipped is asked for whole first: `wantWhole`; drawn whole once it is here.)
  function expand(rec) {
    if (rec.expanded) return;
    rec.expanded = true;
    if (rec.long) wantWhole(rec);
    if (!rec.node) return;
    if (!rec.long && rec.clip) { rec.clip.remove(); rec.clip = null; }
    rec.shownText = null;
    rec.shownVersion = null;
    showText(rec);
    changed(rec);
  }

  // Whether `offset` of the entry's text is drawn now.
  function drawnAt(rec, offset) {
    const length = lengthOf(rec);
    if ((rec.expanded && !rec.long) || length <= DRAWN_LIMIT) return true;
    if (rec.body && rec.body.nodeType === Node.TEXT_NODE) return offset >= length - DRAWN_LIMIT;
    const headCut = rec.clipped ? rec.clipped.headCut : HEAD_SHOWN / 2;
    return offset < headCut || offset >= Math.max(headCut, length - TAIL_SHOWN);
  }

  function fillBoundary(rec) {
    const view = rec.view || {};
    const reason = view.reason === "compaction" ? "context compacted" : "context cleared";
    const status = view.reason === "compaction" && view.status ? " (" + view.status + ")" : "";
    rec.head.textContent = reason + status + (rec.text ? ": " + rec.text : "");
    rec.node.dataset.reason = view.reason || "clear";
  }

  // Non-text parts of an entry, from its view.
  function fill(rec) {
    if (!rec.node) return;
    if (rec.of) { fillMirror(rec); return; }
    const kind = rec.kind;
    const entry = rec.view || {};
    if (kind === "turn_end") {
      fillTurnEnd(rec, entry);
    } else if (kind === "user_message") {
      rec.head.textContent = authorLabel(entry.author);
      rec.node.classList.toggle("pending", !!entry.pending);
      rec.node.classList.toggle("rejected", !!entry.rejected);
      showAttachments(rec, entry.attachments);
      decorateUserTurn(rec);
    } else if (kind === "agent_message") {
      rec.head.textContent = "Agent";
      showAttachments(rec, entry.attachments);
    } else if (kind === "boundary") {
      fillBoundary(rec);
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
    } else if (kind !== "agent_thought" && kind !== "plan_text") {
      rec.head.textContent = kind === "unknown" ? "Unrecognised update" : kind;
      if (Array.isArray(entry.diffs)) {
        // An entry of its own that shows file changes (a write outside any tool call).
        rec.extra.replaceChildren(...diffBlocks(entry.diffs));
        return;
      }
      const raw = entry.raw !== undefined ? entry.raw : entry;
      let text = "";
      try { text = JSON.stringify(raw).slice(0, 2000); } catch (_) { text = ""; }
      rec.extra.replaceChildren(el("pre", null, text));
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

  // The diffs an entry draws: a client write (`write`: its request and status) usually repeats
  // the diff the agent showed on the same tool call: that one is then drawn once, as the write.
  function shownDiffs(diffs) {
    const list = diffs.filter((d) => d && typeof d === "object");
    const hunksOf = (d) => JSON.stringify([d.path, d.hunks]);
    const written = new Set(list.filter((d) => d.write).map(hunksOf));
    return list.filter((d) => !(written.size && !d.write && written.has(hunksOf(d))));
  }

  // Every diff of an entry, one block per file; a diff of a client write carries its outcome
  // (written, rejected, ...) once the client answered.
  function diffBlocks(diffs) {
    return shownDiffs(diffs).map((diff) => {
      const write = diff.write && typeof diff.write === "object" ? diff.write : null;
      const block = fileDiff(diff);
      const status = write ? write.status ?? write.outcome : null;
      if (typeof status === "string" && status) {
        const label = el("span", "write-outcome", status);
        label.dataset.outcome = status;
        block.firstChild.appendChild(label);
      }
      return block;
    });
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
        // Room for the thumbnail before it is decoded, so the entry's measured height holds.
        figure.style.minHeight = "104px";
        rec.attachments.appendChild(figure);
        let bytes;
        try { bytes = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0)); } catch (_) { bytes = null; }
        const fail = () => figure.appendChild(el("span", "chip", "image (" + String(a.mimeType || "unknown type") + ")"));
        if (!bytes) { fail(); continue; }
        createImageBitmap(new Blob([bytes], { type: String(a.mimeType || "") }))
          .then((bitmap) => figure.prepend(drawThumbnail(bitmap, 96)))
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
    const status = String(tc.status || "pending");
    rec.node.dataset.status = status;
    const toolName = typeof entry.toolName === "string" ? entry.toolName : "";
    const kindName = typeof tc.kind === "string" && tc.kind ? tc.kind : "other";
    const kindLabel = el("span", "tool-kind", TOOL_KINDS[kindName] || kindName);
    kindLabel.dataset.toolKind = kindName;
    const badge = el("span", "status", STATUS_LABELS[status] || status);
    badge.dataset.status = status;
    rec.head.replaceChildren(
      el("span", "tool-chevron"),
      kindLabel,
      el("span", "title", tc.title || toolName || "Tool call"),
      el("span", "tool-name", toolName && toolName !== tc.title ? toolName : ""),
      badge,
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
    parts.push(...diffBlocks(diffs || []));
    const permission = entry.permission;
    if (permission && typeof permission === "object") {
      const o = permission.outcome;
      const answer = o === null || o === undefined ? "waiting for an answer" : String(o.optionId || o.outcome || "answered");
      const by = permission.answeredBy ? " (" + authorLabel(permission.answeredBy) + ")" : "";
      parts.push(el("div", "outcome permission-record", "permission: " + answer + by));
    }
    rec.extra.replaceChildren(...parts);
    rec.term.hidden = !terminal;
    rec.termExit.textContent = terminal ? exitText(terminal.exitStatus) : "";
    if (terminal && terminal.cwd) rec.term.title = "cwd: " + String(terminal.cwd);
    // Open by itself while it asks for attention (failed, a permission waiting: its diff is what
    // the question is about) or runs a terminal; the reader's own choice wins.
    const waiting = !!(permission && typeof permission === "object" && (permission.outcome === null || permission.outcome === undefined));
    // (A client write waiting for review: its diff is what the review card asks about.)
    const reviewing = (diffs || []).some((d) => d && d.write && typeof d.write === "object" && d.write.status === "pending");
    rec.toolAttention = status === "failed" || waiting || reviewing;
    rec.toolAuto = rec.toolAttention || (!!terminal && (status === "in_progress" || status === "pending"));
    rec.toolEmpty = parts.length === 0 && !terminal;
    showToolOpen(rec);
  }

  // Whether the tool call's body is shown, and the head says so.
  function toolOpen(rec) {
    return !rec.toolEmpty && (rec.toolOpen !== undefined ? rec.toolOpen : !!rec.toolAuto);
  }

  function showToolOpen(rec) {
    if (!rec.node) return;
    const open = toolOpen(rec);
    rec.toolBody.hidden = !open;
    rec.head.setAttribute("aria-expanded", String(open));
    rec.head.disabled = !!rec.toolEmpty;
    rec.node.classList.toggle("open", open);
    rec.node.classList.toggle("attention", !!rec.toolAttention);
  }

  function toggleTool(rec) {
    rec.toolOpen = !toolOpen(rec);
    showToolOpen(rec);
    changed(rec);
  }

  // ---- the end of a turn (the engine's `turn_end` entry) ------------------------------------

  // The engine's outcome names -> what the line says; an error adds its message.
  const OUTCOMES = {
    done: "Done", cancelled: "Cancelled", refused: "Refused by the agent",
    max_tokens: "Stopped: token limit reached", max_turn_requests: "Stopped: request limit reached",
    error: "Error", other: "Stopped", unreported: "Ended",
  };

  function fillTurnEnd(rec, entry) {
    const outcome = String(entry.outcome || "unreported");
    rec.node.dataset.outcome = outcome;
    rec.head.textContent = OUTCOMES[outcome] || outcome;
    const error = entry.error && typeof entry.error === "object" ? entry.error : null;
    let detail = "";
    if (error) detail = String(error.message || "error") + (error.code != null ? " (code " + String(error.code) + ")" : "");
    // (The stop reason is left out where the label says it already.)
    else if (entry.stopReason && String(entry.stopReason) !== outcome) detail = String(entry.stopReason);
    rec.extra.textContent = detail;
    rec.extra.hidden = !detail;
    rec.node.title = "Turn " + String(rec.view && rec.view.turn != null ? rec.view.turn : "") + ": " + rec.head.textContent + (detail ? " - " + detail : "");
    decorateTurnEnd(rec);
  }

  // ---- tool calls: one line -----------------------------------------------------------------

  // ACP tool kinds -> the short label of the line (an unknown kind is shown as sent).
  const TOOL_KINDS = {
    read: "Read", edit: "Edit", delete: "Delete", move: "Move", search: "Search", execute: "Run",
    think: "Think", fetch: "Fetch", switch_mode: "Mode", other: "Tool",
  };
  const STATUS_LABELS = { pending: "pending", in_progress: "running", completed: "done", failed: "failed", cancelled: "cancelled" };
  let toolBodies = 0; // ids for aria-controls

  // ---- copy buttons -------------------------------------------------------------------------

  // A button that copies `text()` (a string or a Promise of one); it says "Copied" a moment.
  // Its label is drawn by CSS (`data-state`), so the entry's text stays the message's.
  function copyButton(label, text) {
    const button = el("button", "copy-button");
    button.type = "button";
    button.title = label;
    button.setAttribute("aria-label", label);
    button.addEventListener("click", async (event) => {
      event.stopPropagation();
      let ok = false;
      try { ok = await copyText(await text()); } catch (_) { ok = false; }
      button.dataset.state = ok ? "copied" : "failed";
      button.setAttribute("aria-label", ok ? "Copied" : "Copy failed");
      clearTimeout(button.copyTimer);
      button.copyTimer = setTimeout(() => { delete button.dataset.state; button.setAttribute("aria-label", label); }, 1500);
    });
    return button;
  }

  // The clipboard API where the page may use it, else a selected text area and execCommand.
  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try { await navigator.clipboard.writeText(text); return true; } catch (_) { /* the fallback */ }
    }
    const area = el("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    Object.assign(area.style, { position: "fixed", top: "0", left: "-10000px", opacity: "0" });
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
    area.remove();
    return ok;
  }

  // A message's whole text: held whole, or the server's (a long or shed message).
  async function messageText(rec) {
    if (!rec.long && !rec.shed) return rec.text;
    const page = await api("/api/sessions/" + encodeURIComponent(session()) + "/entries?before=" + (rec.index + 1) + "&limit=1");
    const item = (page && Array.isArray(page.entries) ? page.entries : []).find((x) => x && x.entry && String(x.entry.id) === rec.id);
    if (!item) throw new Error("entry not found");
    return String(item.entry.text ?? "");
  }

  // Every code block of a drawn message gets a copy button (once; a block drawn again gets a
  // new one). The button holds no text, so the block's text is the code's.
  function codeCopies(root) {
    if (!root) return;
    for (const pre of root.querySelectorAll("pre")) {
      if (pre.lastElementChild && pre.lastElementChild.classList.contains("copy-code")) continue;
      const button = copyButton("Copy code", () => {
        const code = pre.querySelector("code");
        return (code || pre).textContent;
      });
      button.classList.add("copy-code");
      pre.classList.add("has-copy");
      pre.appendChild(button);
    }
  }

  // ---- mirrors: a thought or a plan drawn inside its turn -----------------------------------

  // A thought lives in the thoughts pane and a plan in the plan pane (their records); the
  // transcript shows each inside its turn through a mirror record (model.js `mirrorOf`): `of` is
  // the entry's record, whose view and text the mirror draws. A thought is folded to one line
  // until opened; a plan shows its items.
  function buildMirror(m) {
    const src = m.of;
    if (src.kind === "plan") {
      m.node = el("div", "entry plan-card");
      m.head = el("div", "plan-card-head");
      m.extra = el("ol", "plan-card-items");
      m.node.append(m.head, m.extra);
    } else {
      m.node = el("div", "entry thought-fold");
      m.head = el("button", "fold-head");
      m.head.type = "button";
      m.head.append(el("span", "fold-chevron"), el("span", "fold-label", "Thinking"), el("span", "fold-preview"));
      m.head.addEventListener("click", () => {
        m.open = !m.open;
        showFoldOpen(m);
        if (m.open && (src.shed || src.long)) wantWhole(src);
        m.shownVersion = null;
        showMirrorText(m);
        changed(m);
      });
      m.body = el("div", "fold-body");
      m.body.id = "fold-body-" + (++toolBodies);
      m.head.setAttribute("aria-controls", m.body.id);
      m.node.append(m.head, m.body);
      if (src.shed) wantWhole(src);
      showFoldOpen(m);
    }
    m.node.dataset.entryId = src.id;
    m.node.dataset.kind = src.kind;
    m.node.dataset.index = String(src.index);
    m.shownVersion = null;
    fillMirror(m);
    showMirrorText(m);
  }

  function showFoldOpen(m) {
    m.body.hidden = !m.open;
    m.head.setAttribute("aria-expanded", String(!!m.open));
    m.node.classList.toggle("open", !!m.open);
  }

  function fillMirror(m) {
    const src = m.of;
    if (src.kind !== "plan") return;
    const view = src.view || {};
    const items = (view.plan && Array.isArray(view.plan.entries)) ? view.plan.entries : [];
    const done = items.filter((item) => item && item.status === "completed").length;
    m.head.replaceChildren(el("span", "plan-card-title", "Plan"), el("span", "plan-card-count", done + "/" + items.length + " done"));
    m.extra.replaceChildren(...items.map((item) => {
      const li = el("li", null, item && item.content != null ? item.content : "");
      li.dataset.status = (item && item.status) || "pending";
      return li;
    }));
    m.node.hidden = !!view.removed;
  }

  // A thought's line shows its first words; its body (when open) the whole thought.
  function showMirrorText(m) {
    const src = m.of;
    if (src.kind === "plan" || m.shownVersion === src.version) return;
    m.shownVersion = src.version;
    const text = src.shed ? "" : src.long ? src.long.head : src.text;
    const first = text.trimStart().split("\n", 1)[0];
    m.head.lastChild.textContent = first.length > 160 ? first.slice(0, 160) + "\u2026" : first;
    if (m.open) m.body.textContent = src.long ? src.long.head + "\n\u2026\n" + src.text : text;
    else if (m.body.firstChild) m.body.textContent = "";
  }

  function mirrorHeight(m) {
    if (m.of.kind === "plan") {
      const plan = m.of.view && m.of.view.plan;
      return 44 + 22 * ((plan && Array.isArray(plan.entries)) ? plan.entries.length : 0);
    }
    return m.open ? 60 + 21 * Math.ceil(lengthOf(m.of) / 80) : 34;
  }

  // A height guess for an entry never drawn at this width: a header, then its text's lines.
  // (A shed record, whose text the page no longer holds, keeps its last guess.)
  function estimate(rec, width) {
    if (rec.of) return mirrorHeight(rec);
    if (rec.shed && rec.estimated != null) return rec.estimated;
    // Cached by length and width (numbers: no string built per call).
    const length = lengthOf(rec);
    if (rec.estimatedLength === length && rec.estimatedWidth === width && rec.estimatedExpanded === !!rec.expanded) return rec.estimated;
    rec.estimatedLength = length;
    rec.estimatedWidth = width;
    rec.estimatedExpanded = !!rec.expanded;
    rec.estimated = guess(rec, width);
    return rec.estimated;
  }

  function guess(rec, width) {
    if (rec.kind === "boundary") return 48;
    if (rec.kind === "turn_end") return 30;
    if (rec.kind === "tool_call" && !toolOpen(rec)) return 36;
    if (rec.kind === "plan") return 30 + 24 * ((rec.view && rec.view.plan && rec.view.plan.entries) || []).length;
    const perLine = Math.max(20, Math.floor((width || 700) / 8));
    const text = rec.expanded && !rec.long ? rec.text
      : lengthOf(rec) > DRAWN_LIMIT ? headOf(rec, HEAD_SHOWN + TAIL_SHOWN) : rec.text;
    let lines = 0;
    if (text.length < 20000) {
      // Line by line without splitting (no garbage per guess).
      let from = 0;
      for (;;) {
        const end = text.indexOf("\n", from);
        const length = (end < 0 ? text.length : end) - from;
        lines += 1 + Math.floor(length / perLine);
        if (end < 0) break;
        from = end + 1;
      }
    } else {
      lines = Math.ceil(text.length / perLine);
    }
    const chrome = rec.kind === "agent_thought" || rec.kind === "plan_text" ? 10 : rec.kind === "tool_call" ? 52 : 46;
    return chrome + 21 * Math.min(lines, 2000);
  }

  // The first entries of a turn would otherwise pay for loading and shaping the fonts they use
  // (monospace for tool output and code, bold, italic): one long first frame. Drawn once here,
  // out of sight, when the page is idle after loading.
  function warmFonts() {
    const box = el("div");
    box.setAttribute("aria-hidden", "true");
    Object.assign(box.style, { position: "fixed", left: "-10000px", top: "0", width: "600px", visibility: "hidden", pointerEvents: "none" });
    const sample = "the stream client \"quoted\" caf\u00e9 \u2192 0123456789 {}[]()<>";
    const tool = el("article", "entry tool");
    tool.append(el("div", "who", sample), el("pre", "tool-output", sample), el("pre", "terminal-output", sample));
    const agent = el("article", "entry agent");
    const md = el("div", "md");
    const p = el("p", null, sample);
    p.append(el("code", null, sample), el("strong", null, sample), el("em", null, sample));
    md.append(p, el("pre", null, sample));
    agent.append(md);
    box.append(tool, agent);
    document.body.appendChild(box);
    void box.offsetHeight;
    box.remove();
  }
  // What the page applied, for tests and the benchmark (a Promise of {id, kind, text} per
  // record): a shed or clipped entry's text is the server's (`transcript()`) when its length and
  // hash are those of the text the page applied; otherwise a note that says so (and differs).
  async function checked(list, transcript) {
    let server = null;
    if (list.some((rec) => rec.shed || rec.long)) {
      const doc = await transcript();
      server = new Map((doc && Array.isArray(doc.entries) ? doc.entries : []).map((x) => [String(x.id), x]));
    }
    return list.map((rec) => {
      if (!rec.shed && !rec.long) return { id: rec.id, kind: rec.kind, text: rec.text };
      const mine = rec.shed || { length: rec.long.length, hash: rec.long.hash };
      const theirs = server.get(rec.id);
      const text = theirs && typeof theirs.text === "string" ? theirs.text : "";
      const same = text.length === mine.length && hashText(FNV_OFFSET, text) === mine.hash;
      return { id: rec.id, kind: rec.kind, text: same ? text : "[not the server's text: " + mine.length + " characters, hash " + mine.hash + "]" };
    });
  }

  return Object.freeze({
    checked, warmFonts, build, unbuild, fill, facts, showText, estimate, expand, drawnAt, DRAWN_LIMIT, MARKDOWN_KINDS, codeCopies,
    setText, appendText, lengthOf, hashOf, hashText: (text) => hashText(FNV_OFFSET, text),
  });
}
