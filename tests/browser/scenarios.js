// Browser scenarios for `spindle serve`, in headless Chromium driven by playwright-core.
// Usage (through run.sh): node scenarios.js PATH/TO/spindle OUTPUT_DIR
"use strict";

const { chromium } = require("playwright-core");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const [spindle, outDir] = process.argv.slice(2);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// Texts the reference agent's scenarios end with (crates/spindle-agent/src/scenarios.rs).
const REFINE_REPLY = "The capital of Australia is Canberra. It has been the capital since 1913.";
const THOUGHTS_REPLY =
  "Here is the answer. Thought: this line is part of the reply and must stay in it. Done.";
const SLOW_REPLY =
  "Slow streaming: every word arrives after a pause, so you can watch the reply grow and cancel it halfway through if you like.";

// The suite's servers ask for protocol 2 unless their arguments name one: its scenarios were
// written against v2 (the reference agent greets a new session there; a new v2 session is idle,
// so the greeting is no turn and the turns counted are the prompts'). `spindle serve`'s own
// default (1) is tested by defaults.js, which starts its servers with `startServerAsIs`.
function startServer(dbPath, extra = [], agentArgs = ["--delay-ms", "20"]) {
  return startServerAsIs(dbPath, extra.includes("--protocol") ? extra : ["--protocol", "2", ...extra], agentArgs);
}

// `spindle serve` with exactly these arguments (no protocol chosen for it).
function startServerAsIs(dbPath, extra = [], agentArgs = ["--delay-ms", "20"]) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      spindle,
      ["serve", "--bind", "127.0.0.1:0", "--db", dbPath, ...extra, "--", spindle, "agent", ...agentArgs],
      // The data directory (checkpoints) beside the database, never the user's.
      { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, XDG_DATA_HOME: path.join(path.dirname(dbPath), "data") } },
    );
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error("server did not start: " + out + err)), 20000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1].replace(/\/$/, ""), printed: m[1], child, stderr: () => err });
      }
    });
    child.stderr.on("data", (d) => { err += d; });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error("server exited " + code + ": " + err)); });
  });
}

async function eventually(what, check, timeoutMs = 20000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error("timed out waiting for " + what + " (last: " + String(last) + ")");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function assert(condition, message) {
  if (!condition) throw new Error("assertion failed: " + message);
}

// ---- page helpers ----------------------------------------------------------------------------

async function newSession(page) {
  const before = await page.locator("#session-list button").count();
  await page.click("#new-session");
  await eventually("new session listed", async () => (await page.locator("#session-list button").count()) > before);
  await page.waitForSelector("#prompt-form:not([hidden])");
  return new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
}

async function openSession(page, base, id) {
  await page.goto(base + "/#session=" + id);
  await page.waitForSelector("#prompt-form:not([hidden])");
  await eventually("live connection", async () => (await page.getAttribute("#connection", "data-state")) === "live");
}

async function send(page, text) {
  await page.fill("#prompt-input", text);
  await page.click("#send");
  await eventually("prompt accepted", async () => (await page.inputValue("#prompt-input")) === "");
}

async function replies(page, base, id) {
  const response = await page.request.get(base + "/api/sessions/" + id + "/replies");
  assert(response.ok(), "replies status " + response.status());
  return (await response.json()).replies;
}

async function finishedTurns(page, base, id) {
  return (await replies(page, base, id)).filter((r) => r.finished).length;
}

async function waitTurns(page, base, id, n) {
  await eventually(n + " finished turns", async () => (await finishedTurns(page, base, id)) >= n);
  // The state op follows the reply's last chunk; wait until the page shows the turn ended.
  await eventually("idle state shown", async () => (await page.getAttribute("#state", "data-state")) === "idle");
}

// The reference agent greets every new v2 session (background work of an idle session: no turn).
async function greeted(page) {
  await eventually("greeting", async () => (await agentTexts(page)).length > 0);
}

const agentTexts = (page) => page.$$eval("#transcript .entry.agent .md", (nodes) => nodes.map((n) => n.textContent.trim()));
const userTexts = (page) => page.$$eval("#transcript .entry.user .md", (nodes) => nodes.map((n) => n.textContent.trim()));
const thoughtTexts = (page) => page.$$eval("#thoughts .thought", (nodes) => nodes.map((n) => n.textContent));

async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, name + ".png") });
}

