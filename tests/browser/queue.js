// Browser scenarios of the prompt queue (issue 27, item 2) with a v1 reference agent: prompts
// sent while a turn runs are queued and shown above the prompt box on every page of the session;
// an item is edited inline and removed (the other page sees it); a cancel holds the queue and
// says so; "Send now" sends an item and the rest follow, in order. Screenshots on a desktop, a
// phone and in the dark theme. Loaded by scenarios.js, which passes its helpers.
"use strict";

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, openSession, send, shot } = h;

  const itemTexts = (page) => page.$$eval("#queue-list .queue-text", (nodes) => nodes.map((n) => n.firstChild.textContent));
  const userTexts = (page) => page.$$eval("#transcript .entry.user .md", (nodes) => nodes.map((n) => n.textContent.trim()));
  const waitItems = (page, expected) =>
    eventually("the queue " + JSON.stringify(expected), async () => JSON.stringify(await itemTexts(page)) === JSON.stringify(expected));
  const running = (page) => eventually("the turn running", async () => (await page.textContent("#send")) === "Queue");
  const item = (page, text) => page.locator("#queue-list .queue-item", { hasText: text });

  scenario("queue: prompts wait for a v1 turn, edited, removed, held by a cancel, sent now and in order", async ({ context, tmp }) => {
    const server = await startServer(require("node:path").join(tmp, "queue.db"), ["--protocol", "1"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      const other = await context.newPage();
      await openSession(other, server.url, id);

      await send(page, "/scenario stall");
      await running(page);
      const placeholder = await page.getAttribute("#prompt-input", "placeholder");
      assert(placeholder.includes("queued and sent when it ends"), "the box says a prompt is queued: " + placeholder);
      for (const text of ["first queued", "second queued", "third queued"]) await send(page, text);
      await waitItems(page, ["first queued", "second queued", "third queued"]);
      await waitItems(other, ["first queued", "second queued", "third queued"]);
      assert((await page.textContent("#queue-head")).includes("sent when the turn ends"), "the queue says when it is sent");

      // Edit inline on one page, remove on the other: both pages show the same queue.
      await item(page, "second queued").locator("button", { hasText: "Edit" }).click();
      await page.fill("#queue-list .queue-draft", "second, edited");
      await page.locator("#queue-list button", { hasText: "Save" }).click();
      await waitItems(other, ["first queued", "second, edited", "third queued"]);
      await item(other, "third queued").locator("button", { hasText: "Remove" }).click();
      await waitItems(page, ["first queued", "second, edited"]);
      await shot(page, "27-queue-desktop");

      // A cancel ends the turn and keeps the queue, held, and says so.
      await page.click("#cancel");
      await eventually("the queue held", async () => (await page.getAttribute("#queue", "data-held")) === "true");
      assert((await page.textContent("#queue-head")).includes("held"), "the held queue says so");
      assert(JSON.stringify(await itemTexts(page)) === JSON.stringify(["first queued", "second, edited"]), "the cancel kept the queue");
      assert((await page.textContent("#send")) === "Send", "with no turn running a prompt is sent");
      await shot(page, "27-queue-held");

      // Send now: the edited item goes; its turn's end sends the other.
      await item(other, "second, edited").locator("button", { hasText: "Send now" }).click();
      await eventually("the queue sent", async () => await page.isHidden("#queue"));
      await eventually("the prompts in order", async () =>
        JSON.stringify(await userTexts(page)) === JSON.stringify(["/scenario stall", "second, edited", "first queued"]));
      await eventually("the last turn over", async () => (await page.getAttribute("#state", "data-state")) === "idle");

      // A phone, then the dark theme: the queue stays readable and its buttons reachable.
      await send(page, "/scenario stall");
      await running(page);
      await send(page, "a longer queued prompt that wraps on a phone's narrow screen, with its buttons below it");
      await send(page, "and a second one");
      await waitItems(page, ["a longer queued prompt that wraps on a phone's narrow screen, with its buttons below it", "and a second one"]);
      await page.setViewportSize({ width: 390, height: 844 });
      const button = await item(page, "and a second one").locator("button", { hasText: "Send now" }).boundingBox();
      assert(button && button.height >= 44 && button.x + button.width <= 390, "a finger-sized button on screen: " + JSON.stringify(button));
      await shot(page, "27-queue-phone");
      await page.emulateMedia({ colorScheme: "dark" });
      await shot(page, "27-queue-phone-dark");
      await page.setViewportSize({ width: 1280, height: 860 });
      await shot(page, "27-queue-desktop-dark");
      await page.click("#cancel");
      await page.close();
      await other.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
