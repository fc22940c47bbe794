// Safe markdown for agent text, in two parts.
//
// Finished messages: the server renders them (pulldown-cmark and syntect, src/markdown) into an
// element tree, and `build(tree)` turns that tree into DOM nodes. Streaming messages: `streaming()`
// renders the text as it grows, re-rendering only the last open block on each update.
//
// Safety: the DOM is built only with createElement and text nodes; agent text is never parsed as
// HTML. `build` checks the server's allow-list again (tags, attributes, classes); anything else
// keeps its text and loses its element. Links keep only http:, https: and mailto: targets.
//
// The server's rendering of finished messages is asked for in trees.js.

// ---- the server's tree -------------------------------------------------------------------

const TAGS = new Set([
  "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
  "em", "strong", "del", "a", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "span",
]);
const HIGHLIGHT_CLASSES = new Set([
  "hl-comment", "hl-string", "hl-number", "hl-constant", "hl-keyword", "hl-operator",
  "hl-function", "hl-type", "hl-tag", "hl-attribute", "hl-variable", "hl-inserted",
  "hl-deleted", "hl-heading",
]);
const ALIGNS = new Set(["left", "center", "right"]);
const LANGUAGE_CLASS = /^language-[A-Za-z0-9_+#.-]{1,32}$/;

function safeHref(href) {
  if (typeof href !== "string") return null;
  try {
    const url = new URL(href);
    return url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:" ? url.href : null;
  } catch (_) {
    return null;
  }
}

// An element for the tree node `[tag, attrs, ...]`, or null when the tag is not allowed.
function element(tag, attrs) {
  if (!TAGS.has(tag)) return null;
  const node = document.createElement(tag);
  const a = attrs && typeof attrs === "object" ? attrs : {};
  if (tag === "a") {
    const href = safeHref(a.href);
    if (!href) return null;
    node.href = href;
    node.rel = "noopener noreferrer nofollow";
    node.target = "_blank";
  } else if (tag === "ol" && Number.isInteger(a.start)) {
    node.start = a.start;
  } else if ((tag === "th" || tag === "td") && ALIGNS.has(a.align)) {
    node.style.textAlign = a.align;
  } else if (tag === "code" && typeof a.class === "string" && LANGUAGE_CLASS.test(a.class)) {
    node.className = a.class;
  } else if (tag === "span" && HIGHLIGHT_CLASSES.has(a.class)) {
    node.className = a.class;
  }
  return node;
}

// The DOM of a tree (an array of nodes: a string is a text node, an array is an element).
// Iterative, so no tree can overflow the stack; a node the allow-list refuses keeps its text.
export function build(tree) {
  const root = document.createDocumentFragment();
  if (!Array.isArray(tree)) return root;
  const pending = [];
  for (let i = tree.length - 1; i >= 0; i--) pending.push([root, tree[i]]);
  while (pending.length) {
    const [parent, node] = pending.pop();
    if (typeof node === "string") {
      parent.appendChild(document.createTextNode(node));
    } else if (Array.isArray(node) && typeof node[0] === "string") {
      const made = element(node[0], node[1]);
      if (made) parent.appendChild(made);
      const into = made || parent;
      for (let i = node.length - 1; i >= 2; i--) pending.push([into, node[i]]);
    }
  }
  return root;
}

// ---- streaming ---------------------------------------------------------------------------

// A block: one run of lines of the same construct. Boundaries reset every bit of state, so a
// text can be split starting from any earlier boundary with the same result.
const FENCE = /^(`{3,}|~{3,})/;
const HEADING = /^#{1,6} /;
const BULLET = /^[-*+] /;
const NUMBER = /^\d{1,9}[.)] /;

// Whether `trimmed` closes a block opened by `fence`: the same character, at least as many,
// then only spaces.
function closesFence(trimmed, fence) {
  if (!trimmed.startsWith(fence)) return false;
  let k = fence.length;
  while (trimmed[k] === fence[0]) k++;
  return trimmed.slice(k).trim() === "";
}

function lineKind(trimmed) {
  return BULLET.test(trimmed) ? "ul" : NUMBER.test(trimmed) ? "ol" : trimmed.startsWith(">") ? "quote" : "p";
}

// Splits the lines of text[from, to) (`to` just past a newline, or the end of the text) into
// blocks, each with its `start` offset. Returns the blocks and `open`: where the last block
// that may still grow begins (`to` when the lines closed every block).
function scanBlocks(text, from, to) {
  const blocks = [];
  let current = null;
  let fence = null;
  let open = to;
  const flush = () => { if (current) { blocks.push(current); current = null; } };
  let at = from;
  while (at < to) {
    let end = text.indexOf("\n", at);
    if (end < 0 || end >= to) end = to;
    const line = text.slice(at, end);
    const start = at;
    at = end + 1;
    const trimmed = line.trimStart();
    if (fence !== null) {
      current.lines.push(line);
      if (closesFence(trimmed, fence)) { fence = null; flush(); }
      continue;
    }
    const opened = FENCE.exec(trimmed);
    if (opened) {
      flush();
      fence = opened[1];
      current = { kind: "code", lines: [line], start };
      continue;
    }
    if (trimmed === "") { flush(); continue; }
    if (HEADING.test(trimmed)) {
      flush();
      blocks.push({ kind: "heading", lines: [trimmed], start });
      continue;
    }
    const kind = lineKind(trimmed);
    const continues = current && (current.kind === kind || kind === "p");
    if (!continues) { flush(); current = { kind, lines: [], start }; }
    current.lines.push(line);
  }
  if (current) {
    open = current.start;
    blocks.push(current);
  }
  return { blocks, open };
}

const isWordChar = (ch) => ch !== undefined && /[\p{L}\p{N}]/u.test(ch);

// Inline constructs, scanned left to right without regular expressions over the whole text, so
// a huge hostile line costs linear time.
function renderInline(parent, text) {
  let plain = "";
  let noUnderscoreCloser = false;
  let noLinkEnd = false;
  const flushPlain = () => { if (plain) { parent.appendChild(document.createTextNode(plain)); plain = ""; } };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "`") {
      const end = text.indexOf("`", i + 1);
      if (end > i + 1) {
        flushPlain();
        const code = document.createElement("code");
        code.textContent = text.slice(i + 1, end);
        parent.appendChild(code);
        i = end + 1;
        continue;
      }
    } else if (c === "*" && text[i + 1] === "*") {
      const end = text.indexOf("**", i + 2);
      if (end > i + 2) {
        flushPlain();
        const strong = document.createElement("strong");
        renderInline(strong, text.slice(i + 2, end));
        parent.appendChild(strong);
        i = end + 2;
        continue;
      }
    } else if ((c === "*" || c === "_") && text[i + 1] !== c && text[i + 1] !== " " &&
      !(c === "_" && (noUnderscoreCloser || isWordChar(text[i - 1])))) {
      // `_` is emphasis only between words, never inside one (fs/read_text_file stays as is).
      let end = text.indexOf(c, i + 1);
      while (c === "_" && end > 0 && isWordChar(text[end + 1])) end = text.indexOf(c, end + 1);
      // No closer after this point means none after any later opener either: looked for once.
      if (c === "_" && end < 0) noUnderscoreCloser = true;
      if (end > i + 1) {
        flushPlain();
        const em = document.createElement("em");
        renderInline(em, text.slice(i + 1, end));
        parent.appendChild(em);
        i = end + 1;
        continue;
      }
    } else if (c === "[" && !noLinkEnd) {
      const close = text.indexOf("](", i + 1);
      const end = close > 0 ? text.indexOf(")", close + 2) : -1;
      // No `](...)` after this point means none after any later `[` either: looked for once.
      if (end < 0) noLinkEnd = true;
      if (close > i && end > close) {
        const label = text.slice(i + 1, close);
        const href = safeHref(text.slice(close + 2, end).trim());
        flushPlain();
        if (href) {
          const a = document.createElement("a");
          a.href = href;
          a.rel = "noopener noreferrer nofollow";
          a.target = "_blank";
          a.textContent = label;
          parent.appendChild(a);
        } else {
          parent.appendChild(document.createTextNode(text.slice(i, end + 1)));
        }
        i = end + 1;
        continue;
      }
    }
    plain += c;
    i += 1;
  }
  flushPlain();
}

