// The in-page search (Ctrl/Cmd-F): the browser's own find sees only the entries that are drawn,
// and the page holds the text of the entries near the viewport only, so this one reads the
// server's entries a page at a time (newest first; nothing of them is kept but the matches), then
// brings a match in, scrolls it into view and highlights it (CSS Custom Highlight API where there
// is one; the entry is marked in any case).

import { $ } from "./dom.js";

const MAX_MATCHES = 10000;
const PAGE = 500;

export function createSearch({ end, fetchEntries, reveal }) {
  const bar = $("search");
  const input = $("search-input");
  const count = $("search-count");
  let matches = []; // { id, index, nth, offset } (nth: which occurrence within the entry)
  let at = -1;
  let query = "";
  let timer = 0;
  let marked = null;
  let markedAt = null; // { id, nth } of the marked match
  let run = 0;

  // What an entry is searched by: the titles it shows (`extra`), and its text.
  function titles(view) {
    let extra = "";
    if (view.toolCall && typeof view.toolCall.title === "string") extra = view.toolCall.title + "\n";
    if (view.raw && typeof view.raw === "object" && typeof view.raw.title === "string") extra += view.raw.title + "\n";
    return extra;
  }

  function open() {
    bar.hidden = false;
    input.focus();
    input.select();
  }

  function close() {
    bar.hidden = true;
    unmark();
    const prompt = $("prompt-input");
    if (prompt && !$("prompt-form").hidden) prompt.focus();
  }

  function reset() {
    matches = [];
    at = -1;
    query = "";
    run += 1;
    unmark();
    if (count) count.textContent = "";
  }

  function unmark() {
    if (marked) marked.classList.remove("search-current");
    marked = null;
    markedAt = null;
    if (window.CSS && CSS.highlights) CSS.highlights.delete("spindle-search");
  }

  async function find(text) {
    const mine = ++run;
    query = text;
    matches = [];
    at = -1;
    unmark();
    if (!text) { count.textContent = ""; return; }
    count.textContent = "searching\u2026";
    const needle = text.toLowerCase();
    const pages = []; // matches of each page, newest page first
    let found = 0;
    let before = end();
    let complete = true;
    while (before > 0 && found < MAX_MATCHES) {
      let page;
      try { page = await fetchEntries(before, PAGE); } catch (_) { complete = false; break; }
      if (mine !== run) return;
      const here = [];
      for (const item of Array.isArray(page && page.entries) ? page.entries : []) {
        const view = item && item.entry;
        if (!view) continue;
        const body = typeof view.text === "string" ? view.text : "";
        const extra = titles(view);
        const hay = (extra + body).toLowerCase();
        let nth = 0;
        for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + needle.length)) {
          here.push({ id: String(view.id), index: Number(item.index), nth: nth++, offset: i - extra.length });
        }
      }
      pages.push(here);
      found += here.length;
      const first = Number(page && page.first);
      if (!Number.isInteger(first) || first >= before) break;
      before = first;
      if (before > 0) count.textContent = "searching\u2026 " + before + " entries to go";
    }
    // In timeline order; past the limit, the newest.
    matches = pages.reverse().flat();
    if (matches.length > MAX_MATCHES) matches = matches.slice(matches.length - MAX_MATCHES);
    if (!matches.length) {
      count.textContent = complete ? "no matches" : "no matches (older entries could not be loaded)";
      return;
    }
    // Start from the newest match: the reader is usually at the end.
    go(matches.length - 1);
  }

  function go(index) {
    if (!matches.length) return;
    at = (index + matches.length) % matches.length;
    count.textContent = (at + 1) + " / " + matches.length + (matches.length >= MAX_MATCHES ? "+" : "");
    const match = matches[at];
    const { id, nth } = match;
    const wanted = at;
    const mine = run;
    reveal(match, (node) => {
      if (wanted !== at || mine !== run) return;
      unmark();
      marked = node;
      markedAt = { id, nth };
      node.classList.add("search-current");
      node.dataset.searchNth = String(nth);
      highlight(node, nth);
    });
  }

  // Highlights the nth occurrence of the query in the drawn entry (its rendered text may differ
  // from the source a little: markdown marks are gone; then the first occurrence is taken).
  function highlight(node, nth) {
    if (!(window.CSS && CSS.highlights && window.Highlight)) return;
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    const pieces = [];
    let whole = "";
    for (let t = walker.nextNode(); t; t = walker.nextNode()) { pieces.push([t, whole.length]); whole += t.data; }
    const hay = whole.toLowerCase();
    const needle = query.toLowerCase();
    let i = hay.indexOf(needle);
    for (let k = 0; k < nth && i >= 0; k++) {
      const next = hay.indexOf(needle, i + needle.length);
      if (next < 0) break;
      i = next;
    }
    if (i < 0) return;
    const locate = (offset) => {
      for (let p = pieces.length - 1; p >= 0; p--) if (pieces[p][1] <= offset) return [pieces[p][0], offset - pieces[p][1]];
      return [pieces[0][0], 0];
    };
    const range = document.createRange();
    const [startNode, startOffset] = locate(i);
    const [endNode, endOffset] = locate(i + needle.length - 1);
    range.setStart(startNode, startOffset);
    range.setEnd(endNode, endOffset + 1);
    CSS.highlights.set("spindle-search", new Highlight(range));
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => find(input.value), 150);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Escape") { event.preventDefault(); close(); return; }
    if (event.key !== "Enter") return;
    event.preventDefault();
    if (input.value !== query) { clearTimeout(timer); find(input.value); return; }
    go(at + (event.shiftKey ? -1 : 1));
  });
  $("search-next").addEventListener("click", () => go(at + 1));
  $("search-prev").addEventListener("click", () => go(at - 1));
  $("search-close").addEventListener("click", close);
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "f") {
      event.preventDefault();
      open();
    }
  });
  $("search-open").addEventListener("click", open);

  // The entry's DOM was redrawn (the server's rendering came): its highlight is drawn again.
  function redrawn(rec) {
    if (!markedAt || markedAt.id !== rec.id || !rec.node) return;
    marked = rec.node;
    marked.classList.add("search-current");
    highlight(rec.node, markedAt.nth);
  }

  // Open: the page keeps what it loaded for a match (see app.js dropFar).
  return Object.freeze({ open, close, reset, find, redrawn, matches: () => matches.length, current: () => at, busy: () => !bar.hidden });
}