// ---- scenarios ------------------------------------------------------------------------------

const scenarios = [];
const scenario = (name, fn) => scenarios.push({ name, fn });

scenario("a prompt streams a reply", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  // Count text changes of the reply while it streams: more than one means it streamed.
  await page.evaluate(() => {
    window.__replyMutations = 0;
    new MutationObserver(() => { window.__replyMutations += 1; })
      .observe(document.getElementById("transcript"), { subtree: true, childList: true, characterData: true });
  });
  await send(page, "/scenario slow");
  await waitTurns(page, base, id, 1);
  const texts = await agentTexts(page);
  assert(texts[texts.length - 1] === SLOW_REPLY, "final reply shown: " + JSON.stringify(texts));
  const mutations = await page.evaluate(() => window.__replyMutations);
  assert(mutations > 3, "reply streamed in steps (" + mutations + " mutations)");
  assert((await userTexts(page)).includes("/scenario slow"), "prompt shown as a user message");
  assert((await page.textContent("#stop-reason")).includes("end_turn"), "stop reason shown");
  assert((await page.textContent("#usage-text")).includes("/"), "usage meter filled");
  await shot(page, "01-streamed-reply");
  await page.close();
});

scenario("a refine scenario ends with only the final text", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario refine");
  await waitTurns(page, base, id, 1);
  await eventually("final refine text", async () => (await agentTexts(page)).slice(-1)[0] === REFINE_REPLY);
  const all = (await page.textContent("#transcript")) || "";
  assert(!all.includes("Sydney"), "no draft text left in the transcript");
  assert(all.split(REFINE_REPLY).length === 2, "final text shown exactly once");
  const thoughts = (await thoughtTexts(page)).join("\n");
  assert(thoughts.includes("the capital is Canberra"), "corrected thought shown");
  assert(!thoughts.includes("maybe it is the capital"), "retracted thought removed");
  const last = (await replies(page, base, id)).slice(-1)[0];
  assert(last.text === REFINE_REPLY, "persisted reply is the final text: " + JSON.stringify(last.text));
  await shot(page, "02-refine-final");
  await page.close();
});

scenario("thoughts sit in their pane and are not persisted", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario thoughts");
  await waitTurns(page, base, id, 1);
  await eventually("reply text", async () => (await agentTexts(page)).slice(-1)[0] === THOUGHTS_REPLY);
  const thoughts = (await thoughtTexts(page)).join("\n");
  assert(thoughts.includes("Native thought chunks go to the thought pane"), "native thought in the pane");
  assert(thoughts.includes("checking that metadata routes this aside"), "metadata-routed thought in the pane");
  // In the transcript a thought is only a folded line inside its turn (transcript.js opens it).
  const shown = await page.$$eval("#transcript > :not(.thought-fold)", (ns) => ns.map((n) => n.textContent).join("\n"));
  assert(!shown.includes("Native thought chunks"), "thought absent from the transcript's other entries");
  assert(!(await page.isVisible("#transcript .thought-fold .fold-body")), "thought folded in the transcript");
  assert((await page.textContent("#plan")).includes("Plan: answer, then stop."), "plan-tagged text in the plan pane");
  const persisted = (await replies(page, base, id)).slice(-1)[0].text;
  assert(persisted === THOUGHTS_REPLY, "persisted reply without thoughts: " + JSON.stringify(persisted));
  await shot(page, "03-thoughts-pane");
  // The pane collapses.
  await page.click("#thoughts-pane > summary");
  assert(!(await page.isVisible("#thoughts")), "thoughts pane collapsed");
  await page.close();
});

scenario("a reload in the middle of a stream loses nothing", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario slow");
  await eventually("reply under way", async () => {
    const t = (await agentTexts(page)).slice(-1)[0] || "";
    return t.startsWith("Slow") && t.length < SLOW_REPLY.length;
  });
  await page.reload();
  await page.waitForSelector("#prompt-form:not([hidden])");
  await waitTurns(page, base, id, 1);
  await eventually("complete reply after reload", async () => (await agentTexts(page)).slice(-1)[0] === SLOW_REPLY);
  const users = await userTexts(page);
  assert(users.filter((u) => u === "/scenario slow").length === 1, "prompt shown once: " + JSON.stringify(users));
  const agents = await agentTexts(page);
  assert(agents.filter((a) => a === SLOW_REPLY).length === 1, "reply shown once");
  await shot(page, "04-after-reload");
  await page.close();
});

