// Browser scenario of the user's MCP servers (issue 26, item 2): with `spindle serve
// --mcp-config FILE` the agent pane lists the servers the session's agent was given and names
// the ones left out with why, and no secret value (env or header) reaches the page. Loaded by
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
};
