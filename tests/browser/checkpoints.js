// Browser scenario of checkpoints (issue 27, item 1) against a small agent that writes, appends
// and deletes files itself (crates/spindle/tests/end_to_end/serve_checkpoints_agent.py): "Restore
// files" on a user turn opens the diff first (files, +/- lines), Restore puts the files back,
// "Undo this restore" undoes it, and the transcript notes each restore after its turn. On a
// desktop, a phone and in the dark theme (screenshots 27-restore-*.png). Loaded by
// scenarios.js, which passes its helpers.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

const AGENT = path.join(__dirname, "..", "..", "crates", "spindle", "tests", "end_to_end", "serve_checkpoints_agent.py");

module.exports = function register(h) {
  const { scenario, spindle, eventually, assert, newSession, send, shot } = h;

  // `spindle serve --protocol 1` in `work`, running the test agent, its data directory in `tmp`.
  function startServer(tmp, work) {
    return new Promise((resolve, reject) => {
      const child = spawn(
        spindle,
        ["serve", "--bind", "127.0.0.1:0", "--db", path.join(tmp, "checkpoints.db"), "--protocol", "1",
          "--cwd", work, "--", "python3", AGENT],
        { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, XDG_DATA_HOME: path.join(tmp, "checkpoints-data") } },
      );
      let out = "";
      let err = "";
      const timer = setTimeout(() => reject(new Error("server did not start: " + out + err)), 20000);
      child.stdout.on("data", (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) { clearTimeout(timer); resolve({ url: m[1].replace(/\/$/, ""), child }); }
      });
      child.stderr.on("data", (d) => { err += d; });
      child.on("exit", (code) => { clearTimeout(timer); reject(new Error("server exited " + code + ": " + err)); });
    });
  }

  const read = (work, name) => (fs.existsSync(path.join(work, name)) ? fs.readFileSync(path.join(work, name), "utf8") : null);
  const reply = async (page, text) =>
    eventually("the reply " + text, async () => (await page.textContent("#transcript")).includes(text));
  const restoreButton = (turn) => '#transcript .entry.user[data-turn="' + turn + '"] .restore-turn';
  const fileRows = (page) => page.$$eval(".restore-dialog .restore-files .file-diff", (nodes) => nodes.map((n) => ({
    path: n.querySelector(".path").textContent,
    label: n.querySelector(".change-label").textContent,
    counts: n.querySelector(".restore-counts").textContent,
  })));

  scenario("checkpoints: restore to before a turn, the diff first, and undo the restore", async ({ context, tmp }) => {
    const work = path.join(tmp, "checkpoints-work");
    fs.mkdirSync(work, { recursive: true });
    fs.writeFileSync(path.join(work, "edit.txt"), "one\n");
    fs.writeFileSync(path.join(work, "gone.txt"), "gone\n");
    const server = await startServer(tmp, work);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      await newSession(page);
      await send(page, "append edit.txt two; delete gone.txt; write new/made.txt made");
      await reply(page, "did: append edit.txt two");
      await send(page, "write second.txt 2");
      await reply(page, "did: write second.txt 2");
      await page.waitForSelector(restoreButton(1));
      await page.waitForSelector(restoreButton(2));

      // The view shows what a restore to before turn 1 would change, file by file.
      await page.click(restoreButton(1));
      await page.waitForSelector(".restore-dialog[open] .restore-files .file-diff");
      const rows = await fileRows(page);
      assert(JSON.stringify(rows.map((r) => r.path)) === JSON.stringify(["edit.txt", "gone.txt", "new/made.txt", "second.txt"]), JSON.stringify(rows));
      assert(rows[1].label === "comes back" && rows[2].label === "removed" && rows[0].label === "changed back", JSON.stringify(rows));
      assert(rows[0].counts === "+0 \u22121", JSON.stringify(rows[0]));
      assert((await page.textContent(".restore-dialog .restore-summary")).startsWith("4 files would change"), "the summary");
      assert(read(work, "second.txt") === "2\n", "nothing restored before Restore is pressed");
      await shot(page, "27-restore-diff-desktop");

      await page.click(".restore-dialog .dialog-buttons button.danger");
      await page.waitForSelector(".restore-dialog .restore-done");
      assert(read(work, "edit.txt") === "one\n" && read(work, "gone.txt") === "gone\n", "files as before turn 1");
      assert(read(work, "second.txt") === null && read(work, "new/made.txt") === null, "files of the turns removed");
      assert((await page.textContent(".restore-dialog .restore-done")).includes("before turn 1"), "the outcome");
      await shot(page, "27-restore-done-desktop");

      // Undo this restore: its diff first, then the files as after turn 2.
      await page.click(".restore-dialog .dialog-buttons button.primary");
      await page.waitForSelector(".restore-dialog .restore-files .file-diff");
      assert((await page.textContent("#restore-title")) === "Undo the restore", "the undo's title");
      await page.click(".restore-dialog .dialog-buttons button.danger");
      await page.waitForSelector(".restore-dialog .restore-done");
      assert(read(work, "edit.txt") === "one\ntwo\n" && read(work, "second.txt") === "2\n", "the restore undone");
      await page.click(".restore-dialog .dialog-buttons button:not(.primary)");

      // The transcript says what was restored, after the turn it followed.
      await eventually("restores noted after turn 2", async () =>
        (await page.locator('#transcript .turn-end[data-turn="2"] .restore-note').count()) === 2);
      const notes = await page.$$eval('#transcript .turn-end[data-turn="2"] .restore-note', (n) => n.map((x) => x.textContent));
      assert(notes[0].includes("before turn 1") && notes[1].includes("restore 1"), JSON.stringify(notes));
      await shot(page, "27-restore-notes-desktop");

      // A phone: the view fits the width, lines wrap.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.click(restoreButton(2));
      await page.waitForSelector(".restore-dialog[open] .restore-files .file-diff");
      const fits = await page.$eval(".restore-dialog", (d) => d.getBoundingClientRect().right <= window.innerWidth);
      assert(fits, "the view fits a phone's width");
      await shot(page, "27-restore-phone");
      await page.click(".restore-dialog .dialog-buttons button:not(.danger)");

      // The dark theme.
      await page.setViewportSize({ width: 1280, height: 860 });
      await page.selectOption("#theme-choice", "dark");
      await page.click(restoreButton(1));
      await page.waitForSelector(".restore-dialog[open] .restore-files .file-diff");
      const colours = await page.$eval(".restore-dialog", (d) => getComputedStyle(d).backgroundColor);
      assert(colours !== "rgb(255, 255, 255)", "the view follows the dark theme: " + colours);
      await shot(page, "27-restore-dark");
      await page.click(".restore-dialog .dialog-buttons button:not(.danger)");
      await page.selectOption("#theme-choice", "auto");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });
};