scenario("long mixed, refine and snapshot streams end exactly as the server's transcript", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  let turns = 0;
  for (const mix of ["mixed", "refine", "snapshot"]) {
    await send(page, "/stream 1500 " + mix);
    turns += 1;
    await waitTurns(page, base, id, turns);
  }
  const server = await (await page.request.get(base + "/api/sessions/" + id + "/transcript")).json();
  const expected = server.entries.map((e) => ({ id: e.id, kind: e.kind, text: e.text || "" }));
  await eventually("page view equals the server transcript", async () => {
    const shown = await page.evaluate(() => window.SpindleView.entries());
    return JSON.stringify(shown) === JSON.stringify(expected);
  });
  await shot(page, "04c-mixed-stream");
  await page.close();
});

scenario("two tabs stay in sync", async ({ context, base }) => {
  const a = await context.newPage();
  await a.goto(base + "/");
  const id = await newSession(a);
  await greeted(a);
  const b = await context.newPage();
  await openSession(b, base, id);
  await send(a, "hello from tab A");
  await waitTurns(a, base, id, 1);
  await eventually("tab B sees tab A's prompt", async () => (await userTexts(b)).includes("hello from tab A"));
  await send(b, "/scenario thoughts");
  await waitTurns(b, base, id, 2);
  await eventually("tab A sees tab B's prompt and reply", async () =>
    (await userTexts(a)).includes("/scenario thoughts") && (await agentTexts(a)).slice(-1)[0] === THOUGHTS_REPLY);
  await eventually("both tabs show the same transcript", async () =>
    JSON.stringify(await agentTexts(a)) === JSON.stringify(await agentTexts(b)) &&
    JSON.stringify(await userTexts(a)) === JSON.stringify(await userTexts(b)) &&
    JSON.stringify(await thoughtTexts(a)) === JSON.stringify(await thoughtTexts(b)));
  await shot(a, "05-tab-a");
  await shot(b, "05-tab-b");
  await a.close();
  await b.close();
});

scenario("a hostile message stays inert", async ({ context, base }) => {
  const page = await context.newPage();
  const dialogs = [];
  page.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  const response = await page.goto(base + "/");
  const csp = response.headers()["content-security-policy"] || "";
  assert(csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), "strict CSP: " + csp);
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario hostile");
  await waitTurns(page, base, id, 1);
  await eventually("hostile reply complete", async () =>
    ((await agentTexts(page)).slice(-1)[0] || "").endsWith("End of hostile input."));
  // Over 64 KiB a message is drawn clipped (its start and its end) until asked for whole.
  const views = await page.evaluate(() => window.SpindleView.entries());
  assert(views.filter((e) => e.kind === "agent_message").slice(-1)[0].text.length > 1000000, "the 1 MiB line is kept");
  const clipped = await page.$$("#transcript .entry.agent .clip-all");
  assert(clipped.length === 1, "the long reply is drawn clipped");
  await clipped[0].click();
  await eventually("drawn whole", async () => (await page.$$("#transcript .entry.agent .clip-all")).length === 0);
  const transcript = await page.$("#transcript");
  assert((await transcript.$$("script")).length === 0, "no script element");
  assert((await transcript.$$("img")).length === 0, "no img element");
  const hrefs = await page.$$eval("#transcript a", (as) => as.map((a) => a.getAttribute("href")));
  assert(hrefs.every((h) => /^https?:/.test(h)), "only http(s) links: " + JSON.stringify(hrefs));
  const text = (await agentTexts(page)).slice(-1)[0];
  assert(text.includes("<script>alert('xss')</script>"), "script tag shown as text");
  assert(text.includes("[click me](javascript:alert(1))"), "javascript: link shown as text");
  assert(text.length > 1000000, "the 1 MiB line is shown");
  assert(dialogs.length === 0, "no dialog opened: " + JSON.stringify(dialogs));
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, "06-hostile-inert");
  await page.close();
});

