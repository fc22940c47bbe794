// Browser scenarios of the user's MCP servers (issue 26, item 2): with `spindle serve
// --mcp-config FILE` the agent pane lists the servers the session's agent was given and names
// the ones left out with why; the new-session form lets a session choose among the configured
// servers (all checked at first); no secret value (env or header) reaches the page. Loaded by
// scenarios.js, which passes its helpers.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const CONFIG = {
  mcpServers: {
    files: { command: "/usr/bin/mcp-files", args: ["--root", "."], env: { FILES_TOKEN: "sekrit-env-value" } },
    web: { type: "http", url: "https://mcp.example/x?key=sekrit-query", headers: { Authorization: "Bearer sekrit-header" } },
  },
};

const CHOICE = {
  mcpServers: {
    files: { command: "/usr/bin/mcp-files", args: ["--root", "."], env: { FILES_TOKEN: "sekrit-env-value" } },
    notes: { command: "/usr/bin/mcp-notes", env: { NOTES_KEY: "sekrit-notes" } },
    web: { type: "http", url: "https://mcp.example/x?key=sekrit-query", headers: { Authorization: "Bearer sekrit-header" } },
  },
};

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, send, waitTurns, shot } = h;

  scenario("the agent pane lists the session's MCP servers and those left out, without secrets", async ({ context, tmp }) => {
    const config = path.join(tmp, "mcp.json");
    fs.writeFileSync(config, JSON.stringify(CONFIG));
    const server = await startServer(path.join(tmp, "mcp.db"), ["--mcp-config", config], ["--delay-ms", "5"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      const pane = "#agent-info .agent-mcp";
      await page.waitForSelector(pane);
      const lines = await page.$$eval(pane + " > div", (rows) => rows.map((r) => r.textContent));
      assert(
        JSON.stringify(lines) === JSON.stringify([
          "MCP servers",
          "files \u00b7 stdio \u00b7 /usr/bin/mcp-files",
          "web (http) not passed: the agent does not advertise agentCapabilities.mcpCapabilities.http",
        ]),
        "pane: " + JSON.stringify(lines),
      );
      await send(page, "/scenario mcp-servers");
      await waitTurns(page, server.url, id, 1);
      const report = "files: stdio /usr/bin/mcp-files, 2 args, env FILES_TOKEN (16 chars)";
      await eventually("the agent's report shown", async () => (await page.textContent("#transcript")).includes(report));
      const html = await page.content();
      assert(!html.includes("sekrit"), "a secret value reached the page");
      const facts = await page.evaluate(async (s) => (await fetch("/api/sessions/" + s + "/agent")).text(), id);
      assert(facts.includes("mcp-files") && !facts.includes("sekrit"), "agent facts: " + facts);
      await shot(page, "26-mcp-agent-pane");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("the new-session form chooses the session's MCP servers, all checked at first, no secrets", async ({ context, tmp }) => {
    const config = path.join(tmp, "mcp-choice.json");
    fs.writeFileSync(config, JSON.stringify(CHOICE));
    const server = await startServer(path.join(tmp, "mcp-choice.db"), ["--mcp-config", config], ["--delay-ms", "5"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const boxes = "#new-session-mcp-list input[type=checkbox]";
      await eventually("the configured servers listed", async () => (await page.locator(boxes).count()) === 3);
      const listed = await page.$$eval("#new-session-mcp-list label", (ls) => ls.map((l) => [l.querySelector("input").checked, l.textContent, l.title]));
      assert(JSON.stringify(listed) === JSON.stringify([
        [true, "filesstdio", "stdio: /usr/bin/mcp-files"],
        [true, "notesstdio", "stdio: /usr/bin/mcp-notes"],
        [true, "webhttp", "http: https://mcp.example/x"],
      ]), "form: " + JSON.stringify(listed));
      await shot(page, "26-mcp-new-session-form");
      // Only "notes": the pane shows it alone, and the agent reports it alone.
      await page.uncheck('#new-session-mcp-list input[value="files"]');
      await page.uncheck('#new-session-mcp-list input[value="web"]');
      const id = await newSession(page);
      const pane = "#agent-info .agent-mcp";
      await page.waitForSelector(pane);
      const lines = await page.$$eval(pane + " > div", (rows) => rows.map((r) => r.textContent));
      assert(JSON.stringify(lines) === JSON.stringify(["MCP servers", "notes \u00b7 stdio \u00b7 /usr/bin/mcp-notes"]), "pane: " + JSON.stringify(lines));
      await send(page, "/scenario mcp-servers");
      await waitTurns(page, server.url, id, 1);
      await eventually("the agent's report shown", async () => (await page.textContent("#transcript")).includes("notes: stdio /usr/bin/mcp-notes"));
      assert(!(await page.textContent("#transcript")).includes("files: stdio"), "files was not chosen");
      const row = await page.evaluate(async (s) => (await (await fetch("/api/sessions")).json()).sessions.find((r) => String(r.id) === s), id);
      assert(JSON.stringify(row.mcpServers) === JSON.stringify(["notes"]), "row: " + JSON.stringify(row));
      // The choice stays as the user left it for the next session; none chosen is none passed.
      await page.uncheck('#new-session-mcp-list input[value="notes"]');
      const bare = await newSession(page);
      await eventually("no server passed", async () => {
        const facts = await page.evaluate(async (s) => (await fetch("/api/sessions/" + s + "/agent")).json(), bare);
        return facts.mcpServers && facts.mcpServers.passed.length === 0;
      });
      const html = await page.content();
      assert(!html.includes("sekrit") && !html.includes("FILES_TOKEN"), "a secret reached the page");
      const form = await page.evaluate(async () => (await fetch("/api/mcp-servers")).text());
      assert(!form.includes("sekrit") && !form.includes("query"), "form list: " + form);
      // Phone width: the form fits, each server is a tap target; and the dark theme.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click('#tabs [data-tab="sessions"]');
      const layout = await page.evaluate(() => ({
        scroll: document.scrollingElement.scrollWidth,
        width: innerWidth,
        rows: [...document.querySelectorAll("#new-session-mcp-list label")].map((l) => l.getBoundingClientRect().height),
      }));
      assert(layout.scroll <= layout.width, "sideways scroll on a phone: " + JSON.stringify(layout));
      assert(layout.rows.every((h) => h >= 44), "tap targets: " + JSON.stringify(layout));
      await shot(page, "26-mcp-new-session-form-phone");
      await page.emulateMedia({ colorScheme: "dark" });
      await shot(page, "26-mcp-new-session-form-phone-dark");
      await page.emulateMedia({ colorScheme: "light" });
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
