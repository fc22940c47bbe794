// Browser scenarios of the page's chrome (issue 25, item 2): light and dark themes and their
// toggle, the favicon, which key sends, the keyboard shortcuts and their `?` dialog, renaming and
// deleting sessions (seen by a second page), the agent history without open sessions and raw
// markdown, banners that clear, and the phone layout. Loaded by scenarios.js, which passes its
// helpers. Screenshots: 25-chrome-*.png.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted, shot } = h;

  // Runs `fn(page, server)` against a server of its own; the server stops afterwards.
  async function withServer(context, tmp, name, serveArgs, agentArgs, fn) {
    const server = await startServer(path.join(tmp, name + ".db"), serveArgs, agentArgs);
    try {
      const page = await context.newPage();
      await fn(page, server);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  }

  const background = (page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const LIGHT_BG = "rgb(246, 247, 249)";
  const DARK_BG = "rgb(20, 23, 27)";
  const hashSession = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
  const listedIds = (page) => page.$$eval("#session-list .session-open", (ns) => ns.map((n) => n.dataset.session));
  // The texts of the session's prompts, as the server's transcript holds them.
  async function userMessages(page, base, id) {
    const transcript = await (await page.request.get(base + "/api/sessions/" + id + "/transcript")).json();
    return (transcript.entries || []).filter((e) => e.kind === "user_message").map((e) => e.text);
  }
  const listedTitles = (page) => page.$$eval("#session-list .session-open .session-title", (ns) => ns.map((n) => n.textContent));

  scenario("the theme follows prefers-color-scheme and the toggle's choice outlasts a reload", async ({ context, base }) => {
    const page = await context.newPage();
    // Which theme <html> had when <body> first appeared: the theme is set before anything is drawn.
    await page.addInitScript(() => {
      new MutationObserver((_, observer) => {
        if (!document.body) return;
        window.__themeAtBody = document.documentElement.dataset.theme || "auto";
        window.__bgAtBody = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim();
        observer.disconnect();
      }).observe(document, { childList: true, subtree: true });
    });
    await page.emulateMedia({ colorScheme: "light" });
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "Some **markdown** and `code` for the screenshot");
    await waitTurns(page, base, id, 1);
    assert((await background(page)) === LIGHT_BG, "light system, auto: " + (await background(page)));
    assert((await page.inputValue("#theme-choice")) === "auto", "auto by default");
    await shot(page, "25-chrome-desktop-light");
    await page.emulateMedia({ colorScheme: "dark" });
    await eventually("dark system, auto: dark page", async () => (await background(page)) === DARK_BG);
    await page.mouse.move(600, 300); // off the Send button (its hover colour differs)
    const controls = await page.evaluate(() => {
      const style = (id) => getComputedStyle(document.getElementById(id));
      return { send: style("send").backgroundColor, input: style("prompt-input").backgroundColor, scheme: style("prompt-input").colorScheme };
    });
    assert(controls.input === "rgb(29, 33, 38)" && controls.scheme === "dark", "styled dark controls: " + JSON.stringify(controls));
    assert(controls.send === "rgb(138, 180, 248)", "the send button in the accent colour: " + controls.send);
    await shot(page, "25-chrome-desktop-dark");
    // The toggle overrides the system, and is remembered.
    await page.selectOption("#theme-choice", "light");
    assert((await background(page)) === LIGHT_BG, "light chosen on a dark system");
    await page.emulateMedia({ colorScheme: "light" });
    await page.selectOption("#theme-choice", "dark");
    assert((await background(page)) === DARK_BG, "dark chosen on a light system");
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    assert((await background(page)) === DARK_BG, "dark after the reload");
    assert((await page.inputValue("#theme-choice")) === "dark", "the toggle shows the choice");
    const early = await page.evaluate(() => [window.__themeAtBody, window.__bgAtBody]);
    assert(early[0] === "dark" && early[1] === "#14171b", "dark before the body was drawn (no flash): " + early);
    await page.selectOption("#theme-choice", "auto");
    assert((await background(page)) === LIGHT_BG, "auto follows the light system again");
    await page.reload();
    assert((await page.evaluate(() => localStorage.getItem("spindle.theme"))) === null, "auto stores nothing");
    assert((await background(page)) === LIGHT_BG, "still auto after the reload");
    await page.close();
  });

  scenario("the page has a favicon and loads without a 404", async ({ context, base }) => {
    const page = await context.newPage();
    const missing = [];
    page.on("response", (r) => { if (r.status() >= 400) missing.push(r.status() + " " + r.url()); });
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    await page.goto(base + "/");
    await eventually("the agents listed", async () => (await page.$$("#new-session-agent option")).length > 0);
    await page.evaluate(() => fetch("/api/sessions")); // the page's own first calls have been answered too
    assert(missing.length === 0, "no failed request: " + missing.join(", "));
    assert(errors.length === 0, "no console error: " + errors.join(" | "));
    assert((await page.getAttribute('link[rel="icon"]', "href")) === "/favicon.svg", "the icon is linked");
    for (const file of ["/favicon.svg", "/favicon.ico"]) {
      const response = await page.request.get(base + file);
      assert(response.status() === 200, file + " " + response.status());
      assert(response.headers()["content-type"] === "image/svg+xml", file + " type " + response.headers()["content-type"]);
      assert((await response.text()).startsWith("<svg"), file + " is the SVG");
    }
    await page.close();
  });

  scenario("Enter sends, Shift+Enter adds a line, and the setting turns it around", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    const placeholder = () => page.getAttribute("#prompt-input", "placeholder");
    assert((await placeholder()).includes("Enter sends, Shift+Enter adds a line"), await placeholder());
    await page.click("#prompt-input");
    await page.keyboard.type("first line");
    await page.keyboard.press("Shift+Enter");
    await page.keyboard.type("second line");
    assert((await page.inputValue("#prompt-input")) === "first line\nsecond line", "Shift+Enter added a line");
    // An Enter that ends an IME composition does not send.
    await page.$eval("#prompt-input", (n) => n.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", keyCode: 229, isComposing: true, bubbles: true, cancelable: true })));
    assert((await page.inputValue("#prompt-input")) === "first line\nsecond line", "composition Enter kept the text");
    await page.keyboard.press("Enter");
    await eventually("sent by Enter", async () => (await page.inputValue("#prompt-input")) === "");
    await waitTurns(page, base, id, 1);
    const sent = await userMessages(page, base, id);
    assert(JSON.stringify(sent) === JSON.stringify(["first line\nsecond line"]), "both lines sent as one prompt: " + JSON.stringify(sent));
    // With the completion list open, Enter picks.
    await page.keyboard.type("/he");
    await page.waitForSelector("#palette:not([hidden]) .palette-item");
    await page.keyboard.press("Enter");
    assert((await page.inputValue("#prompt-input")) === "/help", "Enter picked /help");
    await page.fill("#prompt-input", "");
    // The setting, in the `?` dialog: Ctrl/Cmd+Enter sends, Enter adds a line.
    await page.click("#transcript");
    await page.keyboard.press("?");
    await page.waitForSelector("#shortcuts-dialog[open]");
    await page.selectOption("#send-key", "mod-enter");
    await page.keyboard.press("Escape");
    await eventually("dialog closed", async () => !(await page.$("#shortcuts-dialog[open]")));
    assert((await placeholder()).includes("Ctrl+Enter sends, Enter adds a line"), await placeholder());
    assert(!(await placeholder()).includes("(Enter sends"), "never says Enter sends then");
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    assert((await placeholder()).includes("Ctrl+Enter sends"), "remembered: " + (await placeholder()));
    await page.click("#prompt-input");
    await page.keyboard.type("one");
    await page.keyboard.press("Enter");
    await page.keyboard.type("two");
    assert((await page.inputValue("#prompt-input")) === "one\ntwo", "Enter added a line");
    await page.keyboard.press("Control+Enter");
    await eventually("sent by Ctrl+Enter", async () => (await page.inputValue("#prompt-input")) === "");
    await waitTurns(page, base, id, 2);
    assert((await userMessages(page, base, id)).includes("one\ntwo"), "sent as typed: " + JSON.stringify(await userMessages(page, base, id)));
    await page.evaluate(() => localStorage.removeItem("spindle.sendKey"));
    await page.close();
  });

  scenario("Esc cancels a running turn; Alt+N, Alt+arrows, Alt+P and ? do what the dialog says", async ({ context, tmp }) => {
    await withServer(context, tmp, "shortcuts", [], ["--delay-ms", "20"], async (page, server) => {
      await page.goto(server.url + "/");
      const first = await newSession(page);
      await greeted(page);
      // Alt+N: a new session, shown.
      await page.keyboard.press("Alt+n");
      await eventually("a second session", async () => (await listedIds(page)).length === 2);
      await eventually("the new one shown", async () => hashSession(page) !== first && hashSession(page) !== null);
      const second = hashSession(page);
      await greeted(page);
      // Alt+Up / Alt+Down: the previous and next session in the list.
      await page.keyboard.press("Alt+ArrowUp");
      await eventually("the first session shown", async () => hashSession(page) === first);
      await page.keyboard.press("Alt+ArrowDown");
      await eventually("the second session shown", async () => hashSession(page) === second);
      // Alt+P: the prompt has the focus.
      await page.click("#transcript");
      await page.keyboard.press("Alt+p");
      assert(await page.evaluate(() => document.activeElement.id === "prompt-input"), "the prompt focused");
      // `?` in the text box is a character; outside it, the dialog.
      await page.keyboard.type("?");
      assert((await page.inputValue("#prompt-input")) === "?", "typed into the prompt");
      assert(!(await page.$("#shortcuts-dialog[open]")), "no dialog from the text box");
      await page.fill("#prompt-input", "");
      await page.click("#transcript");
      await page.keyboard.press("?");
      await page.waitForSelector("#shortcuts-dialog[open]");
      const rows = await page.$$eval("#shortcuts-list tr", (trs) => trs.map((tr) => tr.textContent));
      for (const keys of ["Esc", "Alt+N", "Alt+\u2193 / Alt+\u2191", "Alt+P", "+F", "?", "Enter", "Shift+Enter"]) {
        assert(rows.some((r) => r.includes(keys)), keys + " listed: " + JSON.stringify(rows));
      }
      await shot(page, "25-chrome-shortcuts");
      await page.keyboard.press("Escape");
      await eventually("dialog closed by Esc", async () => !(await page.$("#shortcuts-dialog[open]")));
      // Esc cancels a running turn (here the stall scenario, which runs until cancelled).
      await send(page, "/scenario stall");
      await eventually("running", async () => (await page.getAttribute("#state", "data-state")) === "running");
      await page.click("#prompt-input");
      await page.keyboard.type("/he");
      await page.waitForSelector("#palette:not([hidden])");
      await page.keyboard.press("Escape");
      assert(await page.isHidden("#palette"), "the first Esc closed the completion list");
      assert((await page.getAttribute("#state", "data-state")) === "running", "and left the turn running");
      await page.keyboard.press("Escape");
      await eventually("cancelled", async () => (await page.textContent("#stop-reason")).includes("cancelled"));
      assert((await page.getAttribute("#state", "data-state")) === "idle", "idle after the cancel");
    });
  });

  scenario("sessions are renamed and deleted from the list, and a second page sees it", async ({ context, tmp }) => {
    await withServer(context, tmp, "rename-delete", [], ["--delay-ms", "5"], async (page, server) => {
      await page.goto(server.url + "/");
      const kept = await newSession(page);
      await greeted(page);
      const doomed = await newSession(page);
      await greeted(page);
      const other = await context.newPage();
      await openSession(other, server.url, kept);
      // Rename through the row's menu; Esc gives up, Enter saves.
      const row = (id) => '#session-list li[data-session="' + id + '"]';
      await page.click(row(doomed) + " .session-menu-button");
      await page.click(row(doomed) + ' .session-menu [data-action="rename"]');
      await page.keyboard.type("never saved");
      await page.keyboard.press("Escape");
      assert(!(await page.$(row(doomed) + " .session-rename")), "Esc left the rename");
      await page.click(row(doomed) + " .session-menu-button");
      await page.click(row(doomed) + ' .session-menu [data-action="rename"]');
      await page.fill(row(doomed) + " .session-rename input", "Parser refactor");
      await page.keyboard.press("Enter");
      await eventually("renamed here", async () => (await page.textContent(row(doomed) + " .session-title")) === "Parser refactor");
      await eventually("renamed on the other page", async () => (await other.textContent(row(doomed) + " .session-title")) === "Parser refactor");
      await page.reload();
      await page.waitForSelector(row(doomed));
      assert((await page.textContent(row(doomed) + " .session-title")) === "Parser refactor", "kept after a reload");
      // Delete asks first; Cancel keeps the session.
      await page.click(row(doomed) + " .session-menu-button");
      await page.click(row(doomed) + ' .session-menu [data-action="delete"]');
      await page.waitForSelector("#confirm-dialog[open]");
      assert((await page.textContent("#confirm-title")).includes("Parser refactor"), "names the session");
      await shot(page, "25-chrome-delete-confirm");
      await page.click("#confirm-cancel");
      assert((await listedIds(page)).includes(doomed), "still listed after Cancel");
      await page.click(row(doomed) + " .session-menu-button");
      await page.click(row(doomed) + ' .session-menu [data-action="delete"]');
      await page.waitForSelector("#confirm-dialog[open]");
      await page.click("#confirm-ok");
      await eventually("gone here", async () => !(await listedIds(page)).includes(doomed));
      await eventually("gone on the other page", async () => !(await listedIds(other)).includes(doomed));
      assert((await page.request.get(server.url + "/api/sessions/" + doomed + "/transcript")).status() === 404, "its transcript is gone");
      await page.reload();
      await page.waitForSelector("#session-list li");
      assert(JSON.stringify(await listedIds(page)) === JSON.stringify([kept]), "gone after a reload: " + (await listedIds(page)));
      // Deleting the session another page shows: that page shows no session any more.
      await page.click(row(kept) + " .session-menu-button");
      await page.click(row(kept) + ' .session-menu [data-action="delete"]');
      await page.click("#confirm-ok");
      await eventually("the other page closed it", async () => (await other.isVisible("#empty")) && (await other.isHidden("#prompt-form")));
      assert(hashSession(other) === null, "no session in its address");
      assert((await listedTitles(other)).length === 0, "its list is empty");
      await other.close();
    });
  });

  scenario("the agent history leaves out open sessions and shows titles without markdown", async ({ context, tmp }) => {
    const state = path.join(tmp, "chrome-agent-state");
    fs.mkdirSync(state, { recursive: true });
    await withServer(context, tmp, "history-plain", [], ["--delay-ms", "5", "--state-dir", state], async (page, server) => {
      await page.goto(server.url + "/");
      const open = await newSession(page);
      await greeted(page);
      await send(page, "still open");
      await waitTurns(page, server.url, open, 1);
      const closed = await newSession(page);
      await greeted(page);
      await send(page, "# Fix **parser**, [notes](https://example.com)");
      await waitTurns(page, server.url, closed, 1);
      const agentIds = await page.evaluate(async () => (await (await fetch("/api/sessions")).json()).sessions.map((s) => s.agentSessionId));
      assert(agentIds.every(Boolean), "both opened by the agent: " + agentIds);
      const removed = await page.request.delete(server.url + "/api/sessions/" + closed);
      assert(removed.ok(), "deleted in Spindle");
      await page.click("#history-pane > summary");
      await eventually("the deleted one listed", async () => (await page.$$("#history-list .history-item:not([hidden])")).length === 1);
      const shown = await page.$$eval("#history-list .history-item:not([hidden])", (ns) => ns.map((n) => ({ id: n.dataset.agentSession, title: n.querySelector(".history-title").textContent })));
      assert(shown[0].id !== agentIds[0], "the open session is not offered: " + JSON.stringify(shown));
      const title = shown[0].title;
      assert(!/[#*`\[\]]|\]\(/.test(title), "no raw markdown: " + title);
      assert(title.includes("Fix parser, notes"), "the words kept: " + title);
      await shot(page, "25-chrome-history");
    });
  });

  scenario("a failed turn's banner clears when the next turn succeeds", async ({ context, tmp }) => {
    // Protocol 1: the agent's failure is its answer to the prompt, which the server shows as a banner.
    await withServer(context, tmp, "banner", ["--protocol", "1"], ["--delay-ms", "5"], async (page, server) => {
      await page.goto(server.url + "/");
      // No session shown yet: no connection badge (an "offline" one read as the server down).
      await page.waitForSelector("#empty:not([hidden])");
      assert(await page.isHidden("#connection"), "no connection badge before a session is shown");
      await newSession(page);
      await eventually("the badge once a session is shown", async () =>
        (await page.isVisible("#connection")) && (await page.textContent("#connection")) === "live");
      await eventually("agent ready", async () => (await page.textContent("#agent-info")).includes("protocol v1"));
      await send(page, "/scenario error");
      await eventually("the error banner", async () => (await page.isVisible("#banner")) && (await page.getAttribute("#banner", "data-level")) === "error");
      const text = await page.textContent("#banner");
      await eventually("the failed turn ended", async () => (await page.getAttribute("#state", "data-state")) === "idle");
      assert(await page.isVisible("#banner"), "kept while nothing succeeded: " + text);
      await send(page, "all good now");
      await eventually("the next turn answered", async () =>
        (await page.$$eval("#transcript .entry.agent .md", (ns) => ns.map((n) => n.textContent))).some((t) => t.includes("all good now")));
      await eventually("the banner cleared", async () => await page.isHidden("#banner"));
      // Reopened, the cleared banner stays away.
      await page.reload();
      await page.waitForSelector("#prompt-form:not([hidden])");
      await eventually("live", async () => (await page.getAttribute("#connection", "data-state")) === "live");
      assert(await page.isHidden("#banner"), "no banner after a reload");
    });
  });

  scenario("phone: no sideways scroll, the mode bar within the screen, the Chat tab shows a running turn", async ({ context, base }) => {
    const page = await context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(base + "/");
    await page.click('#tabs [data-tab="sessions"]');
    const id = await newSession(page);
    await greeted(page);
    await eventually("the mode bar", async () => await page.isVisible("#session-bar"));
    const fits = () => page.evaluate(() => {
      const bar = document.getElementById("session-bar").getBoundingClientRect();
      const offenders = [...document.querySelectorAll("#session-bar *, .top *, #prompt-form *")]
        .filter((n) => n.getClientRects().length && n.getBoundingClientRect().right > innerWidth + 0.5)
        .map((n) => n.id || n.className || n.tagName);
      return { scroll: document.scrollingElement.scrollWidth, width: innerWidth, barLeft: bar.left, barRight: bar.right, offenders };
    });
    let layout = await fits();
    assert(layout.scroll <= layout.width, "no sideways scroll: " + JSON.stringify(layout));
    assert(layout.barLeft >= 0 && layout.barRight <= layout.width, "the bar within the screen: " + JSON.stringify(layout));
    assert(layout.offenders.length === 0, "nothing past the right edge: " + JSON.stringify(layout.offenders));
    const dot = '#tabs [data-tab="chat"] .tab-running';
    // (The greeting's turn stays open until the first prompt.)
    await send(page, "hello");
    await waitTurns(page, base, id, 1);
    assert(await page.isHidden(dot), "no running dot while idle");
    await send(page, "/scenario slow");
    await eventually("the Chat tab shows the turn", async () => await page.isVisible(dot));
    await page.click('#tabs [data-tab="panes"]');
    assert(await page.isVisible(dot), "seen from another tab");
    await page.click('#tabs [data-tab="chat"]');
    await shot(page, "25-chrome-phone");
    layout = await fits();
    assert(layout.scroll <= layout.width && layout.offenders.length === 0, "still fits while streaming: " + JSON.stringify(layout));
    await waitTurns(page, base, id, 2);
    await eventually("the dot goes with the turn", async () => await page.isHidden(dot));
    await page.click('#tabs [data-tab="sessions"]');
    layout = await fits();
    assert(layout.scroll <= layout.width, "the sessions tab fits: " + JSON.stringify(layout));
    await page.close();
  });
};