scenario("tool calls, plan and a permission answered in the page", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario tools");
  await page.waitForSelector("#transcript .permission-card .choices button");
  await eventually("requires action shown", async () => (await page.getAttribute("#state", "data-state")) === "requires_action");
  await shot(page, "07-permission-prompt");
  const buttons = await page.$$eval("#transcript .permission-card .choices button", (bs) => bs.map((b) => b.dataset.option));
  const allow = buttons.find((o) => /allow/i.test(o)) || buttons[0];
  await page.click('#transcript .permission-card .choices button[data-option="' + allow + '"]');
  await waitTurns(page, base, id, 1);
  await eventually("edit completed", async () =>
    (await page.$$eval("#transcript .entry.tool", (ts) => ts.map((t) => t.dataset.status))).every((s) => s === "completed"));
  await eventually("plan completed", async () =>
    (await page.$$eval("#plan li", (ls) => ls.map((l) => l.dataset.status))).every((s) => s === "completed"));
  assert((await page.textContent("#transcript")).includes("hello, spindle"), "diff content shown");
  await shot(page, "07-tools-done");
  await page.close();
});

scenario("cancel stops a running turn", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/scenario slow");
  await eventually("reply under way", async () => ((await agentTexts(page)).slice(-1)[0] || "").startsWith("Slow"));
  await page.click("#cancel");
  await waitTurns(page, base, id, 1);
  await eventually("cancelled shown", async () => (await page.textContent("#stop-reason")).includes("cancelled"));
  const last = (await agentTexts(page)).slice(-1)[0];
  assert(last.length < SLOW_REPLY.length, "reply cut short: " + last);
  await shot(page, "08-cancelled");
  await page.close();
});

scenario("clear and compaction boundaries show as dividers", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const id = await newSession(page);
  await greeted(page);
  await send(page, "/clear");
  await waitTurns(page, base, id, 1);
  await page.waitForSelector('#transcript .divider[data-reason="clear"]');
  await send(page, "/compact");
  await waitTurns(page, base, id, 2);
  await page.waitForSelector('#transcript .divider[data-reason="compaction"]');
  await eventually("compaction completed", async () =>
    ((await page.textContent('#transcript .divider[data-reason="compaction"]')) || "").includes("completed"));
  await shot(page, "09-dividers");
  await page.close();
});

scenario("the markdown renderer keeps to its allowlist", async ({ context, base }) => {
  const page = await context.newPage();
  await page.goto(base + "/");
  const result = await page.evaluate(async () => {
    const { streaming } = await import("/markdown.js");
    const inputs = [
      "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c]( javascript:alert(1)) [d](data:text/html,<b>x</b>)",
      "[e](vbscript:x) [f](//evil.example/x) [g](/relative) [h](http://ok.example/a?b=\"c\") [i](https://ok.example)",
      "<svg onload=alert(1)> <iframe src=javascript:alert(1)></iframe> **<b>bold</b>** `<script>x</script>`",
      "```html\n<script>alert(1)</script>\n```\n# <img src=x onerror=alert(1)>\n- <a href=javascript:1>x</a>\n> <style>*{}</style>",
    ];
    const allowed = new Set(["P", "BR", "STRONG", "EM", "CODE", "PRE", "A", "UL", "OL", "LI", "BLOCKQUOTE", "H3", "H4", "H5", "H6"]);
    const box = document.createElement("div");
    const bad = [];
    const hrefs = [];
    for (const text of inputs) {
      streaming(box).update(text);
      for (const node of box.querySelectorAll("*")) {
        if (!allowed.has(node.tagName)) bad.push(node.tagName);
        for (const attr of node.attributes) {
          if (!(node.tagName === "A" && ["href", "rel", "target"].includes(attr.name))) bad.push(node.tagName + "@" + attr.name);
        }
        if (node.tagName === "A") hrefs.push(node.getAttribute("href"));
      }
      box.replaceChildren();
    }
    return { bad, hrefs };
  });
  assert(result.bad.length === 0, "only allowlisted elements and attributes: " + JSON.stringify(result.bad));
  assert(JSON.stringify(result.hrefs) === JSON.stringify(["http://ok.example/a?b=%22c%22", "https://ok.example/"]),
    "only absolute http(s) links: " + JSON.stringify(result.hrefs));
  await page.close();
});