function renderBlock(block) {
  switch (block.kind) {
    case "code": {
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      const body = block.lines.slice(1);
      const fence = FENCE.exec(block.lines[0].trimStart())[1];
      if (body.length && closesFence(body[body.length - 1].trimStart(), fence)) body.pop();
      code.textContent = body.join("\n");
      pre.appendChild(code);
      return pre;
    }
    case "heading": {
      const line = block.lines[0];
      const level = Math.min(6, line.indexOf(" "));
      const h = document.createElement("h" + Math.max(3, Math.min(6, level + 2)));
      renderInline(h, line.slice(level + 1));
      return h;
    }
    case "ul":
    case "ol": {
      const list = document.createElement(block.kind);
      let li = null;
      for (const line of block.lines) {
        const t = line.trimStart();
        const marker = block.kind === "ul" ? BULLET.test(t) : NUMBER.test(t);
        if (marker || !li) {
          li = document.createElement("li");
          list.appendChild(li);
          renderInline(li, marker ? t.slice(block.kind === "ul" ? 2 : t.search(/[.)] /) + 2) : t);
        } else {
          // A line without a marker continues the item above.
          li.appendChild(document.createTextNode(" "));
          renderInline(li, t);
        }
      }
      return list;
    }
    case "quote": {
      const q = document.createElement("blockquote");
      const p = document.createElement("p");
      block.lines.forEach((line, n) => {
        if (n > 0) p.appendChild(document.createElement("br"));
        renderInline(p, line.trimStart().replace(/^> ?/, ""));
      });
      q.appendChild(p);
      return q;
    }
    default: {
      const p = document.createElement("p");
      block.lines.forEach((line, n) => {
        if (n > 0) p.appendChild(document.createElement("br"));
        renderInline(p, line);
      });
      return p;
    }
  }
}

