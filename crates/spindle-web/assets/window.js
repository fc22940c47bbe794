// A windowed list: of its records (timeline entries, in timeline order) only those near the
// scroll container's viewport have DOM nodes; a spacer above and one below stand for the rest,
// with their heights measured once drawn (cached per record) or guessed until then. Entries the
// page has not loaded yet (older than its first record) are a number, guessed at the average
// height, in the upper spacer; entries newer than its last record that it let go (the reader
// scrolled far up while the session grew) are a number in the lower spacer, and the list does not
// follow the end until they are back.
//
// Layout is read once per frame, in `render()`, never per op. The list follows the end (stays
// scrolled to the bottom) while the reader is there; otherwise the first visible record keeps
// its place on screen whatever changes above it (own scroll anchoring: the browser's is off).

import { hasCards } from "./cards.js";

// How far beyond the viewport records are kept drawn, in pixels, above and below.
const OVERSCAN = 1200;
// Above the viewport while following the end of a stream: every frame may replace the whole
// drawn set with new entries, so fewer are built (the full overscan is back once the reader
// scrolls).
const FOLLOW_OVERSCAN = 300;
// While following, at most this many records get new DOM in one frame, the lowest first (a
// burst of new entries is drawn over a few frames instead of one long one).
const BUILDS_PER_FRAME = 8;
// Whatever the heights, at most this many records are drawn at once.
const MAX_DRAWN = 160;
// "At the end" for following: within this many pixels of the bottom.
const FOLLOW_SLACK = 80;