scenario("with a token, only the printed URL opens the page", async ({ context, tmp }) => {
  const server = await startServer(path.join(tmp, "token.db"), ["--token", "browser-test-token"]);
  try {
    const origin = new URL(server.printed).origin;
    const page = await context.newPage();
    const denied = await page.goto(origin + "/");
    assert(denied.status() === 401, "no token: " + denied.status());
    await page.goto(server.printed);
    assert(new URL(page.url()).search === "", "token removed from the address bar: " + page.url());
    const id = await newSession(page);
    await greeted(page);
    await send(page, "hello with a token");
    await eventually("reply", async () => (await agentTexts(page)).some((t) => t.includes("hello with a token")));
    await shot(page, "10-token-session");
    await page.close();
    assert(id, "session created");
  } finally {
    server.child.kill("SIGTERM");
  }
});

scenario("a tool call shows its live terminal output and its diffs per file", async ({ context, tmp }) => {
  // The reference agent plays tool calls shaped as production agents send them: Claude Code's
  // display-only terminal in _meta.terminal_info/terminal_output/terminal_exit, and diffs.
  const script = path.join(__dirname, "tool-display.script.jsonl");
  const server = await startServer(path.join(tmp, "tools.db"), [], ["--script", script]);
  try {
    const page = await context.newPage();
    await page.goto(server.url + "/");
    await newSession(page);
    await send(page, "run the tests and edit");
    const term = '#transcript .entry.tool[data-entry-id="toolu_1"]';
    // Live: the first output is shown while the command still runs.
    await eventually("live terminal output", async () =>
      (await page.textContent(term + " .tool-terminal .terminal-output")).includes("running 3 tests")
      && (await page.getAttribute(term, "data-status")) === "in_progress");
    assert(await page.isVisible(term + " .tool-terminal"), "terminal box visible while running");
    await shot(page, "11-tool-terminal-live");
    await eventually("exit shown", async () => (await page.textContent(term + " .terminal-exit")) === "exited with 0");
    const output = await page.textContent(term + " .terminal-output");
    // Control characters made visible (ESC as U+241B), as the chat shows them.
    assert(output === "running 3 tests\ntest parse ... ok\ntest <b>render</b> ... ok\ntest colour \u241b[32mok\u241b[0m\ntest result: ok. 3 passed\n",
      "whole output in order: " + JSON.stringify(output));
    assert((await page.$$(term + " .terminal-output b")).length === 0, "agent output never becomes HTML");
    assert((await page.textContent(term + " .tool-name")) === "Bash", "tool name from _meta.claudeCode.toolName");
    assert(!(await page.textContent(term + " .details")).includes("[terminal"), "the terminal reference is drawn as the terminal");
    const edit = '#transcript .entry.tool[data-entry-id="toolu_2"]';
    // A finished tool call is one line until opened.
    await page.waitForSelector(edit + '[data-status="completed"] .tool-head[aria-expanded="false"]');
    await page.click(edit + " .tool-head");
    await page.waitForSelector(edit + " .file-diff");
    const files = await page.$$eval(edit + " .file-diff", (nodes) => nodes.map((n) => ({
      change: n.dataset.change,
      label: n.querySelector(".change-label").textContent,
      path: n.querySelector(".path").textContent,
      lines: [...n.querySelectorAll(".diff-body span")].map((l) => l.className + " " + l.textContent),
    })));
    assert(files.length === 3, "one block per diff: " + JSON.stringify(files));
    assert(files[0].change === "modify" && files[0].path === "/w/src/lib.rs", JSON.stringify(files[0]));
    assert(JSON.stringify(files[0].lines.slice(0, 4)) === JSON.stringify([
      "hunk @@ -1,5 +1,5 @@\n", "ctx  pub fn add(a: i32, b: i32) -> i32 {\n",
      "del -    a + b\n", "add +    a.checked_add(b).expect(\"<overflow>\")\n"]), JSON.stringify(files[0].lines));
    assert(files[1].label === "new file" && files[1].lines.every((l) => l.startsWith("hunk") || l.startsWith("add")), JSON.stringify(files[1]));
    assert(files[2].label === "deleted" && files[2].lines[1] === "del -bye\n", JSON.stringify(files[2]));
    const colours = await page.$eval(edit + " .diff-body .add", (n) => getComputedStyle(n).backgroundColor);
    assert(colours !== "rgba(0, 0, 0, 0)", "added lines are coloured");
    assert((await page.$$(edit + " .diff-body b, " + edit + " .diff-body overflow")).length === 0, "diff text never becomes HTML");
    await page.$eval(edit, (n) => n.scrollIntoView());
    await shot(page, "12-tool-diffs");
    await page.close();
  } finally {
    server.child.kill("SIGTERM");
  }
});

