// Browser scenarios of the transcript (issue 25, "The page"): every turn ends with a line that
// says how (done, cancelled, an error with its message), kept across a reload; tool calls on one
// line that opens; thoughts folded inside their turn; each turn's plan in the turn and the
// current one in the pane; copy buttons; badges that never break on a phone.
// Loaded by scenarios.js, which passes its helpers. Screenshots: 25-transcript-*.png.
"use strict";

const path = require("node:path");

// Texts of the reference agent (crates/spindle-agent/src/scenarios/failures.rs).
const ERROR_MESSAGE = "simulated failure: the model backend is unavailable";
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1400, height: 900 };

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted, agentTexts, shot } = h;

  // The transcript's turn-end lines: [{outcome, label, detail, turn}].
  const turnEnds = (page) => page.$$eval("#transcript .turn-end", (nodes) => nodes.map((n) => ({
    outcome: n.dataset.outcome,
    label: n.querySelector(".turn-end-label").textContent,
    detail: n.querySelector(".turn-end-detail").textContent,
    visible: n.getBoundingClientRect().height > 0,
  })));

  // The last turn-end line once it says `outcome`.
  async function lastTurnEnd(page, outcome) {
    return eventually("a turn-end line " + outcome, async () => {
      const ends = await turnEnds(page);
      const last = ends[ends.length - 1];
      return last && last.outcome === outcome && last.visible ? last : null;
    });
  }

  // Desktop and phone screenshots of the transcript's end.
  async function shots(page, name) {
    await page.setViewportSize(DESKTOP);
    await page.waitForTimeout(200);
    await shot(page, "25-transcript-" + name + "-desktop");
    await page.setViewportSize(PHONE);
    await page.waitForTimeout(300);
    await shot(page, "25-transcript-" + name + "-phone");
    await page.setViewportSize(DESKTOP);
  }

  scenario("a finished turn ends with a Done line in the transcript, kept across a reload", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "hello there");
    await waitTurns(page, base, id, 1);
    const end = await lastTurnEnd(page, "done");
    assert(end.label === "Done" && end.detail === "end_turn", "done line: " + JSON.stringify(end));
    // Under the turn's reply, after it.
    const order = await page.$$eval("#transcript > .entry.agent, #transcript > .turn-end", (ns) => ns.map((n) => n.className.split(" ")[0]));
    assert(order[order.length - 1] === "turn-end" && order[order.length - 2] === "entry", "the line follows the reply: " + JSON.stringify(order));
    // The greeting's turn (still open when the prompt came) has no line: one line, one turn.
    assert((await turnEnds(page)).length === 1, "one line per ended turn: " + JSON.stringify(await turnEnds(page)));
    await openSession(page, base, id);
    const again = await lastTurnEnd(page, "done");
    assert(again.label === "Done", "after a reload: " + JSON.stringify(again));
    await shots(page, "finished");
    await page.close();
  });

  scenario("a cancelled turn ends with a Cancelled line, kept across a reload", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "/scenario slow");
    await eventually("reply under way", async () => ((await agentTexts(page)).slice(-1)[0] || "").startsWith("Slow"));
    await page.click("#cancel");
    await waitTurns(page, base, id, 1);
    const end = await lastTurnEnd(page, "cancelled");
    assert(end.label === "Cancelled", "cancelled line: " + JSON.stringify(end));
    await openSession(page, base, id);
    await lastTurnEnd(page, "cancelled");
    await shots(page, "cancelled");
    await page.close();
  });

  scenario("a failed turn ends with an Error line that carries the error's message", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "/scenario error");
    const end = await lastTurnEnd(page, "error");
    assert(end.label === "Error" && end.detail.includes(ERROR_MESSAGE), "error line: " + JSON.stringify(end));
    const colour = await page.$eval("#transcript .turn-end[data-outcome=error] .turn-end-label", (n) => getComputedStyle(n).color);
    const doneColour = await page.$eval("#transcript .entry.agent .who", (n) => getComputedStyle(n).color);
    assert(colour !== doneColour, "an error looks unlike the rest: " + colour);
    // The next turn succeeds: its own line says so, the failed one stays.
    await send(page, "and now?");
    await eventually("two lines", async () => (await turnEnds(page)).map((e) => e.outcome).join() === "error,done");
    await openSession(page, base, id);
    await eventually("both lines after a reload", async () => (await turnEnds(page)).map((e) => e.outcome).join() === "error,done");
    // The screenshots show the failed turn at the end.
    await send(page, "/scenario error");
    await lastTurnEnd(page, "error");
    await shots(page, "failed");
    await page.close();
  });

  scenario("tool calls are one line each: six reads fit in a few lines, they open on a click or Enter", async ({ context, tmp }) => {
    const script = path.join(__dirname, "transcript.script.jsonl");
    const server = await startServer(path.join(tmp, "transcript-tools.db"), [], ["--script", script]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      await newSession(page);
      await send(page, "read the project");
      await page.waitForSelector('#transcript .turn-end[data-outcome="done"]');
      const reads = '#transcript .entry.tool[data-entry-id^="read_"]';
      const boxes = await page.$$eval(reads, (ns) => ns.map((n) => n.getBoundingClientRect().height));
      assert(boxes.length === 6, "six reads: " + boxes.length);
      const tall = await page.$eval('#transcript .entry.tool[data-entry-id="read_1"] .tool-head', (n) => parseFloat(getComputedStyle(n).lineHeight) || 20);
      assert(boxes.every((height) => height < 3 * tall), "each read is one line: " + JSON.stringify(boxes));
      const span = await page.$$eval(reads, (ns) => ns[5].getBoundingClientRect().bottom - ns[0].getBoundingClientRect().top);
      assert(span < 300, "six reads take " + span + "px");
      const line = await page.$eval('#transcript .entry.tool[data-entry-id="read_1"]', (n) => ({
        kind: n.querySelector(".tool-kind").textContent,
        title: n.querySelector(".title").textContent,
        status: n.querySelector(".status").textContent,
        open: n.querySelector(".tool-head").getAttribute("aria-expanded"),
        bodyShown: !!n.querySelector(".tool-body").getClientRects().length,
      }));
      assert(line.kind === "Read" && line.title === "Read src/lib.rs" && line.status === "done" && line.open === "false" && !line.bodyShown,
        "a closed read: " + JSON.stringify(line));
      // A failed call is open without a click: its error shows.
      const failed = '#transcript .entry.tool[data-entry-id="search_1"]';
      assert(await page.isVisible(failed + " .tool-body"), "the failed call's output shows");
      assert((await page.textContent(failed + " .status")) === "failed", "failed badge");
      assert(await page.isVisible("text=ripgrep: permission denied"), "the error text is on screen");
      await shots(page, "tools");
      // A click opens a read, Enter closes it again.
      const first = '#transcript .entry.tool[data-entry-id="read_1"]';
      await page.click(first + " .tool-head");
      await eventually("read opened", async () => await page.isVisible(first + " .tool-body"));
      assert((await page.textContent(first + " .tool-body")).includes("pub fn part_1"), "its content");
      assert((await page.getAttribute(first + " .tool-head", "aria-expanded")) === "true", "aria-expanded");
      await page.focus(first + " .tool-head");
      await page.keyboard.press("Enter");
      await eventually("read closed", async () => !(await page.isVisible(first + " .tool-body")));
      // A closed failed call stays closed once the reader closed it.
      await page.click(failed + " .tool-head");
      await eventually("failed closed", async () => !(await page.isVisible(failed + " .tool-body")));
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("a tool call waiting for permission is open with its diff until answered", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "/scenario tools");
    await page.waitForSelector("#transcript .permission-card .choices button");
    const edit = "#transcript .entry.tool:has(.permission-card)";
    assert(await page.isVisible(edit + " .tool-body .file-diff"), "the diff shows before Allow");
    assert(await page.isVisible(edit + ' .permission-card button[data-option]'), "the choices show");
    await page.click(edit + " .permission-card .choices button >> nth=0");
    await waitTurns(page, base, id, 1);
    await eventually("every tool call closed once done", async () =>
      (await page.$$eval("#transcript .entry.tool .tool-head", (hs) => hs.map((x) => x.getAttribute("aria-expanded")))).every((x) => x === "false"));
    await page.close();
  });

  scenario("thoughts fold inside their turn and stay in the pane", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "/scenario thoughts");
    await waitTurns(page, base, id, 1);
    const fold = "#transcript .thought-fold";
    await page.waitForSelector(fold);
    const folded = await page.$eval(fold, (n) => ({
      label: n.querySelector(".fold-label").textContent,
      preview: n.querySelector(".fold-preview").textContent,
      expanded: n.querySelector(".fold-head").getAttribute("aria-expanded"),
      bodyShown: !!n.querySelector(".fold-body").getClientRects().length,
    }));
    assert(folded.label === "Thinking" && folded.expanded === "false" && !folded.bodyShown, "folded: " + JSON.stringify(folded));
    assert(folded.preview.startsWith("The user wants to see thoughts"), "its first words: " + folded.preview);
    // Inside the turn: after its prompt, before the turn's end.
    const order = await page.$$eval("#transcript > .entry, #transcript > .turn-end", (ns) => ns.map((n) => n.dataset.kind));
    const at = order.indexOf("agent_thought");
    assert(at > order.lastIndexOf("user_message") && at < order.lastIndexOf("turn_end"), "in its turn: " + JSON.stringify(order));
    await page.click(fold + " .fold-head");
    await eventually("thought opened", async () => ((await page.textContent(fold + " .fold-body")) || "").includes("Native thought chunks go to the thought pane"));
    assert(await page.isVisible(fold + " .fold-body"), "the opened thought shows");
    assert((await page.$$eval("#thoughts .thought", (ns) => ns.map((n) => n.textContent).join("\n"))).includes("Native thought chunks"),
      "the pane keeps it too");
    const replies = (await agentTexts(page)).join("\n");
    assert(!replies.includes("Native thought chunks"), "not in the reply");
    await page.close();
  });

  scenario("each turn shows its own plan, the pane the current one, the same after a reload", async ({ context, tmp }) => {
    const script = path.join(__dirname, "transcript.script.jsonl");
    const server = await startServer(path.join(tmp, "transcript-plans.db"), [], ["--script", script]);
    try {
      const page = await context.newPage();
      // Tall enough that both turns are drawn (the transcript draws only what is near the view).
      await page.setViewportSize({ width: 1280, height: 2400 });
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "read the project");
      await page.waitForSelector('#transcript .turn-end[data-outcome="done"]');
      await send(page, "finish");
      await eventually("two turns ended", async () => (await turnEnds(page)).length === 2);
      const plans = async () => ({
        cards: await page.$$eval("#transcript .plan-card", (ns) => ns.map((n) => n.querySelector(".plan-card-count").textContent)),
        pane: await page.$$eval("#plan .plan-entry", (ns) => ns.filter((n) => getComputedStyle(n).display !== "none")
          .map((n) => [...n.querySelectorAll("li")].map((li) => li.dataset.status).join())),
      });
      const before = await eventually("both plans", async () => { const p = await plans(); return p.cards.length === 2 && p.cards[1] === "2/2 done" ? p : null; });
      assert(JSON.stringify(before) === JSON.stringify({ cards: ["1/2 done", "2/2 done"], pane: ["completed,completed"] }), "before a reload: " + JSON.stringify(before));
      await openSession(page, server.url, id);
      const after = await eventually("plans after a reload", async () => { const p = await plans(); return p.cards.length === 2 ? p : null; });
      assert(JSON.stringify(after) === JSON.stringify(before), "after a reload: " + JSON.stringify(after));
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("copy buttons copy a message and a code block, with the clipboard or without it", async ({ context: shared, tmp }) => {
    const browser = shared.browser();
    const script = path.join(__dirname, "transcript.script.jsonl");
    const server = await startServer(path.join(tmp, "transcript-copy.db"), [], ["--script", script]);
    try {
      const origin = new URL(server.url).origin;
      const context = await browser.newContext({ viewport: DESKTOP });
      await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin });
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "read the project");
      const answer = '#transcript .entry.agent[data-entry-id="answer"]';
      await page.waitForSelector(answer + " .md pre .copy-code");
      // Hidden until hovered (a mouse), then shown.
      const opacity = (sel) => page.$eval(sel, (n) => getComputedStyle(n).opacity);
      assert((await opacity(answer + " > .copy-message")) === "0", "hidden without hover");
      await page.hover(answer);
      await eventually("shown on hover", async () => (await opacity(answer + " > .copy-message")) === "1");
      await page.click(answer + " > .copy-message");
      await eventually("copied feedback", async () => (await page.getAttribute(answer + " > .copy-message", "data-state")) === "copied");
      const message = await page.evaluate(() => navigator.clipboard.readText());
      assert(message.startsWith("The parser now returns an option:\n\n```rust\n") && message.endsWith("Nothing else changed."), "the message's markdown: " + JSON.stringify(message));
      await page.hover(answer + " .md pre");
      await page.click(answer + " .md pre .copy-code");
      const code = await page.evaluate(() => navigator.clipboard.readText());
      assert(code.replace(/\n$/, "") === "fn parse(s: &str) -> Option<i64> {\n    s.parse().ok()\n}", "the code: " + JSON.stringify(code));
      // The message's text is still the message's (the buttons hold none).
      assert(!(await page.textContent(answer + " .md")).includes("Copy"), "no button text in the message");
      // Without the clipboard API: the selected-text fallback.
      await page.evaluate(() => {
        navigator.clipboard.writeText = () => Promise.reject(new Error("denied"));
        window.__copied = null;
        document.addEventListener("copy", () => { window.__copied = document.activeElement && document.activeElement.value; });
      });
      await page.click(answer + " .md pre .copy-code");
      await eventually("fallback copy", async () => (await page.evaluate(() => window.__copied)) === code);
      assert((await page.getAttribute(answer + " .md pre .copy-code", "data-state")) === "copied", "the fallback says Copied");
      await page.close();
      await context.close();
      // On a touch screen the buttons show without hover.
      const touch = await browser.newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
      const phone = await touch.newPage();
      await phone.goto(server.url + "/#session=" + id);
      await phone.waitForSelector(answer + " > .copy-message");
      assert((await phone.$eval(answer + " > .copy-message", (n) => getComputedStyle(n).opacity)) === "1", "always shown on touch");
      await touch.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("on a phone, badges stay whole and a long path wraps", async ({ context, tmp }) => {
    const script = path.join(__dirname, "transcript.script.jsonl");
    const server = await startServer(path.join(tmp, "transcript-phone.db"), [], ["--script", script]);
    try {
      const page = await context.newPage();
      await page.setViewportSize(PHONE);
      await page.goto(server.url + "/");
      await page.click('#tabs button[data-tab="sessions"]');
      await newSession(page);
      await send(page, "read the project");
      await page.waitForSelector('#transcript .turn-end[data-outcome="done"]');
      const edit = '#transcript .entry.tool[data-entry-id="edit_1"]';
      await page.click(edit + " .tool-head");
      await page.waitForSelector(edit + " .file-diff .change-label");
      await page.$eval(edit, (n) => n.scrollIntoView());
      const label = await page.$eval(edit + " .change-label", (n) => {
        const range = document.createRange();
        range.selectNodeContents(n);
        return { text: n.textContent, lines: range.getClientRects().length, fits: n.scrollWidth <= n.clientWidth + 1 };
      });
      assert(label.text === "modified" && label.lines === 1 && label.fits, "the badge on one line: " + JSON.stringify(label));
      const fit = await page.$eval(edit, (n) => {
        const box = n.getBoundingClientRect();
        const path = n.querySelector(".file-diff-head .path").getBoundingClientRect();
        const badges = [...n.querySelectorAll(".tool-head .status, .tool-head .tool-kind")].map((b) => {
          const r = document.createRange(); r.selectNodeContents(b); return r.getClientRects().length;
        });
        return { inside: path.right <= box.right + 1 && box.right <= window.innerWidth, badges };
      });
      assert(fit.inside, "the path wraps inside the entry");
      assert(fit.badges.every((n) => n === 1), "status and kind on one line: " + JSON.stringify(fit.badges));
      await shot(page, "25-transcript-phone-diff");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
