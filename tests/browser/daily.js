// Browser scenarios of the daily-client features (issue 14): pickers, the command palette,
// @ mentions, images, write reviews, client terminals, permissions that stay with their tool
// call and standing permissions, sign-in, and the agent's session history.
// Loaded by scenarios.js, which passes its helpers.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, openSession, send, waitTurns, greeted, agentTexts, userTexts, shot } = h;

  // A workspace directory for a server's --cwd, with a few files.
  function workspace(tmp, name) {
    const dir = path.join(tmp, name);
    fs.mkdirSync(path.join(dir, "src"), { recursive: true });
    fs.writeFileSync(path.join(dir, "src", "main.rs"), "fn main() {\n    println!(\"hello\");\n}\n");
    fs.writeFileSync(path.join(dir, "src", "lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    fs.writeFileSync(path.join(dir, "README.md"), "# demo\n");
    return dir;
  }

  // Runs `fn(page, server)` against a server of its own; the server stops afterwards.
  async function withServer(context, tmp, name, serveArgs, agentArgs, fn) {
    const server = await startServer(path.join(tmp, name + ".db"), serveArgs, agentArgs);
    try {
      const page = await context.newPage();
      await fn(page, server);
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  }

  const lastAgentText = async (page) => (await agentTexts(page)).slice(-1)[0] || "";

  // The text box's value after typing `text` key by key (so the input events fire).
  async function typeInto(page, text) {
    await page.click("#prompt-input");
    await page.keyboard.type(text);
  }

  const paletteItems = (page) => page.$$eval("#palette .palette-item .palette-name", (ns) => ns.map((n) => n.textContent));

  scenario("mode and model pickers post the choice and come back after a restart", async ({ context, tmp }) => {
    const db = path.join(tmp, "pickers.db");
    let server = await startServer(db);
    let id;
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      id = await newSession(page);
      await greeted(page);
      const mode = '#session-bar select[data-config-id="mode"]';
      await page.waitForSelector(mode);
      const modes = await page.$$eval(mode + " option", (os) => os.map((o) => o.value));
      assert(modes.includes("default") && modes.includes("plan"), "mode choices: " + JSON.stringify(modes));
      assert((await page.inputValue(mode)) === "default", "current mode shown");
      const pickers = await page.$$eval("#session-bar .picker", (ps) => ps.map((p) => p.dataset.category));
      await page.selectOption(mode, "plan");
      // The agent's config_option_update comes back through the engine and stays.
      await eventually("mode changed on the server", async () => {
        const t = await (await page.request.get(server.url + "/api/sessions/" + id + "/transcript")).json();
        return JSON.stringify(t).includes('"currentValue":"plan"');
      });
      assert((await page.inputValue(mode)) === "plan", "picker shows the new mode");
      const model = '#session-bar .picker[data-category="model"] select';
      if (pickers.includes("model")) {
        const values = await page.$$eval(model + " option", (os) => os.map((o) => o.value));
        await page.selectOption(model, values[values.length - 1]);
        await eventually("model changed", async () => (await page.inputValue(model)) === values[values.length - 1]);
      }
      await shot(page, "13-mode-model-pickers");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
    // A restarted server rebuilds the session from its log: the pickers show again.
    await new Promise((r) => server.child.once("exit", r));
    server = await startServer(db);
    try {
      const page = await context.newPage();
      await openSession(page, server.url, id);
      const mode = '#session-bar select[data-config-id="mode"]';
      await page.waitForSelector(mode);
      assert((await page.inputValue(mode)) === "plan", "restored picker keeps the mode");
      await shot(page, "13b-pickers-after-restart");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("a modes-only agent, grouped models and an on/off option get pickers that post the choice", async ({ context, base }) => {
    // Shapes the reference agent does not send (v1 `modes` without config options, grouped
    // select options, a boolean option), played to the page as the server's snapshot.
    const page = await context.newPage();
    const created = await (await page.request.post(base + "/api/sessions", { data: {}, headers: { Origin: base } })).json();
    const snapshot = { ops: [
      { op: "set_session_info", info: { currentModeId: "ask", configOptions: [
        { id: "model", name: "Model", category: "model", type: "select", currentValue: "deep-2", options: [
          { group: "fast", name: "Fast", options: [{ value: "fast-1", name: "Fast 1" }] },
          { group: "deep", name: "Deep", options: [{ value: "deep-2", name: "Deep 2", description: "slow and careful" }] }] },
        { id: "web", name: "Web search", type: "boolean", currentValue: false }],
        availableModes: [{ id: "ask", name: "Ask" }, { id: "code", name: "Code", description: "edits files" }] } },
    ] };
    await page.route("**/api/sessions/" + created.id + "/events", (route) => route.fulfill({
      status: 200, contentType: "text/event-stream",
      body: "retry: 600000\nevent: reset\nid: 1\ndata: " + JSON.stringify(snapshot) + "\n\n",
    }));
    const posted = [];
    let refuse = false;
    for (const tail of ["mode", "config"]) {
      await page.route("**/api/sessions/" + created.id + "/" + tail, (route) => {
        posted.push([tail, route.request().postDataJSON()]);
        return refuse
          ? route.fulfill({ status: 400, contentType: "application/json", body: JSON.stringify({ error: "the agent has no such mode" }) })
          : route.fulfill({ status: 200, contentType: "application/json", body: "{}" });
      });
    }
    // The events route is played by this page itself: no shared worker (its requests are not the page's).
    await page.addInitScript(() => { window.SharedWorker = undefined; });
    await page.goto(base + "/#session=" + created.id);
    await page.waitForSelector("#mode-select");
    assert(JSON.stringify(await page.$$eval("#mode-select option", (os) => os.map((o) => o.value))) === '["ask","code"]', "modes listed");
    assert((await page.inputValue("#mode-select")) === "ask", "current mode");
    const groups = await page.$$eval('select[data-config-id="model"] optgroup', (gs) => gs.map((g) => g.label + ":" + g.children.length));
    assert(JSON.stringify(groups) === '["Fast:1","Deep:1"]', "grouped options: " + JSON.stringify(groups));
    assert((await page.inputValue('select[data-config-id="model"]')) === "deep-2", "current model");
    assert(!(await page.isChecked('input[data-config-id="web"]')), "option off");
    await shot(page, "13c-modes-and-options");
    await page.selectOption("#mode-select", "code");
    await page.selectOption('select[data-config-id="model"]', "fast-1");
    await page.check('input[data-config-id="web"]');
    await eventually("three choices posted", async () => posted.length === 3);
    assert(JSON.stringify(posted) === JSON.stringify([["mode", { modeId: "code" }], ["config", { configId: "model", value: "fast-1" }],
      ["config", { configId: "web", value: true }]]), JSON.stringify(posted));
    // A refused choice goes back to what the agent has, with the reason.
    refuse = true;
    await page.selectOption("#mode-select", "ask");
    await eventually("refusal shown", async () => ((await page.textContent("#banner")) || "").includes("no such mode"));
    assert((await page.inputValue("#mode-select")) === "code", "picker back on the agent's mode");
    await page.close();
  });

  scenario("underscores inside words stay text, between words they are emphasis", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const html = await page.evaluate(async () => {
      const { streaming } = await import("/markdown.js");
      const box = document.createElement("div");
      const out = [];
      for (const text of ["no fs/read_text_file or snake_case_name here", "an _emphasised_ word", "a_b _c d_e", "_".repeat(5000) + "x_y"]) {
        streaming(box).update(text);
        out.push(box.innerHTML);
        box.replaceChildren();
      }
      return out;
    });
    assert(html[0] === "<p>no fs/read_text_file or snake_case_name here</p>", html[0]);
    assert(html[1] === "<p>an <em>emphasised</em> word</p>", html[1]);
    assert(!html[2].includes("<em>"), "no closer between words: " + html[2]);
    assert(html[3].endsWith("x_y</p>"), "a run of underscores stays text");
    await page.close();
  });

  scenario("the slash palette completes commands with their hints", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    await newSession(page);
    await greeted(page);
    await typeInto(page, "/");
    await page.waitForSelector("#palette:not([hidden]) .palette-item");
    const all = await paletteItems(page);
    assert(all.includes("/scenario") && all.includes("/help") && all.includes("/compact"), "every command listed: " + JSON.stringify(all));
    await page.keyboard.type("st");
    await eventually("filtered list", async () => JSON.stringify(await paletteItems(page)) === JSON.stringify(["/stream"]));
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.type("s");
    await eventually("s matches scenario and stream", async () => {
      const items = await paletteItems(page);
      return items[0] === "/scenario" && items.includes("/stream");
    });
    const first = await page.textContent("#palette .palette-item[aria-selected=true]");
    assert(first.includes("Run a scripted behaviour") && first.includes("plain | thoughts"), "description and hint shown: " + first);
    await shot(page, "14-command-palette");
    await page.keyboard.press("ArrowDown");
    const second = await page.textContent("#palette .palette-item[aria-selected=true] .palette-name");
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Tab");
    assert((await page.inputValue("#prompt-input")) === "/scenario ", "Tab picked /scenario");
    assert(await page.isHidden("#palette"), "palette closed after the pick");
    assert((await page.textContent("#prompt-hint")).includes("refine"), "input hint under the box");
    assert(second === "/stream", "arrow moved the selection: " + second);
    // Enter picks too; Escape closes without picking.
    await page.fill("#prompt-input", "");
    await typeInto(page, "/he");
    await page.waitForSelector("#palette:not([hidden]) .palette-item");
    await page.keyboard.press("Enter");
    assert((await page.inputValue("#prompt-input")) === "/help", "Enter picked /help");
    await page.fill("#prompt-input", "");
    await typeInto(page, "/c");
    await page.waitForSelector("#palette:not([hidden]) .palette-item");
    await page.keyboard.press("Escape");
    assert(await page.isHidden("#palette"), "Escape closed the palette");
    assert((await page.inputValue("#prompt-input")) === "/c", "Escape left the text alone");
    await page.close();
  });

  scenario("@ completes file paths and the mention reaches the agent", async ({ context, tmp }) => {
    const dir = workspace(tmp, "mentions");
    await withServer(context, tmp, "mentions", ["--cwd", dir], ["--delay-ms", "5"], async (page, server) => {
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await greeted(page);
      await typeInto(page, "/scenario echo-content look at @src/m");
      await eventually("file completion", async () => (await paletteItems(page)).includes("src/main.rs"));
      assert(!(await paletteItems(page)).includes("README.md"), "only paths with the typed prefix");
      await shot(page, "15-mention-completion");
      await page.keyboard.press("Enter");
      assert((await page.inputValue("#prompt-input")) === "/scenario echo-content look at @src/main.rs ", "path inserted");
      await page.click("#send");
      await waitTurns(page, server.url, id, 1);
      const reply = await lastAgentText(page);
      assert(/resource(_link)?: uri=file:\/\/\S*src\/main\.rs/.test(reply), "the agent got the file: " + reply);
      // A mention outside the workspace is refused by the server: said inline, the text kept.
      const users = (await userTexts(page)).length;
      await page.fill("#prompt-input", "/scenario echo-content @/etc/passwd");
      await page.click("#send");
      await page.waitForSelector("#prompt-error:not([hidden])");
      const refusal = await page.textContent("#prompt-error");
      assert(refusal.startsWith("Prompt not sent: ") && refusal.length > "Prompt not sent: ".length + 10, "clear message: " + refusal);
      assert((await page.inputValue("#prompt-input")) === "/scenario echo-content @/etc/passwd", "text kept for fixing");
      assert((await userTexts(page)).length === users, "nothing sent");
      await shot(page, "15b-mention-refused");
      await page.fill("#prompt-input", "still here?");
      await page.click("#send");
      await waitTurns(page, server.url, id, 2);
      assert(await page.isHidden("#prompt-error"), "the message goes with the next prompt");
    });
  });

  // Pastes a generated PNG into the prompt box, as a clipboard paste does.
  async function pasteImage(page, name) {
    await page.evaluate(async (fileName) => {
      const canvas = document.createElement("canvas");
      canvas.width = 120;
      canvas.height = 80;
      const g = canvas.getContext("2d");
      g.fillStyle = "#1a73e8";
      g.fillRect(0, 0, 120, 80);
      g.fillStyle = "#ffd54f";
      g.fillRect(20, 20, 40, 40);
      const blob = await new Promise((r) => canvas.toBlob(r, "image/png"));
      const data = new DataTransfer();
      data.items.add(new File([blob], fileName, { type: "image/png" }));
      document.getElementById("prompt-input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, name);
  }

  scenario("a pasted image shows as a thumbnail, can be removed and is sent", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await pasteImage(page, "first.png");
    await page.waitForSelector("#attachments .thumb canvas");
    await page.click("#attachments .thumb-remove");
    assert((await page.$$("#attachments .thumb")).length === 0, "removed");
    assert(await page.isHidden("#attachments"), "empty strip hidden");
    await pasteImage(page, "diagram.png");
    await page.waitForSelector("#attachments .thumb canvas");
    // Dropped files: images are attached, anything else is refused with a hint.
    await page.evaluate(async () => {
      const canvas = document.createElement("canvas");
      canvas.width = 30;
      canvas.height = 30;
      canvas.getContext("2d").fillRect(0, 0, 30, 30);
      const blob = await new Promise((r) => canvas.toBlob(r, "image/png"));
      const data = new DataTransfer();
      data.items.add(new File([blob], "dropped.png", { type: "image/png" }));
      data.items.add(new File(["text"], "notes.txt", { type: "text/plain" }));
      document.getElementById("prompt-form").dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await eventually("dropped image attached", async () => (await page.$$("#attachments .thumb canvas")).length === 2);
    assert((await page.textContent("#prompt-error")).includes("notes.txt"), "the text file was refused by name");
    await page.click('#attachments .thumb:has(figcaption:text-matches("dropped")) .thumb-remove');
    assert((await page.$$("#attachments .thumb")).length === 1, "one image left");
    await page.fill("#prompt-input", "/scenario echo-content what is in this picture?");
    await shot(page, "16-image-prompt");
    await page.click("#send");
    await waitTurns(page, base, id, 1);
    const reply = await lastAgentText(page);
    assert(/image: mimeType=image\/png, data \d+ base64 chars/.test(reply), "the agent got the image: " + reply);
    assert((await page.$$("#attachments .thumb")).length === 0, "strip cleared after sending");
    await page.waitForSelector("#transcript .entry.user .message-attachments .thumb canvas");
    await shot(page, "16b-image-sent");
    await page.close();
  });

  scenario("an image is refused inline when the agent does not take images", async ({ context, base }) => {
    const page = await context.newPage();
    // The agent facts as a server reports an agent without the image capability.
    await page.route("**/api/sessions/*/agent", async (route) => {
      const response = await route.fetch();
      const facts = await response.json();
      facts.promptCapabilities = { ...(facts.promptCapabilities || {}), image: false };
      await route.fulfill({ response, json: facts });
    });
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await eventually("agent facts loaded", async () => (await page.textContent("#agent-info")).includes("images: not accepted"));
    await pasteImage(page, "refused.png");
    await page.waitForSelector("#prompt-error:not([hidden])");
    const message = await page.textContent("#prompt-error");
    assert(message.includes("does not accept images"), "clear message: " + message);
    assert((await page.$$("#attachments .thumb")).length === 0, "nothing attached");
    const users = (await userTexts(page)).length;
    await page.fill("#prompt-input", "hello");
    await page.click("#send");
    await waitTurns(page, base, id, 1);
    assert((await userTexts(page)).length === users + 1, "text prompts still go");
    await page.close();
  });

  scenario("a write under the ask policy is reviewed in a card with its diff", async ({ context, tmp }) => {
    const dir = workspace(tmp, "reviews");
    fs.writeFileSync(path.join(dir, "notes.txt"), "one\ntwo\n");
    await withServer(context, tmp, "reviews", ["--cwd", dir, "--fs", "ask"], ["--delay-ms", "5", "--protocol", "1"], async (page, server) => {
      await page.goto(server.url + "/");
      const id = await newSession(page);
      // A v1 agent does not greet: the session is ready once its pickers show.
      await page.waitForSelector("#session-bar .picker");
      await send(page, "/scenario client-fs notes.txt");
      const card = "#transcript .entry.tool .review-card.open";
      await page.waitForSelector(card + " .choices button");
      const entry = await page.$eval(card, (n) => n.closest(".entry").querySelector(".file-diff .diff-body").textContent);
      assert(entry.includes("+Edited by the Spindle reference agent."), "the diff shows the new line: " + entry);
      assert(await page.$eval(card, (n) => n.closest(".entry").querySelector(".file-diff").getClientRects().length > 0),
        "the diff is on screen while the card asks (its tool call open)");
      assert(fs.readFileSync(path.join(dir, "notes.txt"), "utf8") === "one\ntwo\n", "nothing written before the answer");
      await page.$eval(card, (n) => n.scrollIntoView());
      await shot(page, "17-write-review");
      await page.click(card + ' button[data-option="accept"]');
      await waitTurns(page, server.url, id, 1);
      await eventually("accepted shown", async () =>
        (await page.getAttribute("#transcript .review-card", "data-decision")) === "accept");
      assert(fs.readFileSync(path.join(dir, "notes.txt"), "utf8") === "one\ntwo\nEdited by the Spindle reference agent.\n", "written");
      await eventually("the diff says written", async () =>
        (await page.$$eval("#transcript .entry.tool .write-outcome", (ns) => ns.map((n) => n.textContent))).includes("written"));
      const blocks = await page.$$eval("#transcript .review-card", (ns) => ns[0].closest(".entry").querySelectorAll(".details .file-diff").length);
      assert(blocks === 1, "the agent's diff and the write are drawn once: " + blocks);
      // Rejected: the file stays as it was and the card says so.
      await send(page, "/scenario client-fs notes.txt");
      await page.waitForSelector(card + " .choices button");
      await page.click(card + ' button[data-option="reject"]');
      await waitTurns(page, server.url, id, 2);
      await eventually("rejected shown", async () =>
        (await page.$$eval("#transcript .review-card", (ns) => ns.map((n) => n.dataset.decision))).includes("reject"));
      assert(fs.readFileSync(path.join(dir, "notes.txt"), "utf8") === "one\ntwo\nEdited by the Spindle reference agent.\n", "not written");
      assert((await lastAgentText(page)).toLowerCase().includes("reject"), "the agent heard of the rejection");
      assert((await page.$$eval("#transcript .entry.tool .write-outcome", (ns) => ns.map((n) => n.textContent))).includes("rejected"),
        "the diff says rejected");
      await shot(page, "17b-write-rejected");
    });
  });

  scenario("a write outside any tool call is reviewed in a card of its own", async ({ context, tmp }) => {
    const dir = workspace(tmp, "loose-write");
    const target = path.join(dir, "plan.md");
    fs.writeFileSync(target, "# plan\n- one\n");
    // An agent that writes without announcing a tool call (the script knows the path only now).
    const script = path.join(tmp, "loose-write.script.jsonl");
    fs.writeFileSync(script, [
      JSON.stringify({ wait_for_prompt: true }),
      JSON.stringify({ raw: { jsonrpc: "2.0", id: "w-1", method: "fs/write_text_file",
        params: { sessionId: "sess_1", path: target, content: "# plan\n- one\n- two\n" } } }),
      JSON.stringify({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Asked to write the plan." } }),
    ].join("\n") + "\n");
    await withServer(context, tmp, "loose-write", ["--cwd", dir, "--fs", "ask"], ["--protocol", "1", "--script", script], async (page, server) => {
      await page.goto(server.url + "/");
      await newSession(page);
      await page.waitForSelector("#session-bar .picker");
      await send(page, "write the plan");
      const card = "#transcript .review-card.open";
      await page.waitForSelector(card + " .choices button");
      // The card sits in the entry the engine made for the write, with its diff.
      const diff = await page.$eval(card, (n) => {
        const entry = n.closest(".entry");
        const shown = entry && entry.querySelector(".details .file-diff .diff-body");
        return shown ? shown.textContent : "";
      });
      assert(diff.includes("+- two") && diff.includes(" - one"), "diff of the write: " + JSON.stringify(diff));
      await shot(page, "17c-write-review-own-card");
      await page.click(card + ' button[data-option="accept"]');
      await eventually("written", async () => fs.readFileSync(target, "utf8") === "# plan\n- one\n- two\n");
      await eventually("accepted shown", async () => (await page.getAttribute("#transcript .review-card", "data-decision")) === "accept");
    });
  });

  scenario("a client terminal's output shows live in its tool call", async ({ context, tmp }) => {
    const dir = workspace(tmp, "terminals");
    await withServer(context, tmp, "terminals", ["--cwd", dir], ["--delay-ms", "5", "--protocol", "1"], async (page, server) => {
      await page.goto(server.url + "/");
      const id = await newSession(page);
      // A v1 agent does not greet: the session is ready once its pickers show.
      await page.waitForSelector("#session-bar .picker");
      await send(page, "/scenario client-terminal");
      await waitTurns(page, server.url, id, 1);
      const tool = "#transcript .entry.tool:has(.tool-terminal:not([hidden]))";
      await page.waitForSelector(tool);
      await eventually("output shown", async () =>
        (await page.textContent(tool + " .terminal-output")) === "spindle terminal: ok\ntwo\nthree\n");
      await eventually("exit shown", async () => (await page.textContent(tool + " .terminal-exit")) === "exited with 0");
      assert(!(await page.textContent(tool + " .details")).includes("[terminal"), "the terminal reference is drawn as the terminal");
      await shot(page, "18-client-terminal");
      // The same after a reload (rebuilt from the server's log).
      await page.reload();
      await page.waitForSelector(tool);
      await eventually("output after reload", async () =>
        (await page.textContent(tool + " .terminal-output")) === "spindle terminal: ok\ntwo\nthree\n");
      // A command that never ends is shown running, then killed by cancel.
      await send(page, "/scenario client-terminal-forever");
      await eventually("forever output", async () =>
        (await page.$$eval("#transcript .entry.tool .terminal-output", (ns) => ns.map((n) => n.textContent))).includes("waiting until cancelled\n"));
      const running = '#transcript .entry.tool[data-status="in_progress"] .tool-terminal:not([hidden])';
      await page.waitForSelector(running);
      assert((await page.textContent(running + " .terminal-exit")) === "", "no exit while it runs");
      await shot(page, "18b-client-terminal-live");
      await page.click("#cancel");
      await waitTurns(page, server.url, id, 2);
      await eventually("cancelled", async () => (await page.textContent("#stop-reason")).includes("cancelled"));
    });
  });

  scenario("a question stays in its tool call when a prompt is sent while it waits", async ({ context, base }) => {
    // The old page appended the card at the end of the transcript when it arrived; a reset
    // snapshot (reload, second tab, reconnect) put open questions after every entry, so below a
    // prompt sent while the question waited, and answered it stayed there.
    const page = await context.newPage();
    await page.goto(base + "/");
    const id = await newSession(page);
    await greeted(page);
    await send(page, "/scenario tools");
    const card = "#transcript .entry.tool .permission-card .choices button";
    await page.waitForSelector(card);
    await send(page, "sent while asked");
    await page.reload();
    await page.waitForSelector(card);
    const placed = async () => page.$$eval("#transcript > *", (nodes) => {
      const asked = nodes.findIndex((n) => n.querySelector(".permission-card"));
      const later = nodes.findIndex((n) => n.matches(".entry.user") && n.textContent.includes("sent while asked"));
      return { asked, later, loose: nodes.filter((n) => n.matches(".card")).length };
    });
    let where = await placed();
    assert(where.asked >= 0 && where.asked < where.later && where.loose === 0, "card in its tool call, above the later prompt: " + JSON.stringify(where));
    const allow = await page.$$eval(card, (bs) => bs.map((b) => b.dataset.option).find((o) => /allow/i.test(o)));
    await page.click(card + '[data-option="' + allow + '"]');
    await waitTurns(page, base, id, 2);
    const tool = await page.$$eval("#transcript .entry.tool", (ts) => ts.map((t) => t.textContent).join("\n"));
    assert(tool.includes("permission: " + allow), "the answer shows in the tool call");
    assert((await page.$$("#transcript > .card")).length === 0, "no card left at the end");
    await page.close();
  });

  scenario("a permission card stays with its tool call and always answers stand", async ({ context, tmp }) => {
    const script = path.join(__dirname, "always-permission.script.jsonl");
    await withServer(context, tmp, "always", [], ["--script", script], async (page, server) => {
      await page.goto(server.url + "/");
      await newSession(page);
      await send(page, "run the tests");
      const card = '#transcript .entry.tool[data-entry-id="t1"] .permission-card .choices button';
      await page.waitForSelector(card);
      // Reloaded while open: the card comes back inside its tool call, not at the end.
      await page.reload();
      await page.waitForSelector(card);
      await shot(page, "19-permission-in-tool-call");
      await page.click('#transcript .entry.tool[data-entry-id="t1"] .permission-card button[data-option="always"]');
      await eventually("standing permission listed", async () =>
        (await page.$$("#standing-list li")).length === 1);
      assert((await page.textContent("#standing-list")).includes("always allow"), "shown as always allow");
      await send(page, "run them again");
      await eventually("second turn shown", async () => (await agentTexts(page)).includes("Asked again."));
      // The later prompt comes after the first tool call and its answered permission.
      const order = await page.$$eval("#transcript > *", (ns) => ns.map((n) => n.dataset.entryId || n.className));
      const t1 = order.indexOf("t1");
      const second = await page.$$eval("#transcript > .entry.user", (ns) => ns.map((n) => n.dataset.entryId));
      assert(t1 >= 0 && order.indexOf(second[second.length - 1]) > t1, "order: " + JSON.stringify(order));
      assert((await page.textContent('#transcript .entry.tool[data-entry-id="t1"]')).includes("permission: always"), "answer kept in the tool call");
      // The second request was answered by the standing rule: no question asked.
      await page.waitForSelector('#transcript .entry.tool[data-entry-id="t2"]');
      assert((await page.$$('#transcript .entry.tool[data-entry-id="t2"] .permission-card.open')).length === 0, "not asked again");
      await eventually("auto answer recorded", async () =>
        (await page.textContent('#transcript .entry.tool[data-entry-id="t2"]')).includes("always"));
      await page.$eval("#standing-pane", (n) => n.scrollIntoView());
      await shot(page, "19b-standing-permission");
      await page.click("#standing-list button");
      await eventually("forgotten", async () => (await page.$$("#standing-list li")).length === 0);
    });
  });

  scenario("an agent that needs sign-in shows its methods and continues after one", async ({ context, tmp }) => {
    await withServer(context, tmp, "auth", [], ["--delay-ms", "5", "--require-auth"], async (page, server) => {
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await page.waitForSelector("#auth:not([hidden]) #auth-methods button");
      const methods = await page.$$eval("#auth-methods button", (bs) => bs.map((b) => b.dataset.method));
      assert(methods.length > 0, "methods shown");
      await shot(page, "20-auth-methods");
      await page.click("#auth-methods button:not([disabled])");
      await eventually("sign-in card gone", async () => await page.isHidden("#auth"));
      await greeted(page);
      await send(page, "hello after sign-in");
      await waitTurns(page, server.url, id, 1);
      assert((await lastAgentText(page)).includes("hello after sign-in"), "the session works");
    });
  });

  scenario("the history pages through the agent's list and says when the agent keeps none", async ({ context, base }) => {
    const page = await context.newPage();
    const asked = [];
    let supported = true;
    await page.route("**/api/agent-sessions*", (route) => {
      const cursor = new URL(route.request().url()).searchParams.get("cursor");
      asked.push(cursor);
      const body = !supported ? { supported: false, sessions: [], nextCursor: null }
        : cursor === "page-2" ? { supported: true, sessions: [{ sessionId: "s-old", cwd: "/w", title: "older work", updatedAt: "2026-11-20T10:00:00Z" }], nextCursor: null }
          : { supported: true, sessions: [{ sessionId: "s-new", cwd: "/w", title: "<b>newer</b> work", updatedAt: null }], nextCursor: "page-2" };
      return route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(body) });
    });
    await page.goto(base + "/");
    await page.click("#history-pane > summary");
    await page.waitForSelector("#history-list .history-item");
    assert(await page.isVisible("#history-more"), "more offered");
    await page.click("#history-more");
    await eventually("second page appended", async () => (await page.$$("#history-list .history-item")).length === 2);
    const titles = await page.$$eval("#history-list .history-title", (ns) => ns.map((n) => n.textContent));
    assert(JSON.stringify(titles) === '["<b>newer</b> work","older work"]', "titles as text, in order: " + JSON.stringify(titles));
    assert((await page.$$("#history-list b")).length === 0, "a title never becomes HTML");
    assert(await page.isHidden("#history-more"), "no more pages");
    assert(JSON.stringify(asked) === '[null,"page-2"]', "cursor passed: " + JSON.stringify(asked));
    supported = false;
    await page.click("#history-refresh");
    await eventually("unsupported said", async () => (await page.textContent("#history-status")).includes("does not list its sessions"));
    assert((await page.$$("#history-list .history-item")).length === 0, "list emptied");
    await page.close();
  });

  scenario("the agent's earlier sessions are listed and open with their history", async ({ context, tmp }) => {
    const state = path.join(tmp, "agent-state");
    fs.mkdirSync(state, { recursive: true });
    await withServer(context, tmp, "history", [], ["--delay-ms", "5", "--state-dir", state], async (page, server) => {
      await page.goto(server.url + "/");
      const first = await newSession(page);
      await greeted(page);
      await send(page, "remember the word marmalade");
      await waitTurns(page, server.url, first, 1);
      // The agent's history leaves out the sessions open in Spindle's list: this one until it is
      // deleted there (the agent keeps its own copy).
      await page.click("#history-pane > summary");
      await eventually("the open session left out", async () =>
        (await page.textContent("#history-status")).includes("open in Spindle's list"));
      assert((await page.$$("#history-list .history-item:not([hidden])")).length === 0, "nothing else listed");
      const removed = await page.request.delete(server.url + "/api/sessions/" + first);
      assert(removed.ok(), "deleted: " + removed.status());
      await page.click("#history-refresh");
      await page.waitForSelector("#history-list .history-item");
      const count = (await page.$$("#history-list .history-item")).length;
      assert(count >= 1, "listed");
      await shot(page, "21-agent-history");
      const before = (await page.$$("#session-list button")).length;
      await page.click('#history-list .history-item button[data-open="load"]');
      await eventually("a new web session", async () => (await page.$$("#session-list button")).length > before);
      await eventually("history replayed", async () => (await userTexts(page)).includes("remember the word marmalade"));
      const opened = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
      assert(opened !== first, "opened as its own web session");
      await send(page, "and now?");
      await eventually("continues", async () => (await lastAgentText(page)).includes("and now?"));
      await shot(page, "21b-loaded-session");
      // Resume: the same agent session continues without its history replayed (offered once
      // the loaded copy is deleted in Spindle).
      await page.click("#history-refresh");
      await eventually("the loaded session left out", async () =>
        (await page.$$("#history-list .history-item:not([hidden])")).length === 0);
      const gone = await page.request.delete(server.url + "/api/sessions/" + opened);
      assert(gone.ok(), "deleted: " + gone.status());
      await eventually("the deleted session closed", async () => await page.isVisible("#empty"));
      const loaded = (await page.$$("#session-list button")).length;
      await page.click("#history-refresh");
      await page.waitForSelector('#history-list .history-item button[data-open="resume"]');
      await page.click('#history-list .history-item button[data-open="resume"]');
      await eventually("another web session", async () => (await page.$$("#session-list button")).length > loaded);
      await eventually("resumed one selected", async () =>
        new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session") !== opened);
      await send(page, "resumed here");
      await eventually("resumed session answers", async () => (await lastAgentText(page)).includes("resumed here"));
    });
  });
};
