// Browser scenario of `spindle serve --users` (issue 28): the page says who is signed in, an
// observer reads a session but is offered no composer, no new session and no answers, and a
// prompt is named by its author on the other users' pages ("You" on the author's own). Desktop,
// and a phone in the dark theme (screenshots 28-users-*.png). Loaded by scenarios.js.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const CONTROLLER = "controller-token-for-cy-0001";
const OBSERVER = "observer-token-for-ob-00001";

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, send, shot } = h;

  scenario("users: an observer reads only, and each prompt names its author", async ({ context, tmp }) => {
    const users = path.join(tmp, "users.json");
    fs.writeFileSync(users, JSON.stringify({ users: [
      { name: "cy", role: "controller", token: CONTROLLER },
      { name: "ob", role: "observer", token: OBSERVER },
    ] }));
    const server = await startServer(path.join(tmp, "users.db"), ["--protocol", "1", "--users", users]);
    const observerContext = await context.browser().newContext({ viewport: { width: 1280, height: 860 } });
    try {
      // Without a token the page is refused; with one it is traded for a cookie.
      const refused = await context.request.get(server.url + "/api/sessions");
      assert(refused.status() === 401, "no token: " + refused.status());
      const cy = await context.newPage();
      await cy.goto(server.url + "/?token=" + CONTROLLER);
      await eventually("cy signed in", async () => (await cy.textContent("#me")) === "cy");
      assert(!(await cy.isVisible("#observer-note")), "a controller gets no observer note");
      const id = await newSession(cy);
      await send(cy, "hello from cy");
      await eventually("the reply", async () => (await cy.textContent("#transcript")).includes("You said"));
      const ownHead = await cy.textContent("#transcript .entry.user .who");
      assert(ownHead === "You", "the author sees 'You': " + ownHead);

      // The first visit trades the token for a cookie; the session's link opens in a new tab.
      const first = await observerContext.newPage();
      await first.goto(server.url + "/?token=" + OBSERVER);
      await eventually("ob signed in", async () => (await first.textContent("#me")) === "ob");
      await first.close();
      const ob = await observerContext.newPage();
      await ob.goto(server.url + "/#session=" + id);
      await eventually("the session read", async () => (await ob.textContent("#transcript")).includes("You said"));
      const head = await ob.textContent("#transcript .entry.user .who");
      assert(head === "cy", "the observer sees the author: " + head);
      for (const hidden of ["#prompt-form", "#new-session-form"]) {
        assert(!(await ob.isVisible(hidden)), hidden + " is not offered to an observer");
      }
      assert(await ob.isVisible("#observer-note"), "the observer is told why");
      const editable = await ob.$$eval("#session-bar select", (nodes) => nodes.filter((n) => !n.disabled).length);
      assert(editable === 0, "the observer's mode and options are read-only: " + editable);
      const role = await ob.getAttribute("body", "data-role");
      assert(role === "observer", "body role: " + role);
      // The server refuses what the page does not offer.
      const prompt = await ob.request.post(server.url + "/api/sessions/" + id + "/prompt", {
        data: { text: "sneaky" }, headers: { "Content-Type": "application/json" },
      });
      assert(prompt.status() === 403, "an observer's prompt: " + prompt.status());
      // cy answers a permission question: both pages say who (cy sees "You").
      await send(cy, "/scenario tools");
      const card = "#transcript .entry.tool .permission-card .choices button";
      await cy.waitForSelector(card);
      await ob.waitForSelector("#transcript .entry.tool .permission-card", { state: "attached" });
      const offered = await ob.$$eval(card, (bs) => bs.filter((b) => b.offsetParent !== null).length);
      assert(offered === 0, "the observer gets no answer buttons: " + offered);
      const allow = await cy.$$eval(card, (bs) => bs.map((b) => b.dataset.option).find((o) => /allow/i.test(o)));
      await cy.click(card + '[data-option="' + allow + '"]');
      const record = "#transcript .entry.tool .permission-record";
      await eventually("the observer sees who answered", async () =>
        ((await ob.$$eval(record, (ns) => ns.map((n) => n.textContent).join("|"))) || "").includes("permission: " + allow + " (cy)"));
      await eventually("the author sees 'You'", async () =>
        ((await cy.$$eval(record, (ns) => ns.map((n) => n.textContent).join("|"))) || "").includes("permission: " + allow + " (You)"));
      await shot(ob, "28-users-observer");
      await ob.setViewportSize({ width: 390, height: 844 });
      await ob.emulateMedia({ colorScheme: "dark" });
      await ob.click('[data-tab="chat"]');
      await shot(ob, "28-users-observer-phone-dark");
      await shot(cy, "28-users-controller");
    } finally {
      await observerContext.close();
      server.child.kill("SIGTERM");
    }
  });
};
