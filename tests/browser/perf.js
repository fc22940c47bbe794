// Browser scenarios of the page keeping up (issue #15): windowing, frame batching, tail-first
// reopen, the in-page search and phone width. Registered by scenarios.js.
"use strict";

module.exports = function register(h) {
  const { scenario, eventually, assert, newSession, send, waitTurns, finishedTurns, greeted, shot } = h;

  // What the windowed list may draw at once (window.js MAX_DRAWN), per list.
  const MAX_DRAWN = 160;
  // How many entries hold their text in the page once a frame has passed (app.js HELD_LIMIT):
  // the others keep their length and hash only (the server has their text).
  const HELD_LIMIT = 600;

  const transcriptOf = async (page, base, id) =>
    (await (await page.request.get(base + "/api/sessions/" + id + "/transcript")).json()).entries
      .map((e) => ({ id: e.id, kind: e.kind, text: e.text || "" }));

  const viewOf = (page) => page.evaluate(() => window.SpindleView.entries());

  // Entries drawn in the transcript now, and every element under it.
  const drawn = (page) => page.evaluate(() => ({
    entries: document.querySelectorAll("#transcript > [data-entry-id]").length,
    elements: document.querySelectorAll("#transcript *").length,
  }));

  // The drawn transcript entries that intersect the scroll container's box.
  const inView = (page) => page.evaluate(() => {
    const box = document.getElementById("transcript").getBoundingClientRect();
    return [...document.querySelectorAll("#transcript > [data-entry-id]")]
      .filter((n) => { const r = n.getBoundingClientRect(); return r.bottom > box.top && r.top < box.bottom; })
      .map((n) => ({ id: n.dataset.entryId, index: Number(n.dataset.index) }));
  });

  // A session with a long turn: a marker prompt first (far above later), then `updates` mixed updates.
  async function longSession(page, base, updates, marker) {
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, marker);
    await waitTurns(page, base, id, 1);
    await send(page, "/stream " + updates + " mixed");
    await waitTurns(page, base, id, 2);
    return id;
  }

  // Scrolls the transcript to its top, step by step as older entries load, until the first
  // transcript entry of the session is drawn; checks the DOM stays bounded on the way.
  async function scrollToTop(page, firstId) {
    let most = 0;
    await eventually("the first entry drawn at the top", async () => {
      await page.evaluate(() => { document.getElementById("transcript").scrollTop = 0; });
      await page.waitForTimeout(60);
      const now = await drawn(page);
      most = Math.max(most, now.entries);
      assert(now.entries <= MAX_DRAWN, "drawn entries bounded while scrolling up: " + now.entries);
      return (await inView(page)).some((e) => e.id === firstId);
    }, 60000);
    return most;
  }

  async function scrollToBottom(page, lastId) {
    await eventually("the last entry drawn at the bottom", async () => {
      await page.evaluate(() => { const t = document.getElementById("transcript"); t.scrollTop = t.scrollHeight; });
      await page.waitForTimeout(60);
      const now = await drawn(page);
      assert(now.entries <= MAX_DRAWN, "drawn entries bounded while scrolling down: " + now.entries);
      return (await inView(page)).some((e) => e.id === lastId);
    }, 60000);
  }

  const transcriptKinds = (e) => e.kind !== "agent_thought" && e.kind !== "plan" && e.kind !== "plan_text";

  scenario("a fast stream is applied once per frame and ends exactly as the transcript API", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    // Count how often the transcript's DOM changed (one observer callback per task that
    // changed it) and the largest DOM while streaming.
    await page.evaluate(() => {
      window.__mutationCallbacks = 0;
      window.__mostEntries = 0;
      new MutationObserver(() => {
        window.__mutationCallbacks += 1;
        window.__mostEntries = Math.max(window.__mostEntries, document.querySelectorAll("#transcript > [data-entry-id]").length);
      }).observe(document.getElementById("transcript"), { subtree: true, childList: true, characterData: true, attributes: true });
    });
    const framesBefore = await page.evaluate(() => window.SpindleView.stats().frames);
    await send(page, "/stream 20000 mixed");
    await waitTurns(page, base, id, 1);
    const expected = await transcriptOf(page, base, id);
    await eventually("page view equals the server transcript", async () =>
      JSON.stringify(await viewOf(page)) === JSON.stringify(expected));
    const stats = await page.evaluate(() => window.SpindleView.stats());
    const callbacks = await page.evaluate(() => window.__mutationCallbacks);
    // Every DOM change of the transcript happens in the page's frame: at most one observer
    // callback per frame (plus the few the prompt box causes), however many ops arrived.
    assert(callbacks <= stats.frames - framesBefore + 5,
      "DOM changed once per frame at most: " + callbacks + " callbacks, " + (stats.frames - framesBefore) + " frames");
    const most = await page.evaluate(() => window.__mostEntries);
    assert(most <= MAX_DRAWN, "drawn entries bounded while streaming: " + most);
    assert(stats.held === expected.length, "every entry has a record: " + stats.held);
    // Entries still written to keep their text for a second after the stream pauses.
    await eventually("the text of at most " + HELD_LIMIT + " entries held", async () =>
      (await page.evaluate(() => window.SpindleView.stats().withText)) <= HELD_LIMIT);
    assert(expected.length > 1000, "a long transcript: " + expected.length);
    await shot(page, "30-fast-stream");
    await page.close();
  });

  scenario("a windowed transcript scrolls to the top of a long session and back, and search finds an entry far above", async ({ context, base }) => {
    const page = await context.newPage();
    const marker = "needle-far-above-" + Date.now();
    const id = await longSession(page, base, 20000, marker);
    const expected = await transcriptOf(page, base, id);
    const shownKinds = expected.filter(transcriptKinds);
    // The route of older entries: a page ends before the index asked; bad input is refused clearly.
    const entriesUrl = base + "/api/sessions/" + id + "/entries";
    const pageOf = await (await page.request.get(entriesUrl + "?before=10&limit=4")).json();
    assert(pageOf.total === expected.length && pageOf.first === 6 && /^\d+-\d+$/.test(pageOf.event), "page head: " + JSON.stringify({ ...pageOf, entries: undefined }));
    assert(JSON.stringify(pageOf.entries.map((e) => [e.index, e.entry.id])) === JSON.stringify(expected.slice(6, 10).map((e, n) => [6 + n, e.id])), "entries 6..9");
    const refused = await page.request.get(entriesUrl + "?before=ten");
    assert(refused.status() === 400 && (await refused.json()).error.includes("before"), "bad before refused: " + refused.status());
    // Reopened: the tail comes first, the rest on demand.
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    const last = shownKinds[shownKinds.length - 1].id;
    await eventually("the last entry in view after the reopen", async () => (await inView(page)).some((e) => e.id === last));
    const held = (await page.evaluate(() => window.SpindleView.stats())).held;
    assert(held < expected.length / 4, "only the tail was sent: " + held + " of " + expected.length);
    await shot(page, "31-reopened-tail");
    // Up to the very first entry and back down, the DOM bounded all along.
    await scrollToTop(page, shownKinds[0].id);
    await shot(page, "31b-scrolled-to-top");
    await eventually("the text of at most " + HELD_LIMIT + " entries held after scrolling up", async () =>
      (await page.evaluate(() => window.SpindleView.stats().withText)) <= HELD_LIMIT);
    const view = await viewOf(page);
    assert(JSON.stringify(view) === JSON.stringify(expected), "every entry loaded once, in order (" + view.length + " of " + expected.length + ")");
    await scrollToBottom(page, last);
    // Search: opens with Ctrl+F, finds the marker prompt near the top and draws it, highlighted.
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    await eventually("reopened", async () => (await inView(page)).some((e) => e.id === last));
    await page.click("#transcript");
    await page.keyboard.press("Control+f");
    await page.waitForSelector("#search:not([hidden])");
    assert(await page.evaluate(() => document.activeElement && document.activeElement.id === "search-input"), "the search box has the focus");
    await page.keyboard.type(marker);
    await page.keyboard.press("Enter");
    const markerEntry = expected.find((e) => e.kind === "user_message" && e.text === marker);
    // The newest match first (the agent's echo of the prompt), then back to the prompt itself.
    await eventually("a match drawn and marked", async () => (await page.$$("#transcript > .search-current")).length === 1);
    await page.keyboard.press("Shift+Enter");
    await eventually("the prompt drawn and marked", async () =>
      (await page.$$('#transcript > .search-current[data-entry-id="' + markerEntry.id + '"]')).length === 1);
    assert((await inView(page)).some((e) => e.id === markerEntry.id), "the match is in view");
    assert((await page.textContent("#search-count")).startsWith("1 / "), "the count: " + (await page.textContent("#search-count")));
    const highlighted = await page.evaluate(() => {
      const h = window.CSS && CSS.highlights && CSS.highlights.get("spindle-search");
      return h ? [...h].map((r) => r.toString()).join("|") : null;
    });
    assert(highlighted === null || highlighted === marker, "the highlight covers the match: " + highlighted);
    assert((await drawn(page)).entries <= MAX_DRAWN, "DOM bounded after the jump");
    await shot(page, "31c-search-far-above");
    await page.keyboard.press("Escape");
    assert(await page.isHidden("#search"), "Escape closes the search");
    await page.close();
  });

  scenario("a reload in the middle of a long stream of a long session loses nothing and doubles nothing", async ({ context, base }) => {
    const page = await context.newPage();
    const id = await longSession(page, base, 20000, "before the reload");
    await send(page, "/stream 60000 mixed");
    // Mid-stream: the turn runs and part of it is on the page.
    await eventually("the stream under way", async () =>
      (await page.getAttribute("#state", "data-state")) === "running" && (await page.evaluate(() => window.SpindleView.stats().held)) > 100);
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    // While it streams, scroll up so that older pages load concurrently with live ops.
    await page.evaluate(() => { document.getElementById("transcript").scrollTop = 0; });
    await waitTurns(page, base, id, 3);
    const expected = await transcriptOf(page, base, id);
    // Everything loaded and read at once (the reader is at the top: in the next frame the page
    // lets go of the newest entries again).
    const loadedView = () => page.evaluate(async () => { await window.SpindleView.loadAll(); return window.SpindleView.entries(); });
    await eventually("page view equals the server transcript", async () =>
      JSON.stringify(await loadedView()) === JSON.stringify(expected), 30000);
    const ids = (await loadedView()).map((e) => e.id);
    assert(new Set(ids).size === ids.length, "no entry twice");
    await page.close();
  });

  // What the page keeps loaded (range.js RECORD_LIMIT + DROP_SLACK), and of the thoughts and plans
  // that arrive while the reader is far up, how many (range.js LIVE_SIDE).
  const LOADED_LIMIT = 2500;
  const LIVE_SIDE = 300;

  scenario("a live stream longer than the page keeps loaded drops its oldest entries, checked by digest, and scrolling up fetches them again", async ({ context, base }) => {
    const page = await context.newPage();
    const id = await longSession(page, base, 40000, "first-of-a-long-live-session");
    const expected = await transcriptOf(page, base, id);
    assert(expected.length > LOADED_LIMIT + 200, "a session longer than the limit: " + expected.length);
    await eventually("the oldest entries dropped back to not loaded", async () => {
      const st = await page.evaluate(() => window.SpindleView.stats());
      return st.dropped > 0 && st.loaded <= LOADED_LIMIT && st.held === expected.length;
    });
    // Dropped entries are the server's when their digests add up to what the page applied.
    let view = await viewOf(page);
    assert(JSON.stringify(view) === JSON.stringify(expected), "every entry, the dropped ones checked by digest (" + view.length + " of " + expected.length + ")");
    const shownKinds = expected.filter(transcriptKinds);
    await scrollToTop(page, shownKinds[0].id);
    // At the top, the oldest are back and the newest let go in turn (see the next scenario). The
    // letting go waits for the page's fetches to settle, so it may come a few frames later.
    let back = null;
    await eventually("scrolled to the top, the oldest loaded again and the newest let go", async () => {
      back = await page.evaluate(() => window.SpindleView.stats());
      return back.dropped === 0 && back.loadedFrom === 0 && back.newerFrom !== null && back.loaded <= LOADED_LIMIT;
    }, 10000).catch((e) => { throw new Error(e.message + ": " + JSON.stringify(back)); });
    view = await viewOf(page);
    const byId = new Map(expected.map((e, at) => [e.id, { at, json: JSON.stringify(e) }]));
    assert(view.every((e, k) => byId.get(e.id) && byId.get(e.id).json === JSON.stringify(e) && (k === 0 || byId.get(view[k - 1].id).at < byId.get(e.id).at)),
      "the entries held are the server's, once, in order");
    await scrollToBottom(page, shownKinds[shownKinds.length - 1].id);
    view = await viewOf(page);
    assert(JSON.stringify(view) === JSON.stringify(expected), "every entry back once, in order");
    await eventually("dropped again once following the end", async () => {
      const st = await page.evaluate(() => window.SpindleView.stats());
      return st.dropped > 0 && st.loaded <= LOADED_LIMIT;
    });
    await page.close();
  });

  scenario("reading far up while a long turn streams, the page lets go of the newest entries and fetches them back scrolling down", async ({ context, base }) => {
    const page = await context.newPage();
    const id = await longSession(page, base, 20000, "top-of-a-session-read-while-it-grows");
    const first = (await transcriptOf(page, base, id)).filter(transcriptKinds)[0].id;
    await scrollToTop(page, first);
    // The turn is sent by another client (a prompt sent here would follow the end).
    // (The generator's entry ids repeat: this turn writes to the first one's entries again and
    // adds about 4,500 new ones, a quarter of them thoughts.)
    const sent = await page.request.post(base + "/api/sessions/" + id + "/prompt", { data: { text: "/stream 80000 mixed" } });
    assert(sent.ok(), "prompt accepted: " + sent.status());
    let most = 0;
    await eventually("the newest entries let go, the records bounded", async () => {
      const st = await page.evaluate(() => window.SpindleView.stats());
      most = Math.max(most, st.loaded);
      assert(st.loaded <= LOADED_LIMIT, "records bounded while the reader is up: " + JSON.stringify(st));
      return st.newerFrom !== null && (await finishedTurns(page, base, id)) >= 3;
    }, 60000);
    await waitTurns(page, base, id, 3);
    const st = await page.evaluate(() => window.SpindleView.stats());
    assert(st.loaded <= LOADED_LIMIT && st.newerFrom !== null && st.newerEnd > st.newerFrom, "after the turn: " + JSON.stringify(st));
    // Below the let-go point only the newest thoughts and plans stay (range.js LIVE_SIDE, trimmed
    // past 50 more), and the few kept for a card.
    assert(st.loaded <= st.newerFrom + LIVE_SIDE + 50 + 10, "past the let-go point, only the newest thoughts and plans: " + JSON.stringify(st));
    // The plan pane followed the turn (the generator's one plan entry, updated all along).
    const plan = (await transcriptOf(page, base, id)).filter((e) => e.kind === "plan").pop();
    assert((await page.$$('#plan [data-entry-id="' + plan.id + '"]')).length === 1, "the plan in its pane");
    assert((await inView(page)).some((e) => e.id === first), "the reader's place kept at the top");
    // A prompt from elsewhere lands in the let-go part; the search finds it there and brings it in.
    const needle = "needle-far-below-the-reader";
    const more = await page.request.post(base + "/api/sessions/" + id + "/prompt", { data: { text: needle } });
    assert(more.ok(), "second prompt accepted: " + more.status());
    await waitTurns(page, base, id, 4);
    assert((await page.evaluate(() => window.SpindleView.stats())).newerFrom !== null, "still let go");
    const needleEntry = (await transcriptOf(page, base, id)).find((e) => e.kind === "user_message" && e.text === needle);
    await page.click("#transcript");
    await page.keyboard.press("Control+f");
    await page.waitForSelector("#search:not([hidden])");
    await page.keyboard.type(needle);
    await page.keyboard.press("Enter");
    await eventually("a match far below drawn and marked", async () => (await page.$$("#transcript > .search-current")).length === 1);
    await page.keyboard.press("Shift+Enter");
    await eventually("the prompt itself drawn, marked and in view", async () =>
      (await page.$$('#transcript > .search-current[data-entry-id="' + needleEntry.id + '"]')).length === 1
      && (await inView(page)).some((e) => e.id === needleEntry.id));
    await page.keyboard.press("Escape");
    const expected = await transcriptOf(page, base, id);
    assert(expected.length > LOADED_LIMIT + 200, "a session longer than the limit: " + expected.length);
    const shown = expected.filter(transcriptKinds);
    await scrollToBottom(page, shown[shown.length - 1].id);
    await eventually("every newer entry back, following the end again", async () => {
      const now = await page.evaluate(() => window.SpindleView.stats());
      return now.newerFrom === null && now.following && now.loaded <= LOADED_LIMIT;
    });
    const view = await viewOf(page);
    assert(JSON.stringify(view) === JSON.stringify(expected), "every entry once, in order (" + view.length + " of " + expected.length + ")");
    // Far up again, a prompt sent from this page: the view starts over from the tail and follows.
    await scrollToTop(page, first);
    await eventually("the newest let go again", async () => (await page.evaluate(() => window.SpindleView.stats())).newerFrom !== null);
    await send(page, "sent from far up");
    await waitTurns(page, base, id, 5);
    await eventually("the prompt and its reply in view at the end", async () => {
      const now = await page.evaluate(() => window.SpindleView.stats());
      const last = (await transcriptOf(page, base, id)).filter(transcriptKinds).pop();
      return now.newerFrom === null && now.following && (await inView(page)).some((e) => e.id === last.id)
        && (await page.textContent("#transcript")).includes("sent from far up");
    });
    await page.close();
  });

  scenario("a permission card in an entry scrolled far away keeps its state", async ({ context, base }) => {
    const page = await context.newPage();
    const id = await longSession(page, base, 20000, "a long session first");
    await send(page, "/scenario tools");
    const card = "#transcript .entry.tool .permission-card.open .choices button";
    await page.waitForSelector(card);
    const entryId = await page.$eval(card, (b) => b.closest(".entry").dataset.entryId);
    // Mark the card's DOM: the same node must come back, not a new one.
    await page.$eval(card, (b) => { b.closest(".permission-card").dataset.probe = "kept"; });
    const expected = await transcriptOf(page, base, id);
    await scrollToTop(page, expected.filter(transcriptKinds)[0].id);
    assert((await page.$$('#transcript > [data-entry-id="' + entryId + '"]')).length === 0, "the tool call left the DOM");
    await scrollToBottom(page, entryId);
    assert((await page.$$('#transcript .permission-card[data-probe="kept"].open')).length === 1, "the same open card is back");
    const allow = await page.$$eval(card, (bs) => bs.map((b) => b.dataset.option).find((o) => /allow/i.test(o)));
    await page.click(card + '[data-option="' + allow + '"]');
    await waitTurns(page, base, id, 3);
    await eventually("the answer in the tool call", async () =>
      (await page.textContent('#transcript [data-entry-id="' + entryId + '"]')).includes("permission: " + allow));
    await page.close();
  });

  scenario("ten tabs of one browser on one session all load and stay live (one shared event stream)", async ({ context, base }) => {
    const first = await context.newPage();
    await first.goto(base + "/");
    const id = await newSession(first);
    await greeted(first);
    await send(first, "/stream 2000 mixed");
    await waitTurns(first, base, id, 1);
    // A browser opens about six connections per server: ten tabs each holding an event stream
    // of its own would leave the last ones unable to load at all.
    const tabs = [first];
    for (let n = 1; n < 10; n++) {
      const tab = await context.newPage();
      await tab.goto(base + "/#session=" + id, { timeout: 20000 });
      await tab.waitForSelector("#prompt-form:not([hidden])");
      tabs.push(tab);
    }
    for (const tab of tabs) {
      await eventually("every tab live", async () => (await tab.getAttribute("#connection", "data-state")) === "live");
    }
    await send(tabs[9], "from the tenth tab");
    await waitTurns(tabs[9], base, id, 2);
    const expected = await transcriptOf(first, base, id);
    for (const tab of tabs) {
      await tab.evaluate(() => window.SpindleView.loadAll());
      await eventually("every tab equals the server transcript", async () =>
        JSON.stringify(await viewOf(tab)) === JSON.stringify(expected));
    }
    await shot(tabs[9], "33-tenth-tab");
    for (const tab of tabs) await tab.close();
  });

  scenario("at phone width the panes are tabs, the prompt stays reachable and cards take a finger", async ({ context, base }) => {
    const page = await context.newPage();
    await page.setViewportSize({ width: 390, height: 780 });
    await page.goto(base + "/");
    assert(await page.isVisible("#tabs"), "tabs shown at phone width");
    // New sessions are made in the sessions tab.
    await page.click('#tabs [data-tab="sessions"]');
    assert(await page.isVisible("#new-session"), "the sessions tab shows the session list");
    assert(await page.isHidden("#transcript"), "the chat is hidden in the sessions tab");
    await shot(page, "32-phone-sessions");
    const id = await newSession(page);
    await page.click('#tabs [data-tab="chat"]');
    await greeted(page);
    await send(page, "/stream 3000 mixed");
    await waitTurns(page, base, id, 1);
    await send(page, "/scenario tools");
    const card = "#transcript .entry.tool .permission-card.open .choices button";
    await page.waitForSelector(card);
    // The prompt box is on screen (sticky at the bottom) with the transcript above it.
    const viewport = page.viewportSize();
    const prompt = await page.locator("#prompt-input").boundingBox();
    assert(prompt && prompt.y >= 0 && prompt.y + prompt.height <= viewport.height, "prompt on screen: " + JSON.stringify(prompt));
    const send_ = await page.locator("#send").boundingBox();
    assert(send_.y + send_.height <= viewport.height && send_.height >= 44, "send button on screen and big enough: " + JSON.stringify(send_));
    // Card buttons big enough for a finger, within the screen's width.
    const sizes = await page.$$eval(card, (bs) => bs.map((b) => { const r = b.getBoundingClientRect(); return [r.width, r.height, r.right]; }));
    assert(sizes.every(([w, hh, right]) => hh >= 44 && w >= 44 && right <= 390), "card buttons: " + JSON.stringify(sizes));
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(wide <= 390, "nothing wider than the screen: " + wide);
    await shot(page, "32b-phone-chat-permission");
    // Keyboard: the tabs move with the arrows and the focus is visible.
    await page.focus('#tabs [data-tab="chat"]');
    await page.keyboard.press("ArrowRight");
    assert(await page.evaluate(() => document.activeElement.dataset.tab === "panes" && document.body.dataset.tab === "panes"), "arrow moves to the next tab");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert(outline !== "none", "focus visible: " + outline);
    assert(await page.isVisible("#status-pane"), "the panes tab shows the status");
    await shot(page, "32c-phone-panes");
    await page.keyboard.press("ArrowLeft");
    // Answered by touch-sized button, from the chat tab.
    const allow = await page.$$eval(card, (bs) => bs.map((b) => b.dataset.option).find((o) => /allow/i.test(o)));
    await page.tap(card + '[data-option="' + allow + '"]').catch(() => page.click(card + '[data-option="' + allow + '"]'));
    await waitTurns(page, base, id, 2);
    await shot(page, "32d-phone-answered");
    await page.close();
  });
};
