// Safe, incremental markdown for agent text.
//
// Safety: the DOM is built only with createElement and text nodes; agent text is never parsed as
// HTML. The constructs are an allowlist (paragraphs, headings, lists, block quotes, fenced code,
// inline code, bold, italic, links). Links keep only http: and https: targets; anything else
// (javascript:, data:, relative) is shown as plain text.
//
// Incremental: the text is split into blocks and each rendered block is cached with its source, so
// a streaming append re-renders only the blocks whose source changed (normally the last one).
"use strict";

(function () {
  function splitBlocks(text) {
    const lines = text.split("\n");
    const blocks = [];
    let current = null;
    let fence = null;
    const flush = () => { if (current) { blocks.push(current); current = null; } };
    for (const line of lines) {
      if (fence !== null) {
        current.lines.push(line);
        if (line.trimStart().startsWith(fence)) { fence = null; flush(); }
        continue;
      }
      const trimmed = line.trimStart();
      if (trimmed.startsWith("```") || trimmed.startsWith("~~~")) {
        flush();
        fence = trimmed.slice(0, 3);
        current = { kind: "code", lines: [line] };
        continue;
      }
      if (trimmed === "") { flush(); continue; }
      if (/^#{1,6} /.test(trimmed)) {
        flush();
        blocks.push({ kind: "heading", lines: [trimmed] });
        continue;
      }
      const kind = /^[-*+] /.test(trimmed) ? "ul"
        : /^\d{1,9}[.)] /.test(trimmed) ? "ol"
        : trimmed.startsWith(">") ? "quote" : "p";
      const continues = current && (current.kind === kind || (kind === "p" && current.kind !== "code"));
      if (!continues) { flush(); current = { kind, lines: [] }; }
      current.lines.push(line);
    }
    flush();
    return blocks.map((b) => ({ kind: b.kind, lines: b.lines, src: b.kind + "\u0000" + b.lines.join("\n") }));
  }

  function safeHref(href) {
    try {
      const url = new URL(href);
      return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
    } catch (_) {
      return null;
    }
  }

  const isWordChar = (ch) => ch !== undefined && /[\p{L}\p{N}]/u.test(ch);

  // Inline constructs, scanned left to right without regular expressions over the whole text, so
  // a huge hostile line costs linear time.
  function renderInline(parent, text) {
    let plain = "";
    let noUnderscoreCloser = false;
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
      } else if (c === "[") {
        const close = text.indexOf("](", i + 1);
        const end = close > 0 ? text.indexOf(")", close + 2) : -1;
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
        if (body.length && body[body.length - 1].trimStart().startsWith(block.lines[0].trimStart().slice(0, 3))) body.pop();
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
        for (const line of block.lines) {
          const li = document.createElement("li");
          const t = line.trimStart();
          const cut = block.kind === "ul" ? 2 : t.search(/[.)] /) + 2;
          renderInline(li, t.slice(cut));
          list.appendChild(li);
        }
        return list;
      }
      case "quote": {
        const q = document.createElement("blockquote");
        renderInline(q, block.lines.map((l) => l.trimStart().replace(/^> ?/, "")).join("\n"));
        return q;
      }
      default: {
        const p = document.createElement("p");
        const lines = block.lines;
        lines.forEach((line, n) => {
          if (n > 0) p.appendChild(document.createElement("br"));
          renderInline(p, line);
        });
        return p;
      }
    }
  }

  // Renders `text` into `container`, reusing the cached nodes of unchanged blocks.
  function render(container, text, cache) {
    const blocks = splitBlocks(text);
    for (let n = 0; n < blocks.length; n++) {
      const cached = cache[n];
      if (cached && cached.src === blocks[n].src) continue;
      const node = renderBlock(blocks[n]);
      if (cached) container.replaceChild(node, cached.node);
      else container.appendChild(node);
      cache[n] = { src: blocks[n].src, node };
    }
    while (cache.length > blocks.length) {
      const gone = cache.pop();
      gone.node.remove();
    }
  }

  window.SpindleMarkdown = { render, splitBlocks, safeHref };
})();