// An open part longer than this is shown as plain text until it closes (one text node set per
// update, whatever the markdown in it).
const OPEN_LIMIT = 32 * 1024;

// A renderer for one streaming message in `container`. `update(text)` takes the whole current
// text; blocks before the last open one are rendered once and kept, so an update costs the size
// of the open block, not of the text. Call `truncated()` when the text was cut (a
// truncate_text op) and `reset()` when it was replaced wholesale, before the next update.
// `show(tree, length)` replaces the rendering with the server's tree of the finished message,
// made from a text of `length` UTF-16 units: later updates with a text of that length change
// nothing, a text of another length goes back to streaming.
export function streaming(container) {
  let stable = 0; // text before this offset is rendered in final blocks
  let openNodes = []; // nodes of the open part, replaced on each update
  let openText = null; // the open part they were made from
  let treeLength = -1; // the text length of the shown tree, -1 while streaming

  function clear() {
    container.replaceChildren();
    stable = 0;
    openNodes = [];
    openText = null;
    treeLength = -1;
  }

  function update(text) {
    if (treeLength >= 0) {
      if (text.length === treeLength) return;
      clear();
    }
    if (stable > text.length) clear();
    const end = text.lastIndexOf("\n") + 1;
    if (end > stable) {
      const scanned = scanBlocks(text, stable, end);
      if (scanned.open > stable) {
        for (const node of openNodes) node.remove();
        openNodes = [];
        openText = null;
        for (const block of scanned.blocks) {
          if (block.start >= scanned.open) break;
          container.appendChild(renderBlock(block));
        }
        stable = scanned.open;
      }
    }
    const open = text.slice(stable);
    if (open === openText) return;
    const grown = openText !== null && open.length > openText.length && open.length > OPEN_LIMIT;
    if (grown && openNodes.length === 1 && openNodes[0].dataset.raw === "1") {
      // Plain text that only grew (cuts go through truncated()): append the new part.
      openNodes[0].firstChild.appendData(open.slice(openText.length));
      openText = open;
      return;
    }
    openText = open;
    for (const node of openNodes) node.remove();
    if (open.length > OPEN_LIMIT) {
      const raw = document.createElement("div");
      raw.style.whiteSpace = "pre-wrap";
      raw.dataset.raw = "1";
      raw.appendChild(document.createTextNode(open));
      openNodes = [raw];
    } else {
      openNodes = scanBlocks(open, 0, open.length).blocks.map(renderBlock);
    }
    for (const node of openNodes) container.appendChild(node);
  }

  // A cut may change how the lines before it split into blocks (a line that ended one block
  // may lose its marker): render again from the start. Cuts are rare (replacements, clears).
  function truncated() {
    clear();
  }

  function show(tree, length) {
    container.replaceChildren(build(tree));
    stable = 0;
    openNodes = [];
    openText = null;
    treeLength = Number.isInteger(length) && length >= 0 ? length : 0;
  }

  return {
    update,
    truncated,
    reset: clear,
    show,
    get hasTree() { return treeLength >= 0; },
  };
}
