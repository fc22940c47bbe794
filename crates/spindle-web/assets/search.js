// The in-page search (Ctrl/Cmd-F): the browser's own find sees only the entries that are drawn,
// so this one searches the page's text model (every entry's text, older entries loaded first),
// then scrolls the match into view and highlights it (CSS Custom Highlight API where there is one;
// the entry is marked in any case).
"use strict";

(function () {
  const MAX_MATCHES = 10000;

  function create({ $, records, loadAll, reveal }) {
    const bar = $("search");
    const input = $("search-input");
    const count = $("search-count");
    let matches = []; // { rec, nth } (nth: which occurrence within the entry)
    let at = -1;
    let query = "";
    let timer = 0;
    let marked = null;
    let markedAt = null; // { rec, nth } of the marked match
    let run = 0;

    // What an entry is searched by: its text, and the titles it shows.
    function searchable(rec) {
      const view = rec.view || {};
      let extra = "";
      if (view.toolCall && typeof view.toolCall.title === "string") extra = view.toolCall.title + "\n";
      if (view.raw && typeof view.raw === "object" && typeof view.raw.title === "string") extra += view.raw.title + "\n";
      return extra + rec.text;
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
      const complete = await loadAll((left) => { if (mine === run) count.textContent = "loading " + left + " older entries\u2026"; });
      if (mine !== run) return;
      const needle = text.toLowerCase();
      for (const rec of records()) {
        const hay = searchable(rec).toLowerCase();
        let nth = 0;
        for (let i = hay.indexOf(needle); i >= 0 && matches.length < MAX_MATCHES; i = hay.indexOf(needle, i + needle.length)) {
          matches.push({ rec, nth: nth++, offset: i - (hay.length - rec.text.length) });
        }
        if (matches.length >= MAX_MATCHES) break;
      }
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
      const { rec, nth, offset } = matches[at];
      const wanted = at;
      reveal(rec, offset, (node) => {
        if (wanted !== at) return;
        unmark();
        marked = node;
        markedAt = { rec, nth };
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
      if (!markedAt || markedAt.rec !== rec || !rec.node) return;
      marked = rec.node;
      marked.classList.add("search-current");
      highlight(rec.node, markedAt.nth);
    }

    return Object.freeze({ open, close, reset, find, redrawn, matches: () => matches.length, current: () => at });
  }

  window.SpindleSearch = Object.freeze({ create });
})();