require("./daily.js")({
  scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted,
  agentTexts, userTexts, shot,
});

require("./defaults.js")({ scenario, startServer: startServerAsIs, eventually, assert, newSession, send, waitTurns, shot });

require("./markdown.js")({ scenario, startServer, eventually, assert, newSession, send, waitTurns, shot });

require("./mcp.js")({ scenario, startServer: startServerAsIs, eventually, assert, newSession, send, waitTurns, shot });

require("./sessions.js")({ scenario, spindle, startServer, eventually, assert, newSession, send, shot, waitTurns });

require("./checkpoints.js")({ scenario, spindle, eventually, assert, newSession, send, shot });

require("./transcript.js")({
  scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted, agentTexts, shot,
});

require("./elicitation.js")({
  scenario, startServer, eventually, assert, newSession, send, waitTurns, greeted, agentTexts, shot,
});

require("./chrome.js")({
  scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted, shot,
});

require("./users.js")({ scenario, startServer: startServerAsIs, eventually, assert, newSession, send, shot });

require("./wire.js")({ scenario, startServer, eventually, assert, newSession, shot });
require("./queue.js")({ scenario, startServer, eventually, assert, newSession, openSession, send, shot });

require("./perf.js")({
  scenario, eventually, assert, newSession, send, waitTurns, finishedTurns, greeted, shot,
});

// ---- runner ---------------------------------------------------------------------------------

// SPINDLE_BROWSER_ASSETS=DIR: the page's files come from DIR instead of the binary (to try page
// edits without a rebuild); the document keeps the server's own answer (status, CSP, headers).
// A page reached through a redirect (the token URL) is not routed: that scenario needs the binary.
const assetDir = process.env.SPINDLE_BROWSER_ASSETS || "";
async function serveAssetsFromDisk(context, dir) {
  const types = { "index.html": "text/html; charset=utf-8" };
  await context.route(/\/([a-z]+\.js|[a-z]+\.css)?$/, async (route) => {
    const url = new URL(route.request().url());
    const name = url.pathname.slice(1) || "index.html";
    // The token URL answers with a redirect and a cookie: left to the server.
    if (url.search || !/^(index\.html|[a-z]+\.js|[a-z]+\.css)$/.test(name)) {
      await route.continue();
      return;
    }
    const body = fs.readFileSync(path.join(dir, name), "utf8");
    if (name === "index.html") {
      // The document keeps the server's status and headers (token check, CSP).
      const response = await route.fetch();
      await route.fulfill({ response, body: response.ok() ? body : await response.text() });
    } else {
      const type = types[name] || (name.endsWith(".css") ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8");
      await route.fulfill({ status: 200, contentType: type, body });
    }
  });
}

let server = null;
(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "spindle-browser-"));
  server = await startServer(path.join(tmp, "spindle.db"));
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    // playwright-core gives every launch a fresh, empty profile directory of its own.
  });
  let passed = 0;
  let failed = 0;
  const only = process.env.SPINDLE_BROWSER_ONLY;
  for (const { name, fn } of scenarios) {
    if (only && !name.includes(only)) continue;
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    if (assetDir) await serveAssetsFromDisk(context, assetDir);
    const started = Date.now();
    try {
      await fn({ context, base: server.url, tmp });
      passed += 1;
      console.log("ok   " + name + " (" + (Date.now() - started) + " ms)");
    } catch (error) {
      failed += 1;
      console.log("FAIL " + name + ": " + (error && error.stack ? error.stack : error));
      for (const page of context.pages()) {
        await page.screenshot({ path: path.join(outDir, "failed-" + name.replace(/\W+/g, "-") + ".png") }).catch(() => {});
      }
    }
    await context.close();
  }
  await browser.close();
  server.child.kill("SIGTERM");
  console.log(passed + " passed, " + failed + " failed");
  if (failed > 0) console.log("server stderr:\n" + server.stderr().slice(-4000));
  fs.rmSync(tmp, { recursive: true, force: true });
  process.exit(failed === 0 ? 0 : 1);
})().catch((error) => {
  if (server) server.child.kill("SIGTERM");
  console.log("0 passed, 1 failed: " + (error && error.stack ? error.stack : error));
  process.exit(1);
});
