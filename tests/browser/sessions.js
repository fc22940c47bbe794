// Browser scenarios of the session lifecycle (issue 26, item 3) against a small agent that
// offers fork, delete, close, logout and additional directories
// (crates/spindle/tests/end_to_end/serve_sessions_agent.py): the new-session form's additional
// directories, Fork in a row's menu and "forked from" in the list and above the transcript,
// Sign out in the agent pane and signing in again, and the delete dialog's "also delete the
// agent's copy"; and with the reference agent, the agent's title (session_info_update) naming a
// session in the list and the tab until the user renames it, and an agent stopped after being
// idle (`--agent-idle-stop`: the agent pane says why, the next prompt continues). Loaded by
// scenarios.js, which passes its helpers.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const AGENT = path.join(__dirname, "..", "..", "crates", "spindle", "tests", "end_to_end", "serve_sessions_agent.py");

module.exports = function register(h) {
  const { scenario, spindle, eventually, assert, newSession, send, shot, waitTurns, startServer: startReference } = h;

  // `spindle serve --protocol 1 --fs allow` in `work`, running the test agent.
  function startServer(tmp, work) {
    const log = path.join(tmp, "sessions-agent.log");
    const state = path.join(tmp, "sessions-agent.json");
    return new Promise((resolve, reject) => {
      const child = spawn(
        spindle,
        ["serve", "--bind", "127.0.0.1:0", "--db", path.join(tmp, "sessions.db"), "--protocol", "1",
          "--fs", "allow", "--cwd", work, "--", "python3", AGENT, "full"],
        { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, SESSIONS_AGENT_LOG: log, SESSIONS_AGENT_STATE: state, XDG_DATA_HOME: path.join(tmp, "sessions-data") } },
      );
      let out = "";
      let err = "";
      const timer = setTimeout(() => reject(new Error("server did not start: " + out + err)), 20000);
      child.stdout.on("data", (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) { clearTimeout(timer); resolve({ url: m[1].replace(/\/$/, ""), child, state }); }
      });
      child.stderr.on("data", (d) => { err += d; });
      child.on("exit", (code) => { clearTimeout(timer); reject(new Error("server exited " + code + ": " + err)); });
    });
  }

  const rowOf = (page, id) => page.locator('#session-list li[data-session="' + id + '"]');
  const reply = async (page, text) =>
    eventually("the reply " + text, async () => (await page.textContent("#transcript")).includes(text));

  scenario("sessions: additional directories, fork, sign out and in, delete with the agent's copy", async ({ context, tmp }) => {
    const work = path.join(tmp, "lifecycle-work");
    const extra = path.join(tmp, "lifecycle-extra");
    fs.mkdirSync(work, { recursive: true });
    fs.mkdirSync(extra, { recursive: true });
    fs.writeFileSync(path.join(extra, "notes.txt"), "notes beside the project");
    const server = await startServer(tmp, work);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      // A relative directory is refused with the server's reason; nothing is created.
      await page.fill("#new-session-dirs", "relative/dir");
      await page.click("#new-session");
      await eventually("the refusal", async () => (await page.textContent("#banner")).includes("not an absolute path"));
      assert((await page.locator("#session-list li").count()) === 0, "no session created");
      const realExtra = fs.realpathSync(extra);
      await page.fill("#new-session-dirs", realExtra + "\n");
      await shot(page, "26-sessions-new-session-directories");
      const parent = await newSession(page);
      await send(page, "hello lifecycle");
      await reply(page, "echo: hello lifecycle");

      // Fork from the row's menu: offered because the agent can fork.
      await rowOf(page, parent).locator(".session-menu-button").click();
      await page.waitForSelector('.session-menu [data-action="fork"]');
      await shot(page, "26-sessions-menu-fork");
      await page.click('.session-menu [data-action="fork"]');
      await eventually("the fork selected", async () => new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session") !== parent);
      const child = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
      await eventually("forked from, in the list", async () => (await rowOf(page, child).textContent()).includes("forked from hello lifecycle"));
      await eventually("forked from, above the transcript", async () => (await page.textContent("#session-parent")) === "forked from hello lifecycle");
      await reply(page, "echo: hello lifecycle");
      await send(page, "only in the fork");
      await reply(page, "echo: only in the fork");
      await shot(page, "26-sessions-forked");
      // The fork keeps its parent's additional directories, and the file scope follows them.
      const facts = await page.evaluate(async (s) => (await fetch("/api/sessions/" + s + "/agent")).json(), child);
      assert(JSON.stringify(facts.additionalDirectories) === JSON.stringify([realExtra]), "fork dirs: " + JSON.stringify(facts));
      await send(page, "read " + path.join(realExtra, "notes.txt"));
      await reply(page, "read: notes beside the project");

      // Sign out: the pane asks for a sign-in again; signing in continues the session.
      await page.waitForSelector("#agent-info .agent-sign-out");
      await page.click("#agent-info .agent-sign-out");
      await page.waitForSelector("#auth:not([hidden])");
      assert((await page.textContent("#auth-error")).includes("Signed out"), "the sign-out said");
      assert((await page.locator("#agent-info .agent-sign-out").count()) === 0, "no Sign out while signed out");
      await shot(page, "26-sessions-signed-out");
      await page.click('#auth-methods button[data-method="token"]');
      await page.waitForSelector("#auth", { state: "hidden" });
      await send(page, "signed in again");
      await reply(page, "echo: signed in again");

      // Delete the fork with the agent's copy.
      await rowOf(page, child).locator(".session-menu-button").click();
      await page.click('.session-menu [data-action="delete"]');
      await page.waitForSelector("#confirm-agent:not([hidden])");
      await page.check("#confirm-agent-check");
      await shot(page, "26-sessions-delete-agent-copy");
      const forkedAgent = JSON.parse(fs.readFileSync(server.state, "utf8"));
      const forkedIds = Object.keys(forkedAgent.sessions).filter((s) => s.startsWith("f"));
      assert(forkedIds.length === 1, "one fork at the agent: " + JSON.stringify(forkedAgent));
      await page.click("#confirm-ok");
      await eventually("the fork gone from the list", async () => (await rowOf(page, child).count()) === 0);
      await eventually("the agent's copy gone", async () => !(forkedIds[0] in JSON.parse(fs.readFileSync(server.state, "utf8")).sessions));

      // A phone, light and dark: the list with a fork, the form with its directories.
      await rowOf(page, parent).locator(".session-open").click();
      await rowOf(page, parent).locator(".session-menu-button").click();
      await page.click('.session-menu [data-action="fork"]');
      await eventually("a second fork", async () => (await page.locator("#session-list li").count()) === 2);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click('#tabs [data-tab="sessions"]');
      const scroll = await page.evaluate(() => document.scrollingElement.scrollWidth <= innerWidth);
      assert(scroll, "no sideways scroll on a phone");
      await shot(page, "26-sessions-phone");
      await page.emulateMedia({ colorScheme: "dark" });
      await shot(page, "26-sessions-phone-dark");
      await page.emulateMedia({ colorScheme: "light" });
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("sessions: the agent's title names a session in the list and the tab, a rename wins", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    // `/scenario background` ends with session_info_update {title: "Indexed repository"}.
    await send(page, "/scenario background");
    const title = () => rowOf(page, id).locator(".session-title").textContent();
    await eventually("the agent's title in the list", async () => (await title()) === "Indexed repository");
    await eventually("the agent's title on the tab", async () => (await page.title()) === "Indexed repository - Spindle");
    await shot(page, "26-sessions-agent-title");
    await rowOf(page, id).locator(".session-menu-button").click();
    await page.click('.session-menu [data-action="rename"]');
    await page.fill("#session-list .session-rename input", "My own name");
    await page.press("#session-list .session-rename input", "Enter");
    await eventually("the rename in the list", async () => (await title()) === "My own name");
    // The agent names the session again: the rename stays, in the list and on the tab.
    const before = (await page.evaluate(async (s) => (await (await fetch("/api/sessions/" + s + "/replies")).json()).replies, id)).length;
    await send(page, "/scenario background");
    await waitTurns(page, base, id, before + 1);
    await page.reload();
    await page.waitForSelector("#prompt-form:not([hidden])");
    await eventually("the rename kept", async () => (await title()) === "My own name");
    await eventually("the tab keeps the rename", async () => (await page.title()) === "My own name - Spindle");
    const row = await page.evaluate(async (s) => (await (await fetch("/api/sessions")).json()).sessions.find((r) => String(r.id) === s), id);
    assert(row.titleSource === "user", "row: " + JSON.stringify(row));
    await page.close();
  });

  scenario("sessions: an idle agent is stopped, the agent pane says why, the next prompt continues", async ({ context, tmp }) => {
    const server = await startReference(path.join(tmp, "idle.db"), ["--agent-idle-stop", "1"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "first words");
      await waitTurns(page, server.url, id, 1);
      const pane = "#agent-info .agent-note";
      await eventually("the agent pane says the agent was stopped", async () =>
        (await page.locator(pane).count()) > 0 && (await page.textContent(pane)).includes("without activity"));
      assert((await page.textContent("#agent-info .agent-name")) === "The agent is not running", "the pane's heading");
      const facts = await page.textContent("#agent-info .agent-facts");
      assert(facts.includes("no agent"), "facts: " + facts);
      await shot(page, "26-idle-agent-stopped");
      await send(page, "second words");
      await waitTurns(page, server.url, id, 2);
      await eventually("the reply after the restart", async () => (await page.textContent("#transcript")).includes("second words"));
      await eventually("the note gone once the agent runs", async () => (await page.locator(pane).count()) === 0);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
