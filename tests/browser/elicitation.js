// Browser scenarios of the agent's questions (issue 26, item 1): an `elicitation/create` form
// rendered as a card from its schema, checked on the page before it is sent, and answered
// `accept` with typed content the reference agent repeats; a URL question shown with its host,
// never opened, declined. Loaded by scenarios.js with its helpers.
"use strict";

const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, send, waitTurns, greeted, agentTexts, shot } = h;

  scenario("elicitation: a form card is checked before it is sent and its answer reaches the agent", async ({ context, tmp }) => {
    for (const protocol of ["1", "2"]) {
      const server = await startServer(path.join(tmp, "elicit-v" + protocol + ".db"), ["--protocol", protocol]);
      try {
        const page = await context.newPage();
        await page.goto(server.url + "/");
        const id = await newSession(page);
        if (protocol === "2") await greeted(page);
        await send(page, "/scenario elicit-form");
        const card = "#transcript .elicitation-card.open";
        await page.waitForSelector(card);
        const fields = await page.$$eval(card + " .elicitation-field .field-label", (ls) => ls.map((l) => l.textContent));
        assert(JSON.stringify(fields) === JSON.stringify(["Project name *", "Contact email", "Budget (hours)", "Workers *", "Write tests", "License", "Targets"]),
          "one input per field in the schema's order: " + JSON.stringify(fields));
        // Defaults are filled in.
        assert(await page.inputValue(card + " .elicitation-field:nth-child(4) input") === "2", "the workers default");
        // Wrong values are refused on the page, each field saying why; nothing is sent.
        await page.fill(card + " .elicitation-field:nth-child(1) input", "x");
        await page.fill(card + " .elicitation-field:nth-child(2) input", "not-an-email");
        await page.fill(card + " .elicitation-field:nth-child(4) input", "9");
        await page.click(card + ' .choices button[data-option="accept"]');
        await eventually("field errors", async () => (await page.$$(card + " .elicitation-field.invalid")).length === 3);
        const errors = await page.$$eval(card + " .field-error", (es) => es.map((e) => e.textContent).filter(Boolean));
        assert(JSON.stringify(errors) === JSON.stringify(["at least 2 characters", "not an email address", "at most 8"]), "errors: " + JSON.stringify(errors));
        assert((await page.$$("#banner:not([hidden])")).length === 0 || !(await page.textContent("#banner")).includes("form"), "no banner: the card says what is wrong");
        if (protocol === "1") await shot(page, "26-elicitation-form-errors");
        await page.fill(card + " .elicitation-field:nth-child(1) input", "demo");
        await page.fill(card + " .elicitation-field:nth-child(2) input", "dev@example.org");
        await page.fill(card + " .elicitation-field:nth-child(3) input", "12.5");
        await page.fill(card + " .elicitation-field:nth-child(4) input", "3");
        assert((await page.$$(card + " .elicitation-field.invalid")).length === 0, "corrected fields drop their errors");
        await page.selectOption(card + " .elicitation-field:nth-child(6) select", "apache-2.0");
        await page.check(card + ' .elicitation-field:nth-child(7) input[value="windows"]');
        if (protocol === "1") {
          await page.$eval(card, (n) => n.scrollIntoView());
          await shot(page, "26-elicitation-form");
        }
        await eventually("buttons enabled", async () => !(await page.$eval(card + ' .choices button[data-option="accept"]', (b) => b.disabled)));
        await page.click(card + ' .choices button[data-option="accept"]');
        await waitTurns(page, server.url, id, 1);
        const reply = (await agentTexts(page)).pop();
        const expected = 'You accepted: budget=12.5, email="dev@example.org", license="apache-2.0", name="demo", targets=["linux","windows"], tests=true, workers=3.';
        assert(reply === expected, "the agent got the typed answer: " + reply);
        await eventually("card closed", async () => (await page.$$(card)).length === 0);
        const outcome = await page.$eval("#transcript .elicitation-card .outcome", (n) => n.textContent);
        assert(outcome === "answered", "the card says it was answered: " + outcome);
        // A second answer finds the question closed.
        const key = await page.$eval("#transcript .elicitation-card", (n) => n.dataset.elicitation);
        const late = await page.request.post(server.url + "/api/sessions/" + id + "/elicitation", { data: { key, action: "decline" } });
        assert(late.status() === 409, "a second answer is refused: " + late.status());
        await page.close();
      } finally {
        server.child.kill("SIGTERM");
      }
    }
  });

  scenario("elicitation: a URL card shows the host, opens nothing and can be declined", async ({ context, tmp }) => {
    const server = await startServer(path.join(tmp, "elicit-url.db"), ["--protocol", "1"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "/scenario elicit-url");
      const card = "#transcript .elicitation-card.open";
      await page.waitForSelector(card);
      const host = await page.$eval(card + " .url-host strong", (n) => n.textContent);
      assert(host === "127.0.0.1", "the host is shown plainly: " + host);
      assert((await page.$$(card + " a")).length === 0, "no link to follow");
      assert(context.pages().length === 1, "nothing was opened");
      await page.$eval(card, (n) => n.scrollIntoView());
      await shot(page, "26-elicitation-url");
      // The server checks too: a form answer for a URL question's key is not needed, but an
      // unknown action is refused with a reason.
      const key = await page.$eval(card, (n) => n.dataset.elicitation);
      const bad = await page.request.post(server.url + "/api/sessions/" + id + "/elicitation", { data: { key, action: "maybe" } });
      assert(bad.status() === 400, "an unknown action is refused: " + bad.status());
      await page.click(card + ' .choices button[data-option="decline"]');
      await waitTurns(page, server.url, id, 1);
      const reply = (await agentTexts(page)).pop();
      assert(reply === "You declined.", "the agent got the answer: " + reply);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("elicitation: a question from inside a tool call is shown in that call, which ends with the answer", async ({ context, tmp }) => {
    const server = await startServer(path.join(tmp, "elicit-tool.db"), ["--protocol", "1"]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "/scenario elicit-tool");
      const inTool = "#transcript .entry.tool .elicitation-card.open";
      await page.waitForSelector(inTool);
      const title = await page.$eval("#transcript .entry.tool .tool-head", (n) => n.textContent);
      assert(title.includes("Configure the demo deployment"), "the card sits in its tool call: " + title);
      assert((await page.$$("#transcript > .elicitation-card")).length === 0, "and not at the end of the transcript");
      await page.$eval(inTool, (n) => n.scrollIntoView());
      await shot(page, "26-elicitation-in-tool-call");
      await page.fill(inTool + " .elicitation-field:nth-child(1) input", "inside");
      await page.click(inTool + ' .choices button[data-option="accept"]');
      await waitTurns(page, server.url, id, 1);
      const reply = (await agentTexts(page)).pop();
      assert(reply.startsWith('You accepted: ') && reply.includes('name="inside"'), "the agent got the answer: " + reply);
      await eventually("the tool call is done", async () =>
        (await page.$eval("#transcript .entry.tool .tool-head", (n) => n.textContent)).includes("done"));
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
