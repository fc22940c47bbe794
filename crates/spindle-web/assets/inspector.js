// The wire inspector: a session's raw JSON-RPC lines as the server logged them, one row a line
// (direction, time, method or id, size), requests paired with their answers and the latency
// between them, filters by method and direction, the line pretty-printed on selection, older pages
// on scroll or button, and a live tail. Opened from a session's menu (panels.js: openInspector).
//
// What it reads: GET /api/sessions/{id}/wire?limit=N&before=SEQ (a page, oldest line first, with
// `more` and `first` to page further back) and the SSE stream .../wire/events?after=SEQ (`lines`
// events: the lines committed since). The server masks secrets before a line leaves it and sums
// each line up (kind, method, update, id); this module only pairs what it has loaded.
//
// Large sessions: every row has the same height, and only the rows in view (and a few around
// them) are in the DOM; at most KEEP lines are held, the oldest dropped (and loadable again).
// The live tail sticks to the bottom only while the list is scrolled to it: a user who scrolled
// up keeps their place and sees a "new lines" button instead.

import { el, api } from "./dom.js";

const ROW = 30; // px: the height of every row (inspector.css says the same)
const PAGE = 200; // lines per page
const KEEP = 20000; // lines held at most
const AROUND = 12; // rows drawn above and below the visible ones

let open = null; // the inspector shown, if any

// Opens the inspector of `session` over the page (closing one already open).
export function openInspector(session, title) {
  if (open) open.close();
  open = createInspector(String(session), title ? String(title) : "");
}

function ensureStyle() {
  if (document.querySelector('link[href="/inspector.css"]')) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/inspector.css";
  document.head.appendChild(link);
}

const DIRS = {
  out: { arrow: "\u2192", label: "out: Spindle to the agent" },
  in: { arrow: "\u2190", label: "in: the agent to Spindle" },
  local: { arrow: "\u2022", label: "local: Spindle's own note, not on the wire" },
};

function clock(ms) {
  const d = new Date(ms);
  const two = (n) => String(n).padStart(2, "0");
  return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds()) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function bytes(n) {
  if (n < 1000) return n + " B";
  if (n < 1e6) return (n / 1000).toFixed(n < 1e4 ? 1 : 0) + " kB";
  return (n / 1e6).toFixed(1) + " MB";
}

const latency = (ms) => (ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(ms < 1e4 ? 2 : 1) + " s");

