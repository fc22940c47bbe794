// Browser scenarios of the defaults a new user meets (issue 25, item 1): the agent pane says
// what the negotiated protocol allows (v2 has no client files or terminals), and an edit shows
// its diff in the permission card's tool call before "Allow" and one diff per file after it,
// in protocol 1 (the default) and 2. Loaded by scenarios.js, which passes its helpers.
"use strict";

const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, send, waitTurns, shot } = h;

  // The session's agent is ready (its handshake done): the pane names the protocol. (Only in v2
  // does the reference agent greet a new session, so the greeting is not waited for.)
  const facts = (page) => page.textContent("#agent-info .agent-facts");
  const ready = (page) => eventually("agent ready", async () => (await facts(page)).includes("protocol v"));

  // Runs `fn(page, server)` against a server of its own; the server stops afterwards.
  async function withServer(context, tmp, name, serveArgs, fn) {
    const server = await startServer(path.join(tmp, name + ".db"), serveArgs, ["--delay-ms", "5"]);
    try {
      const page = await context.newPage();
      await fn(page, server);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  }

  scenario("the agent pane shows files and terminals as the negotiated protocol has them", async ({ context, tmp }) => {
    for (const [name, args, expected, absent] of [
      ["default", [], ["protocol v1", "files: ask", "terminals: on"], ["not in protocol"]],
      ["v2", ["--protocol", "2"], ["protocol v2", "files: not in protocol v2", "terminals: not in protocol v2"], ["files: ask", "terminals: on"]],
    ]) {
      await withServer(context, tmp, "pane-" + name, args, async (page, server) => {
        await page.goto(server.url + "/");
        await newSession(page);
        await ready(page);
        const text = await facts(page);
        for (const e of expected) assert(text.includes(e), name + ": " + JSON.stringify(e) + " in " + JSON.stringify(text));
        for (const a of absent) assert(!text.includes(a), name + ": no " + JSON.stringify(a) + " in " + JSON.stringify(text));
        await shot(page, "25-agent-pane-" + name);
      });
    }
  });

  scenario("an edit's diff is in its permission card's tool call before Allow, one diff per file in v1 and v2", async ({ context, tmp }) => {
    for (const protocol of ["1", "2"]) {
      await withServer(context, tmp, "diff-v" + protocol, ["--protocol", protocol], async (page, server) => {
        await page.goto(server.url + "/");
        const id = await newSession(page);
        await ready(page);
        await send(page, "/scenario tools");
        const card = "#transcript .entry.tool .permission-card .choices button";
        await page.waitForSelector(card);
        const files = () => page.$eval("#transcript .permission-card", (c) => [...c.closest(".entry").querySelectorAll(".file-diff")]
          .map((n) => ({ path: n.querySelector(".path").textContent, lines: [...n.querySelectorAll(".diff-body span")].map((l) => l.textContent) })));
        await eventually("v" + protocol + ": the diff shown with the question", async () => (await files()).length > 0);
        const asked = await files();
        const expected = JSON.stringify([{ path: "/workspace/src/main.rs", lines: [
          "@@ -1,3 +1,3 @@\n", " fn main() {\n", "-    println!(\"hello\");\n", "+    println!(\"hello, spindle\");\n", " }\n"] }]);
        assert(JSON.stringify(asked) === expected, "v" + protocol + " before Allow: " + JSON.stringify(asked));
        await page.$eval("#transcript .permission-card", (n) => n.scrollIntoView());
        await shot(page, "25-permission-diff-v" + protocol);
        const allow = await page.$$eval(card, (bs) => bs.map((b) => b.dataset.option).find((o) => /^allow$/.test(o)));
        await page.click(card + '[data-option="' + allow + '"]');
        // The v2 greeting is no turn (a new session is idle): one turn in both versions.
        await waitTurns(page, server.url, id, 1);
        const edit = "#transcript .entry.tool[data-status=\"completed\"]";
        await eventually("v" + protocol + ": edit completed", async () => (await page.$$eval(edit, (ts) => ts.filter((t) => t.querySelector(".file-diff")).length)) === 1);
        const after = await page.$$eval(edit + " .file-diff", (nodes) => nodes.map((n) => ({
          path: n.querySelector(".path").textContent, lines: [...n.querySelectorAll(".diff-body span")].map((l) => l.textContent) })));
        assert(JSON.stringify(after) === expected, "v" + protocol + " one diff per file after Allow: " + JSON.stringify(after));
        await page.$eval(edit + " .file-diff", (n) => n.scrollIntoView());
        await shot(page, "25-edit-diff-v" + protocol);
      });
    }
  });
};