export function createWindow({ container, entries, needOlder, needNewer, onDrawn, wantText }) {
  const top = document.createElement("div");
  const bottom = document.createElement("div");
  top.className = bottom.className = "spacer";
  top.setAttribute("aria-hidden", "true");
  bottom.setAttribute("aria-hidden", "true");
  container.prepend(top);
  top.after(bottom);

  let items = []; // records in timeline order (by rec.index)
  let drawn = []; // the records drawn now, in order
  let unloaded = 0; // entries above items[0] the page has not loaded
  let unloadedBelow = 0; // entries below the last record the page has not loaded (let go)
  let follow = true;
  let width = 0;
  let pending = false; // a render is wanted
  let spins = 0; // renders asked for by render itself since the last outside change
  const want = () => { pending = true; spins = 0; };
  // Where our own last scroll put the container: a scroll event that finds it there is ours (one
  // that finds it elsewhere is the reader's, even when both came before the event fired).
  let ownTop = null;
  let target = null; // a record to bring into view { rec, block }
  let anchorRec = null; // the record the reader looks at, while not following
  let anchorDelta = 0; // how far below that record's top the viewport starts

  container.addEventListener("scroll", () => {
    const ours = ownTop !== null && Math.abs(container.scrollTop - ownTop) < 1;
    ownTop = null;
    if (ours) {
      // Our own scroll (keeping the reader's place) that ends at the very end: following again.
      if (!follow && !target && unloadedBelow === 0 && container.scrollHeight - container.scrollTop - container.clientHeight < 1) {
        follow = true;
        anchorRec = null;
        want();
        onDrawn.wanted();
      }
      return;
    }
    // A scroll the browser made while a record is to be brought into view (content above it
    // changed size) does not decide anything: the reveal does.
    if (target) return;
    anchorRec = null;
    follow = unloadedBelow === 0 && container.scrollHeight - container.scrollTop - container.clientHeight < FOLLOW_SLACK;
    want();
    onDrawn.wanted();
  });

  const heightOf = (rec) => rec.height ?? entries.estimate(rec, width);

  // Offsets of the records from the first one (offsets[i]: top of items[i]; offsets[n]: the
  // total), kept from frame to frame: only those from the lowest record whose height may have
  // changed (inserted, removed, edited, measured) are summed again, so a frame of a stream
  // costs O(records changed near the end), not O(records). Never reallocated per frame.
  let offsets = new Float64Array(1024);
  let validUpTo = 0; // offsets[0..=validUpTo] are right
  // Records whose content changed since the last frame. Offsets are summed again from one only
  // when the height the sum used is not the record's now (an undrawn record keeps its measured
  // height; a long one's estimate stops growing).
  const edited = new Set();
  function checkEdited() {
    for (const rec of edited) {
      const at = indexOfRec(rec);
      if (at >= 0 && at < validUpTo && Math.abs(heightOf(rec) - (offsets[at + 1] - offsets[at])) > 0.01) invalidateFrom(at);
    }
    edited.clear();
  }
  const invalidateFrom = (position) => { if (position < validUpTo) validUpTo = Math.max(0, position); };
  function sumOffsets() {
    if (offsets.length < items.length + 1) {
      const grown = new Float64Array(Math.max(2 * offsets.length, items.length + 1));
      grown.set(offsets.subarray(0, validUpTo + 1));
      offsets = grown;
    }
    offsets[0] = 0;
    for (let i = validUpTo; i < items.length; i++) offsets[i + 1] = offsets[i] + heightOf(items[i]);
    validUpTo = items.length;
  }

  // Average measured height of the last records (the guess for entries not loaded yet), from at
  // most 400 records.
  function averageHeight() {
    let sum = 0, n = 0;
    for (let i = items.length - 1; i >= 0 && i >= items.length - 400 && n < 200; i--) if (items[i].height != null) { sum += items[i].height; n++; }
    return n ? sum / n : 80;
  }

  // Position of a record in `items` (binary search by timeline index).
  function positionOf(index) {
    let lo = 0, hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (items[mid].index < index) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function insert(rec) {
    const at = items.length && items[items.length - 1].index < rec.index ? items.length : positionOf(rec.index);
    items.splice(at, 0, rec);
    invalidateFrom(at);
    rec.list = api;
    want();
  }

  function remove(rec) {
    const at = indexOfRec(rec);
    if (at >= 0) { items.splice(at, 1); invalidateFrom(at); }
    release(rec);
    edited.delete(rec);
    rec.list = null;
    drawn = drawn.filter((r) => r !== rec);
    want();
  }

  // Several records leave the list at once (far entries dropped back to "not loaded").
  function removeMany(set) {
    items = items.filter((rec) => !set.has(rec));
    invalidateFrom(0);
    for (const rec of set) {
      if (rec.list !== api) continue;
      release(rec);
      edited.delete(rec);
      rec.list = null;
    }
    drawn = drawn.filter((r) => !set.has(r));
    want();
  }

  // A record leaves the DOM: its node goes unless something in it must live on (a card).
  function release(rec) {
    if (!rec.node) return;
    if (hasCards(rec)) rec.node.remove();
    else entries.unbuild(rec);
  }

  // Position of a record in `items`, or -1.
  function indexOfRec(rec) {
    const at = positionOf(rec.index);
    return items[at] === rec ? at : items.indexOf(rec);
  }

  function clear() {
    for (const rec of drawn) release(rec);
    items = [];
    validUpTo = 0;
    edited.clear();
    drawn = [];
    unloaded = 0;
    unloadedBelow = 0;
    follow = true;
    target = null;
    anchorRec = null;
    setHeight(top, 0);
    setHeight(bottom, 0);
    want();
  }

  // The viewport, read at the start of a frame (`prepare`, before the frame writes anything, so
  // the layout is the one the browser just made and reading it costs nothing), else in render.
  let viewport = null;
  function readViewport() {
    const height = container.clientHeight;
    return { height, top: container.scrollTop, width: container.clientWidth, hidden: height === 0 && !container.getClientRects().length };
  }

  // One frame of the list in three steps, so that with several lists every list's writes come
  // before any layout read (one layout per frame): `begin` picks the records to draw and builds
  // them, `measure` reads their heights, `finish` scrolls. Null when there is nothing to do.
  function begin() {
    const vp = viewport || (pending ? readViewport() : null);
    viewport = null;
    if (!pending) return null;
    const viewHeight = vp.height;
    if (vp.hidden) return null; // a hidden pane: on show
    pending = false;
    const viewTop = vp.top;
    const newWidth = vp.width;
    if (newWidth !== width) { width = newWidth; validUpTo = 0; }
    checkEdited();
    const above = unloaded > 0 ? unloaded * averageHeight() : 0;
    sumOffsets();
    // Offsets in the scroll container (records' offsets plus the unloaded entries above).
    const at = (i) => above + offsets[i];
    const below = unloadedBelow > 0 ? unloadedBelow * averageHeight() : 0;
    const total = at(items.length) + below;
    // The anchor: the record the reader looks at (kept from the last frame unless they
    // scrolled), and how far below its top the viewport starts.
    let anchor = -1;
    if (!follow && !target && items.length) {
      if (anchorRec) anchor = indexOfRec(anchorRec);
      if (anchor < 0) {
        anchor = Math.min(firstBelow(viewTop - above), items.length - 1);
        anchorDelta = viewTop - at(anchor);
      }
      // Looking at entries not loaded yet (above the first record): no record to hold on to.
      if (anchorDelta < 0) anchor = -1;
      anchorRec = anchor >= 0 ? items[anchor] : null;
    }
    const bottomMost = Math.max(0, total - viewHeight);
    let wantTop = follow ? bottomMost : anchor >= 0 ? at(anchor) + anchorDelta : viewTop;
    let targetAt = -1;
    if (target) {
      targetAt = indexOfRec(target.rec);
      if (targetAt >= 0) wantTop = Math.max(0, at(targetAt) - (target.block === "center" ? viewHeight / 3 : 0));
    }
    wantTop = Math.min(Math.max(0, wantTop), bottomMost);
    // Which records are drawn.
    let first = firstBelow(wantTop - above - (follow && !target ? FOLLOW_OVERSCAN : OVERSCAN));
    let last = first;
    while (last < items.length && at(last) < wantTop + viewHeight + OVERSCAN && last - first < MAX_DRAWN) last++;
    if (targetAt >= 0 && (targetAt < first || targetAt >= last)) { first = targetAt; last = Math.min(items.length, targetAt + 20); }
    let unfinished = false;
    if (follow && !target) {
      let builds = 0;
      for (let i = last - 1; i >= first; i--) {
        if (!items[i].node && ++builds > BUILDS_PER_FRAME) { first = i + 1; unfinished = true; break; }
      }
    }
    const next = items.slice(first, last);
    const keepSet = new Set(next);
    for (const rec of drawn) if (!keepSet.has(rec)) release(rec);
    let previous = top;
    for (const rec of next) {
      if (!rec.node) {
        entries.build(rec);
        // A record whose text the page let go: drawn at its known height once it is back.
        if (rec.shed) wantText(rec);
      }
      if (rec.node.previousSibling !== previous || rec.node.parentNode !== container) previous.after(rec.node);
      previous = rec.node;
    }
    drawn = next;
    setHeight(top, at(first));
    setHeight(bottom, Math.max(0, total - at(last)));
    let changed = false;
    // Measure what is drawn (the layout read of this frame).
    const measure = () => {
      if (!next.length) return;
      const tops = next.map((rec) => rec.node.getBoundingClientRect().top);
      const end = bottom.getBoundingClientRect().top;
      for (let i = 0; i < next.length; i++) {
        const h = (i + 1 < next.length ? tops[i + 1] : end) - tops[i];
        if (h >= 0 && !next[i].shed && Math.abs((next[i].height ?? -1) - h) > 0.5) {
          next[i].height = h;
          if (!changed) invalidateFrom(first + i);
          changed = true;
        }
      }
    };
    const finish = () => {
      // Following the end, the spacers take the measured heights next frame (written before that
      // frame's one layout read): rewriting them now would lay the page out a second time in this
      // frame, and the scroll to the end below does not depend on them.
      const following = follow && !target;
      if (changed && !following) {
        sumOffsets();
        setHeight(top, at(first));
        setHeight(bottom, Math.max(0, at(items.length) + below - at(last)));
      }
      // Scroll: to the end, to the target, or keeping the anchor where it was on screen.
      if (target) {
        follow = false;
        const { rec, block, done } = target;
        const node = rec.node;
        target = null;
        if (node) {
          const delta = node.getBoundingClientRect().top - container.getBoundingClientRect().top;
          setScroll(container.scrollTop + delta - (block === "center" ? viewHeight / 3 : 0));
          anchorRec = null;
          if (done) done(node);
        }
        pending = true;
      } else if (follow) {
        setScroll(container.scrollHeight - viewHeight);
      } else if (anchor >= 0) {
        setScroll(at(anchor) + anchorDelta);
      }
      if (changed || unfinished) pending = true;
      // The browser may have clamped the scroll: draw again around where it really is.
      if (Math.abs(container.scrollTop - wantTop) > viewHeight / 2 && !target) pending = true;
      // Near the top of what is loaded: ask for older entries.
      if (!follow && unloaded > 0 && container.scrollTop < above + 2 * viewHeight) needOlder();
      // Near the bottom of what is loaded, newer entries let go: ask for them.
      if (unloadedBelow > 0 && container.scrollTop + 3 * viewHeight > at(items.length)) needNewer();
      onDrawn.done(api);
      // Heights changed or the scroll was clamped: another frame (a few at most without news).
      // (Records still to build make progress every frame: not counted.)
      if (pending && (unfinished || spins++ < 10)) onDrawn.again();
    };
    return { measure, finish };
  }

  function render() {
    const job = begin();
    if (job) { job.measure(); job.finish(); }
  }

  // The first record whose bottom is below `y` (an offset from the first record's top).
  function firstBelow(y) {
    let lo = 0, hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (offsets[mid + 1] <= y) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  // A spacer's height, written only when it changes (no style invalidation for nothing).
  function setHeight(spacer, px) {
    const value = Math.round(px * 100) / 100;
    if (spacer.spindleHeight === value) return;
    spacer.spindleHeight = value;
    spacer.style.height = value + "px";
  }

  function setScroll(value) {
    const v = Math.max(0, Math.round(value));
    if (Math.abs(container.scrollTop - v) >= 1) {
      container.scrollTop = v;
      ownTop = container.scrollTop;
    }
  }

  const api = Object.freeze({
    insert, remove, removeMany, clear, render, begin,
    prepare: () => { viewport = readViewport(); },
    // Content of a record changed (its height may have).
    // (Looked at once per frame, in `begin`, however many ops changed the record.)
    changed: (rec) => {
      if (rec) edited.add(rec); else validUpTo = 0;
      want();
    },
    invalidate: () => { validUpTo = 0; want(); },
    setUnloaded: (n) => { unloaded = Math.max(0, n); want(); },
    // Newer entries let go (`n` > 0: the list stops following the end until they are back).
    // (When the last of them come back with the reader at the end, the scroll the browser makes
    // as the spacer shrinks, or our own that ends there, makes the list follow again.)
    setUnloadedBelow: (n) => { unloadedBelow = Math.max(0, n); if (unloadedBelow) follow = false; want(); },
    unloaded: () => unloaded,
    followEnd: () => { follow = true; want(); },
    following: () => follow,
    // Scrolls `rec` into view (top, or a third down with "center"); `done(node)` once drawn.
    reveal: (rec, block, done) => { follow = false; target = { rec, block, done }; want(); },
    drawnCount: () => drawn.length,
    drawn: () => drawn,
    items: () => items,
  });
  return api;
}

// A frame of several lists: every list's writes, then every list's layout reads, then scrolls.
export function renderAll(lists) {
  const jobs = lists.map((list) => list.begin()).filter(Boolean);
  for (const job of jobs) job.measure();
  for (const job of jobs) job.finish();
}