function createInspector(session, title) {
  ensureStyle();
  const base = "/api/sessions/" + encodeURIComponent(session) + "/wire";
  const opener = document.activeElement;
  const s = {
    lines: [], // loaded rows, in seq order
    index: new Map(), // seq -> row
    partner: new Map(), // seq -> the seq of its request or answer
    waiting: new Map(), // "dir id" -> an unanswered request
    shown: [], // the rows the filters let through
    more: false, // older lines exist
    first: null, // the lowest seq read so far
    last: 0, // the highest seq read so far
    selected: null,
    unseen: 0,
    loading: false,
    events: null,
    closed: false,
  };

  // ---- the view -----------------------------------------------------------------------------
  const root = el("section", "wire");
  root.setAttribute("role", "dialog");
  root.setAttribute("aria-label", "Wire inspector");
  root.dataset.session = session;
  const bar = el("div", "wire-bar");
  const heading = el("h2", "wire-title", "Wire");
  heading.title = "The session's raw JSON-RPC lines" + (title ? ": " + title : "");
  const status = el("span", "wire-status", "loading");
  const method = el("input", "wire-method");
  method.type = "search";
  method.placeholder = "Filter by method";
  method.setAttribute("aria-label", "Filter by method or update");
  method.setAttribute("list", "wire-methods");
  method.autocomplete = "off";
  method.spellcheck = false;
  const methods = el("datalist");
  methods.id = "wire-methods";
  const dir = el("select", "wire-dir-filter");
  dir.setAttribute("aria-label", "Filter by direction");
  for (const [value, label] of [["", "All directions"], ["out", "\u2192 out (to the agent)"], ["in", "\u2190 in (from the agent)"], ["local", "\u2022 local notes"]]) {
    const option = el("option", null, label);
    option.value = value;
    dir.appendChild(option);
  }
  const older = el("button", "wire-older", "Load older");
  older.type = "button";
  older.hidden = true;
  const close = el("button", "wire-close", "\u00d7");
  close.type = "button";
  close.title = "Close the inspector (Esc)";
  close.setAttribute("aria-label", "Close the wire inspector");
  bar.append(heading, status, method, methods, dir, older, close);

  // Column names above the rows (the same grid).
  const columns = el("div", "wire-row wire-head");
  columns.setAttribute("aria-hidden", "true");
  for (const [cls, text] of [["wire-arrow", ""], ["wire-time", "time"], ["wire-seq", "line"], ["wire-name", "method"], ["wire-id", "id"], ["wire-latency", "latency"], ["wire-size", "size"]]) {
    columns.appendChild(el("span", cls, text));
  }
  const body = el("div", "wire-body");
  const scroller = el("div", "wire-scroll");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "list");
  scroller.setAttribute("aria-label", "Lines, oldest first");
  const spacer = el("div", "wire-spacer");
  scroller.appendChild(spacer);
  const empty = el("div", "wire-empty", "No lines yet.");
  empty.hidden = true;
  const newer = el("button", "wire-newer");
  newer.type = "button";
  newer.hidden = true;
  const detail = el("aside", "wire-detail");
  detail.hidden = true; root.classList.remove("has-detail");
  detail.setAttribute("aria-label", "The selected line");
  const list = el("div", "wire-list");
  list.append(columns, scroller, empty, newer);
  body.append(list, detail);
  root.append(bar, body);
  document.body.appendChild(root);
  document.body.classList.add("wire-open");
  method.focus();

  // ---- pairing: a request and the answer with its id, in the other direction, after it ------
  function pair(row) {
    if (row.kind === "request") {
      s.waiting.set(row.dir + " " + JSON.stringify(row.id), row);
    } else if ((row.kind === "response" || row.kind === "error") && row.dir !== "local") {
      const key = (row.dir === "in" ? "out" : "in") + " " + JSON.stringify(row.id);
      const request = s.waiting.get(key);
      if (request) {
        s.waiting.delete(key);
        s.partner.set(request.seq, row.seq);
        s.partner.set(row.seq, request.seq);
      }
    }
  }

  function repairAll() {
    s.partner.clear();
    s.waiting.clear();
    for (const row of s.lines) pair(row);
  }

  // The method a row is about: its own, or (an answer) its request's.
  function methodOf(row) {
    if (row.method) return row.method;
    const request = s.index.get(s.partner.get(row.seq));
    return request ? request.method : "";
  }

  // ---- filters --------------------------------------------------------------------------
  function passes(row) {
    if (dir.value && row.dir !== dir.value) return false;
    const wanted = method.value.trim().toLowerCase();
    if (!wanted) return true;
    return (methodOf(row) + " " + (row.update || "")).toLowerCase().includes(wanted);
  }

  function refilter() {
    s.shown = s.lines.filter(passes);
  }

  const seenMethods = new Set();
  function learnMethods(rows) {
    for (const row of rows) {
      for (const name of [row.method, row.update]) {
        if (name && !seenMethods.has(name)) {
          seenMethods.add(name);
          const option = el("option");
          option.value = name;
          methods.appendChild(option);
        }
      }
    }
  }

  // ---- drawing only what is in view ---------------------------------------------------------
  const atBottom = () => scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW / 2;

  function draw() {
    spacer.style.height = s.shown.length * ROW + "px";
    empty.hidden = s.shown.length > 0 || s.loading;
    empty.textContent = s.lines.length ? "No line matches the filters." : "No lines yet.";
    const top = scroller.scrollTop;
    const from = Math.max(0, Math.floor(top / ROW) - AROUND);
    const to = Math.min(s.shown.length, Math.ceil((top + scroller.clientHeight) / ROW) + AROUND);
    const rows = [];
    for (let i = from; i < to; i++) rows.push(drawRow(s.shown[i], i));
    spacer.replaceChildren(...rows);
    older.hidden = !s.more;
    older.disabled = s.loading;
    newer.hidden = s.unseen === 0;
    newer.textContent = s.unseen + " new line" + (s.unseen === 1 ? "" : "s") + " \u2193";
  }

  function drawRow(row, i) {
    const node = el("div", "wire-row");
    node.style.transform = "translateY(" + i * ROW + "px)";
    node.setAttribute("role", "listitem");
    node.tabIndex = -1;
    node.dataset.seq = String(row.seq);
    node.dataset.dir = row.dir;
    node.dataset.kind = row.kind;
    if (s.selected === row.seq) node.setAttribute("aria-current", "true");
    const arrow = el("span", "wire-arrow", DIRS[row.dir].arrow);
    arrow.title = DIRS[row.dir].label;
    const name = methodOf(row);
    let label;
    if (row.kind === "response") label = "\u21a9 " + (name || "result");
    else if (row.kind === "error") label = "\u21a9 " + (name || "") + " error";
    else if (row.kind === "invalid") label = "not JSON-RPC";
    else label = name + (row.update ? " \u00b7 " + row.update : "");
    const what = el("span", "wire-name", label);
    const id = el("span", "wire-id", row.id === undefined ? "" : "#" + (typeof row.id === "string" ? row.id : JSON.stringify(row.id)));
    const late = el("span", "wire-latency");
    const other = s.partner.get(row.seq);
    const partner = other === undefined ? undefined : s.index.get(other);
    if (partner) {
      const jump = el("button", "wire-jump", latency(Math.abs(partner.at - row.at)));
      jump.type = "button";
      jump.title = row.kind === "request" ? "Go to the answer (line " + other + ")" : "Go to the request (line " + other + ")";
      jump.addEventListener("click", (event) => { event.stopPropagation(); goTo(other); });
      late.appendChild(jump);
    } else if (row.kind === "request") {
      late.textContent = "\u2026";
      late.title = "No answer loaded yet";
    }
    const size = el("span", "wire-size", bytes(row.size));
    if (row.masked) size.prepend(el("span", "wire-masked", "masked"));
    node.append(arrow, el("span", "wire-time", clock(row.at)), el("span", "wire-seq", row.seq), what, id, late, size);
    node.addEventListener("click", () => select(row.seq));
    return node;
  }

  scroller.addEventListener("scroll", () => {
    if (atBottom()) s.unseen = 0;
    draw();
    if (scroller.scrollTop < ROW * 2 && s.more && !s.loading) loadOlder();
  });
  window.addEventListener("resize", draw);

  // ---- the selected line, pretty-printed -------------------------------------------------------
  function select(seq) {
    s.selected = seq;
    const row = s.index.get(seq);
    if (!row) { detail.hidden = true; root.classList.remove("has-detail"); draw(); return; }
    detail.hidden = false;
    root.classList.add("has-detail");
    const head = el("div", "wire-detail-head");
    const facts = [DIRS[row.dir].label, "line " + row.seq, clock(row.at), bytes(row.size)];
    head.appendChild(el("div", "wire-detail-facts", facts.join(" \u00b7 ")));
    const other = s.partner.get(seq);
    const partner = other === undefined ? undefined : s.index.get(other);
    if (partner) {
      const go = el("button", "wire-go", row.kind === "request" ? "Go to the answer (" + latency(partner.at - row.at) + ")" : "Go to the request (" + latency(row.at - partner.at) + " earlier)");
      go.type = "button";
      go.addEventListener("click", () => goTo(other));
      head.appendChild(go);
    }
    const shut = el("button", "wire-detail-close", "\u00d7");
    shut.type = "button";
    shut.setAttribute("aria-label", "Close the line");
    shut.addEventListener("click", () => { s.selected = null; detail.hidden = true; root.classList.remove("has-detail"); draw(); scroller.focus(); });
    head.appendChild(shut);
    const notes = [];
    if (row.masked) notes.push("Secrets in this line were masked by the server.");
    if (row.cut) notes.push("Only the first " + bytes(row.line.length) + " of " + bytes(row.size) + " are shown.");
    let text = row.line;
    if (!row.cut) {
      try { text = JSON.stringify(JSON.parse(row.line), null, 2); } catch (_) { notes.push("Not JSON: shown as logged."); }
    }
    const pre = el("pre", "wire-json", text);
    const parts = [head, ...notes.map((n) => el("p", "wire-note", n))];
    if (row.cut) parts.push(wholeButton(row));
    detail.replaceChildren(...parts, pre);
    draw();
  }

  // A line a page cut: its whole text on request (GET .../wire/SEQ), kept for the next look.
  function wholeButton(row) {
    const load = el("button", "wire-whole", "Load the whole line (" + bytes(row.size) + ")");
    load.type = "button";
    load.addEventListener("click", async () => {
      load.disabled = true;
      load.textContent = "Loading\u2026";
      try {
        const whole = await api(base + "/" + row.seq);
        if (s.closed) return;
        s.index.set(row.seq, whole);
        for (const rows of [s.lines, s.shown]) {
          const at = rows.indexOf(row);
          if (at >= 0) rows[at] = whole;
        }
        if (s.selected === row.seq) select(row.seq);
      } catch (error) {
        load.disabled = false;
        load.textContent = "Load the whole line (" + bytes(row.size) + ")";
        load.after(el("p", "wire-note", "Not loaded: " + (error && error.message ? error.message : error)));
      }
    });
    return load;
  }

  // Shows line `seq` (clearing filters that hide it), selected.
  function goTo(seq) {
    const row = s.index.get(seq);
    if (!row) return;
    if (!passes(row)) { method.value = ""; dir.value = ""; refilter(); }
    const at = s.shown.indexOf(row);
    scroller.scrollTop = Math.max(0, at * ROW - scroller.clientHeight / 3);
    select(seq);
    const node = scroller.querySelector('.wire-row[data-seq="' + seq + '"]');
    if (node) node.focus({ preventScroll: true });
  }

  // ---- loading --------------------------------------------------------------------------
  function index(rows) {
    for (const row of rows) s.index.set(row.seq, row);
    learnMethods(rows);
  }

  async function loadOlder() {
    if (s.loading || s.closed) return;
    s.loading = true;
    draw();
    try {
      const page = await api(base + "?limit=" + PAGE + (s.first !== null ? "&before=" + s.first : ""));
      if (s.closed) return;
      const before = s.shown.length;
      index(page.lines);
      s.lines = page.lines.concat(s.lines);
      s.more = page.more;
      if (page.first !== null) s.first = page.first;
      if (page.last !== null && s.last < page.last) s.last = page.last;
      repairAll();
      refilter();
      // The rows in view stay where they are: the new ones go above them.
      scroller.scrollTop += (s.shown.length - before) * ROW;
    } catch (error) {
      status.textContent = "error: " + error.message;
    } finally {
      s.loading = false;
      draw();
    }
  }

  function append(rows) {
    const fresh = rows.filter((row) => !s.index.has(row.seq));
    if (!fresh.length) return;
    const stuck = atBottom();
    index(fresh);
    let shown = 0;
    for (const row of fresh) {
      s.lines.push(row);
      pair(row);
      if (passes(row)) { s.shown.push(row); shown++; }
      s.last = Math.max(s.last, row.seq);
    }
    if (s.lines.length > KEEP) {
      const dropped = s.lines.splice(0, s.lines.length - KEEP);
      for (const row of dropped) { s.index.delete(row.seq); s.partner.delete(row.seq); }
      s.first = s.lines[0].seq;
      s.more = true;
      const before = s.shown.length;
      refilter();
      if (!stuck) scroller.scrollTop -= (before - s.shown.length) * ROW;
    }
    if (stuck) {
      draw();
      scroller.scrollTop = scroller.scrollHeight;
    } else {
      s.unseen += shown;
    }
    draw();
  }

  function listen() {
    const source = new EventSource(base + "/events?after=" + s.last);
    s.events = source;
    source.addEventListener("open", () => { status.textContent = "live"; status.dataset.state = "live"; });
    source.addEventListener("lines", (event) => {
      try { append(JSON.parse(event.data).lines); } catch (_) { /* a frame cut short: the next one resumes */ }
    });
    source.addEventListener("error", () => {
      status.dataset.state = "offline";
      status.textContent = source.readyState === EventSource.CLOSED ? "ended" : "reconnecting";
    });
  }

  async function start() {
    s.loading = true;
    try {
      const page = await api(base + "?limit=" + PAGE);
      if (s.closed) return;
      index(page.lines);
      s.lines = page.lines;
      s.more = page.more;
      s.first = page.first;
      s.last = page.last || 0;
      repairAll();
      refilter();
      s.loading = false;
      draw();
      scroller.scrollTop = scroller.scrollHeight;
      draw();
      listen();
    } catch (error) {
      s.loading = false;
      status.textContent = "error: " + error.message;
      draw();
    }
  }

  // ---- controls ---------------------------------------------------------------------------
  const onFilter = () => { refilter(); s.unseen = 0; draw(); scroller.scrollTop = scroller.scrollHeight; draw(); };
  method.addEventListener("input", onFilter);
  dir.addEventListener("change", onFilter);
  older.addEventListener("click", loadOlder);
  newer.addEventListener("click", () => { s.unseen = 0; scroller.scrollTop = scroller.scrollHeight; draw(); });
  close.addEventListener("click", () => closeView());
  scroller.addEventListener("keydown", (event) => {
    const current = s.shown.findIndex((row) => row.seq === s.selected);
    const step = event.key === "ArrowDown" ? 1 : event.key === "ArrowUp" ? -1 : 0;
    if (step) {
      event.preventDefault();
      const next = s.shown[Math.min(s.shown.length - 1, Math.max(0, current + step))];
      if (next) goTo(next.seq);
    }
  });
  // Escape closes the selected line, then the inspector (wherever the focus is: a drawn row
  // that scrolled away takes it along).
  const onKey = (event) => {
    if (event.key !== "Escape" || event.defaultPrevented) return;
    event.preventDefault();
    if (!detail.hidden) { s.selected = null; detail.hidden = true; root.classList.remove("has-detail"); draw(); scroller.focus(); } else closeView();
  };
  document.addEventListener("keydown", onKey, true); // before shortcuts.js: Esc is not "cancel the turn" here

  function closeView() {
    if (s.closed) return;
    s.closed = true;
    if (s.events) s.events.close();
    window.removeEventListener("resize", draw);
    document.removeEventListener("keydown", onKey, true);
    root.remove();
    document.body.classList.remove("wire-open");
    if (open && open.root === root) open = null;
    if (opener && opener.isConnected && opener.focus) opener.focus();
  }

  start();
  return { root, close: closeView };
}
