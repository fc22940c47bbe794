// Browser scenario of the wire inspector (issue 27, item 3): opened from a session's menu, it
// lists the session's raw lines and follows them live while a turn runs; a request is paired
// with its answer (the latency shown, a click jumps to it), the method and direction filters
// narrow the rows, a selected line is pretty-printed, and a secret the agent sent is masked.
// Loaded by scenarios.js, which passes its helpers. Screenshots: 27-wire-*.png.
"use strict";

const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, shot } = h;

  // The rows drawn now: [{seq, dir, kind, name, id, latency, size}].
  const rows = (page) => page.$$eval(".wire-scroll .wire-row", (ns) => ns.map((n) => ({
    seq: Number(n.dataset.seq),
    dir: n.dataset.dir,
    kind: n.dataset.kind,
    name: n.querySelector(".wire-name").textContent,
    id: n.querySelector(".wire-id").textContent,
    latency: n.querySelector(".wire-latency").textContent,
  })).sort((a, b) => a.seq - b.seq));

  async function openInspector(page, id) {
    const row = page.locator("#session-list li", { has: page.locator('[data-session="' + id + '"]') });
    await row.locator(".session-menu-button").click();
    await row.locator('.session-menu [data-action="wire"]').click();
    await page.waitForSelector(".wire");
    await eventually("the inspector live", async () => (await page.textContent(".wire-status")) === "live");
  }

  scenario("the wire inspector follows a turn live, pairs requests, filters, pretty-prints and masks", async ({ context, tmp }) => {
    const script = path.join(__dirname, "wire.script.jsonl");
    const server = await startServer(path.join(tmp, "wire.db"), ["--protocol", "1"], ["--delay-ms", "5", "--script", script]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await openInspector(page, id);
      // The handshake is there, each request paired with its answer.
      await eventually("the handshake's lines", async () => (await rows(page)).some((r) => r.name === "session/new"));
      let shown = await rows(page);
      const init = shown.find((r) => r.name === "initialize");
      assert(init && init.dir === "out" && init.kind === "request" && / m?s$/.test(init.latency), "initialize: " + JSON.stringify(shown));
      assert(shown.some((r) => r.name === "\u21a9 initialize" && r.dir === "in" && r.kind === "response"), "its answer: " + JSON.stringify(shown));
      const before = shown.length;

      // A turn, sent while the inspector is open: its lines arrive live.
      const sent = await page.request.post(server.url + "/api/sessions/" + id + "/prompt", { data: { text: "deploy it" } });
      assert(sent.status() === 202, "prompt status " + sent.status());
      await eventually("the permission request shown live", async () => (await rows(page)).some((r) => r.name === "session/request_permission"));
      shown = await rows(page);
      assert(shown.length > before, "rows were added");
      const ask = shown.find((r) => r.name === "session/request_permission");
      assert(ask.dir === "in" && ask.kind === "request" && ask.latency === "\u2026", "unanswered request: " + JSON.stringify(ask));
      await eventually("the prompt answered", async () => (await rows(page)).some((r) => r.name === "\u21a9 session/prompt"));
      assert((await rows(page)).some((r) => r.name === "session/update \u00b7 agent_message_chunk"), "chunks shown with their update");
      await shot(page, "27-wire-live-desktop");

      // The permission answered from the page's API: its answer arrives live, paired.
      const snapshot = await (await page.request.get(server.url + "/api/sessions/" + id + "/snapshot")).json();
      const question = snapshot.ops.find((op) => op.op === "web_permission");
      assert(question, "an open permission question: " + JSON.stringify(snapshot.ops.map((op) => op.op)));
      const answered = await page.request.post(server.url + "/api/sessions/" + id + "/permission", { data: { key: question.key, optionId: "once" } });
      assert(answered.ok(), "answer status " + answered.status());
      await eventually("the answer paired", async () => {
        const r = (await rows(page)).find((x) => x.name === "session/request_permission");
        return r && / m?s$/.test(r.latency);
      });
      const answer = (await rows(page)).find((r) => r.name === "\u21a9 session/request_permission");
      assert(answer && answer.dir === "out" && answer.kind === "response", "the answer row: " + JSON.stringify(answer));

      // A click on the latency jumps to the answer, selected and pretty-printed.
      const ask2 = (await rows(page)).find((r) => r.name === "session/request_permission");
      await page.click('.wire-row[data-seq="' + ask2.seq + '"] .wire-jump');
      await eventually("the answer selected", async () =>
        Number(await page.getAttribute('.wire-row[aria-current="true"]', "data-seq")) === answer.seq);
      const pretty = await page.textContent(".wire-json");
      assert(pretty.includes('\n  "jsonrpc": "2.0"') && pretty.includes('"optionId": "once"'), "pretty JSON: " + pretty);
      assert((await page.textContent(".wire-detail-facts")).includes("out: Spindle to the agent"), "direction named");

      // The masked secret: the chunk that carried it says so, and the key never reaches the page.
      await page.fill(".wire-method", "agent_message_chunk");
      await eventually("only chunks shown", async () => {
        const r = await rows(page);
        return r.length >= 2 && r.every((x) => x.name.endsWith("agent_message_chunk"));
      });
      const masked = await page.$$eval(".wire-scroll .wire-row", (ns) => ns.filter((n) => n.querySelector(".wire-masked")).map((n) => n.dataset.seq));
      assert(masked.length === 1, "one masked chunk: " + JSON.stringify(masked));
      await page.click('.wire-row[data-seq="' + masked[0] + '"]');
      await page.waitForSelector(".wire-json");
      const chunk = await page.textContent(".wire-json");
      assert(chunk.includes('"apiKey": "<redacted>"') && chunk.includes("Checking the deploy key."), "masked chunk: " + chunk);
      assert((await page.textContent(".wire-detail")).includes("masked by the server"), "the mask is said");
      assert(!(await page.content()).includes("sekrit"), "the secret reached the page");
      const api = await (await page.request.get(server.url + "/api/sessions/" + id + "/wire?limit=1000")).text();
      assert(!api.includes("sekrit") && api.includes("<redacted>"), "the API masks it");
      await shot(page, "27-wire-masked-desktop");

      // The direction filter: only what Spindle sent.
      await page.fill(".wire-method", "");
      await page.selectOption(".wire-dir-filter", "out");
      await eventually("only out rows", async () => {
        const r = await rows(page);
        return r.length > 0 && r.every((x) => x.dir === "out");
      });
      await page.selectOption(".wire-dir-filter", "");
      await page.keyboard.press("Escape");

      // Phone width and the dark theme.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click('.wire-row[data-seq="' + ask2.seq + '"]');
      const layout = await page.evaluate(() => ({ scroll: document.scrollingElement.scrollWidth, width: innerWidth, row: document.querySelector(".wire-row").getBoundingClientRect().width }));
      assert(layout.scroll <= layout.width && layout.row <= layout.width, "fits a phone: " + JSON.stringify(layout));
      await shot(page, "27-wire-phone");
      await page.emulateMedia({ colorScheme: "dark" });
      await page.setViewportSize({ width: 1280, height: 860 });
      await shot(page, "27-wire-dark");
      await page.emulateMedia({ colorScheme: "light" });

      // Closed with Escape (the line first, then the inspector).
      await page.keyboard.press("Escape");
      await page.keyboard.press("Escape");
      await eventually("closed", async () => (await page.$(".wire")) === null);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("the wire inspector of a long session draws only the rows in view and pages back", async ({ context, tmp }) => {
    const server = await startServer(path.join(tmp, "wire-long.db"), ["--protocol", "1"], ["--delay-ms", "0"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      // A long reply: thousands of lines in the log.
      const sent = await page.request.post(server.url + "/api/sessions/" + id + "/prompt", { data: { text: "/stream 3000 chunks" } });
      assert(sent.status() === 202, "prompt status " + sent.status());
      await eventually("the long turn done", async () => {
        const r = await (await page.request.get(server.url + "/api/sessions/" + id + "/replies")).json();
        return r.replies.some((x) => x.finished);
      }, 60000);
      const total = (await (await page.request.get(server.url + "/api/sessions/" + id + "/wire?limit=1")).json()).last;
      assert(total > 1000, "a long log: " + total);
      await openInspector(page, id);
      await eventually("the newest page drawn", async () => (await rows(page)).some((r) => r.seq === total));
      const drawn = await page.$$eval(".wire-scroll .wire-row", (ns) => ns.length);
      assert(drawn < 120, "only the rows in view are drawn: " + drawn);
      // Older pages, by button, until the first line.
      for (let i = 0; i < 40 && await page.isVisible(".wire-older"); i++) {
        await page.click(".wire-older");
        await eventually("a page loaded", async () => !(await page.isDisabled(".wire-older").catch(() => false)));
      }
      await page.$eval(".wire-scroll", (n) => { n.scrollTop = 0; });
      await eventually("the first line drawn", async () => (await rows(page)).some((r) => r.seq === 1));
      const after = await page.$$eval(".wire-scroll .wire-row", (ns) => ns.length);
      assert(after < 120, "still only the rows in view: " + after);
      // Scrolled up, the live tail does not move the view: a button counts the new lines.
      const again = await page.request.post(server.url + "/api/sessions/" + id + "/prompt", { data: { text: "one more" } });
      assert(again.status() === 202, "prompt status " + again.status());
      await page.waitForSelector(".wire-newer:not([hidden])");
      assert((await page.$eval(".wire-scroll", (n) => n.scrollTop)) === 0, "the view stayed at the top");
      assert((await rows(page)).some((r) => r.seq === 1), "the first line still in view");
      assert(/^\d+ new lines? \u2193$/.test(await page.textContent(".wire-newer")), "the button counts: " + await page.textContent(".wire-newer"));
      await page.click(".wire-newer");
      await eventually("the newest line in view", async () => {
        const newest = (await (await page.request.get(server.url + "/api/sessions/" + id + "/wire?limit=1")).json()).last;
        return (await rows(page)).some((r) => r.seq === newest) && await page.isHidden(".wire-newer");
      });
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
  scenario("a line the inspector cut is loaded whole on request, pretty-printed", async ({ context, tmp }) => {
    const server = await startServer(path.join(tmp, "wire-whole.db"), ["--protocol", "1"], ["--delay-ms", "0"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      // A 100 KiB prompt: its session/prompt line is past the 64 KiB a page carries of a line.
      const text = "long prompt " + "y".repeat(100 * 1024) + " end-of-prompt";
      const sent = await page.request.post(server.url + "/api/sessions/" + id + "/prompt", { data: { text } });
      assert(sent.status() === 202, "prompt status " + sent.status());
      await openInspector(page, id);
      await eventually("the prompt's line", async () => (await rows(page)).some((r) => r.name === "session/prompt"));
      const prompt = (await rows(page)).find((r) => r.name === "session/prompt");
      await page.click('.wire-row[data-seq="' + prompt.seq + '"]');
      await page.waitForSelector(".wire-whole");
      assert(/Only the first 66 kB of 10\d kB are shown/.test(await page.textContent(".wire-detail")), "the cut is said: " + await page.textContent(".wire-detail .wire-note"));
      assert(!(await page.textContent(".wire-json")).includes("end-of-prompt"), "the cut line's end is not shown yet");
      await shot(page, "27-wire-cut-line");
      await page.click(".wire-whole");
      await eventually("the whole line pretty-printed", async () => (await page.textContent(".wire-json")).includes('"text": "long prompt'));
      const whole = await page.textContent(".wire-json");
      assert(whole.includes("end-of-prompt\"") && whole.includes('\n  "jsonrpc": "2.0"'), "whole and pretty: " + whole.slice(-200));
      assert(await page.$(".wire-whole") === null, "the button is gone once the line is whole");
      assert(!(await page.textContent(".wire-detail")).includes("Only the first"), "no cut note on the whole line");
      // Selected again later, it stays whole.
      await page.keyboard.press("Escape");
      await page.click('.wire-row[data-seq="' + prompt.seq + '"]');
      await eventually("whole again", async () => (await page.textContent(".wire-json")).includes("end-of-prompt"));
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
