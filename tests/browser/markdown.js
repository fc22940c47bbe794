// Browser scenarios of the page's markdown (issue 15, item 4): the server's rendered tree of a
// finished message (highlighted code, HTML and unsafe links kept as text) and the streaming
// renderer that re-renders only the open last block. Loaded by scenarios.js with its helpers.
"use strict";

const path = require("node:path");

module.exports = function register(h) {
  const { scenario, startServer, eventually, assert, newSession, send, waitTurns, shot } = h;
  const script = path.join(__dirname, "markdown.script.jsonl");

  // Checks run inside the page on a container holding rendered markdown: no element that could
  // run or load anything, the attack texts shown as text, no handler ever ran.
  function hostileChecks(root) {
    const problems = [];
    if (root.querySelector("script, img, iframe, object, embed, style, [onclick], [onerror], b")) {
      problems.push("an element from agent HTML was created");
    }
    for (const a of root.querySelectorAll("a")) {
      if (!/^(https?|mailto):/.test(a.href)) problems.push("unsafe link " + a.href);
      if (a.rel.indexOf("noopener") < 0) problems.push("link without noopener");
    }
    const text = root.textContent;
    for (const shown of ["<script>window.__xss = 1</script>", "onerror=\"window.__xss = 2\"", "click me (javascript:window.__xss=3)", "<b onclick="]) {
      if (text.indexOf(shown) < 0) problems.push("not shown as text: " + shown);
    }
    if (window.__xss !== undefined) problems.push("agent script ran: " + window.__xss);
    return problems;
  }

  scenario("markdown: a finished reply is the server's tree, code highlighted, an XSS attempt shown as text", async ({ context, tmp }) => {
    const server = await startServer(path.join(tmp, "markdown.db"), [], ["--script", script]);
    try {
      const page = await context.newPage();
      await page.goto(server.url + "/");
      const id = await newSession(page);
      await send(page, "show me some markdown");
      await waitTurns(page, server.url, id, 1);
      const transcript = await (await page.request.get(server.url + "/api/sessions/" + id + "/transcript")).json();
      const reply = transcript.entries.find((e) => e.kind === "agent_message");
      assert(reply && reply.text.includes("```rust"), "the scripted reply is in the transcript");

      // The route and the builder, on their own.
      const built = await page.evaluate(async ({ session, entry }) => {
        const response = await fetch("/api/sessions/" + session + "/rendered", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ entries: [entry, "no-such-entry"] }),
          credentials: "same-origin",
        });
        const answer = await response.json();
        const item = answer.rendered[0];
        const box = document.createElement("div");
        box.className = "md";
        box.id = "md-check";
        document.body.appendChild(box);
        box.appendChild((await import("/markdown.js")).build(item.tree));
        const code = box.querySelector("pre code.language-rust");
        return {
          status: response.status,
          refused: answer.refused.map((r) => r.id),
          length: item.length,
          keywords: [...box.querySelectorAll("pre code span.hl-keyword")].map((s) => s.textContent),
          comment: [...box.querySelectorAll("pre code span.hl-comment")].map((s) => s.textContent).join(""),
          code: code ? code.textContent : null,
          cells: [...box.querySelectorAll("table td")].map((td) => td.textContent + ":" + td.style.textAlign),
          heading: (box.querySelector("h3") || {}).textContent,
        };
      }, { session: id, entry: reply.id });
      built.problems = await page.$eval("#md-check", hostileChecks);
      await page.$eval("#md-check", (n) => n.remove());
      assert(built.status === 200, "rendered status " + built.status);
      assert(JSON.stringify(built.refused) === JSON.stringify(["no-such-entry"]), "an unknown id is refused: " + JSON.stringify(built.refused));
      assert(built.length === reply.text.length, "length is the text's UTF-16 length");
      assert(built.keywords.includes("fn") && built.keywords.includes("let"), "rust keywords highlighted: " + JSON.stringify(built.keywords));
      assert(built.comment.includes("// the answer"), "comment highlighted: " + built.comment);
      assert(built.code === "fn main() {\n    let answer = 42; // the answer\n    println!(\"{}\", answer);\n}\n", "code text kept exactly: " + JSON.stringify(built.code));
      assert(JSON.stringify(built.cells) === JSON.stringify(["a:left", "1:right", "b:left", "2:right"]), "table with alignment: " + JSON.stringify(built.cells));
      assert(built.heading === "Markdown check", "heading");
      assert(built.problems.length === 0, "hostile input stays text: " + built.problems.join("; "));

      // The transcript itself shows the finished reply from the server's tree.
      const selector = "#transcript .entry.agent .md pre code span.hl-keyword";
      await eventually("the transcript shows the highlighted tree", async () => (await page.$$(selector)).length > 0);
      const problems = await page.$eval("#transcript", hostileChecks);
      assert(problems.length === 0, "transcript: " + problems.join("; "));
      await page.$eval("#transcript .entry.agent .md pre", (n) => n.scrollIntoView());
      await shot(page, "15-markdown-tree");
      await page.close();
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  scenario("markdown: a streaming message re-renders only its open block, and ends as a full render", async ({ context, base }) => {
    const page = await context.newPage();
    await page.goto(base + "/");
    const result = await page.evaluate(async () => {
      const { streaming } = await import("/markdown.js");
      const text = "# Title\n\nFirst paragraph with **bold** and `code`.\nSecond line.\n\n" +
        "- one\n- two\n  continued\n\n```js\nconst a = 1;\n\nconst b = 2;\n```\n\n> quoted\n> more\n\n" +
        "1. first\n2. second\n\nA [link](https://example.com) and <script>window.__xss = 5</script> as text.\n" +
        "Last words";
      const box = document.createElement("div");
      document.body.appendChild(box);
      const renderer = streaming(box);
      const observer = new MutationObserver(() => {});
      observer.observe(box, { childList: true });
      let mostRemoved = 0;
      let lostFinal = 0;
      let kept = [];
      for (let end = 1; end <= text.length; end += 3) {
        renderer.update(text.slice(0, Math.min(end, text.length)));
        const removed = observer.takeRecords().reduce((n, r) => n + r.removedNodes.length, 0);
        mostRemoved = Math.max(mostRemoved, removed);
        // Every block but the last two (the open block and a block the unfinished line starts)
        // must still be the same node after the next update.
        lostFinal += kept.filter((node) => node.parentNode !== box).length;
        kept = [...box.children].slice(0, -2);
      }
      renderer.update(text);
      const fresh = document.createElement("div");
      streaming(fresh).update(text);
      // A cut goes back to a render from the start, equal to a fresh one.
      renderer.truncated();
      renderer.update(text.slice(0, 40));
      const cut = document.createElement("div");
      streaming(cut).update(text.slice(0, 40));
      const cutSame = box.innerHTML === cut.innerHTML && box.textContent.indexOf("Second") < 0;
      // A tree replaces the rendering; the same length keeps it, another length streams again.
      renderer.show([["p", {}, "from the server"]], 40);
      renderer.update(text.slice(0, 40));
      const keptTree = box.textContent === "from the server" && renderer.hasTree;
      renderer.update(text.slice(0, 41));
      const backToStream = !renderer.hasTree && box.textContent.indexOf("Title") >= 0;
      renderer.truncated();
      renderer.update(text);
      // Inline markers without their closers in a long closed paragraph: each looked for once
      // (counted as the characters indexOf is asked to pass over, not by the clock).
      const hostile = document.createElement("div");
      const scanned = { chars: 0 };
      const indexOf = String.prototype.indexOf;
      String.prototype.indexOf = function (needle, from) {
        const found = indexOf.call(this, needle, from);
        scanned.chars += (found < 0 ? this.length : found) - (from || 0);
        return found;
      };
      const brackets = "[a ".repeat(10000) + "_b ".repeat(10000) + "*c ".repeat(10000) + "`d ".repeat(10000);
      try {
        streaming(hostile).update(brackets + "\n\nend");
      } finally {
        String.prototype.indexOf = indexOf;
      }
      // An open block past 32 KiB is plain text that grows in place, then a block once it closes.
      const long = document.createElement("div");
      const longRenderer = streaming(long);
      let paragraph = "";
      for (let n = 0; n < 10; n++) {
        paragraph += ("word **b** ").repeat(400);
        longRenderer.update("intro\n\n" + paragraph);
      }
      const rawNode = long.lastChild;
      const raw = rawNode.dataset.raw === "1" && rawNode.textContent === paragraph;
      longRenderer.update("intro\n\n" + paragraph + "more");
      const grewInPlace = long.lastChild === rawNode && rawNode.textContent === paragraph + "more";
      longRenderer.update("intro\n\n" + paragraph + "more\n\nend");
      const closed = [...long.children].map((n) => n.tagName.toLowerCase()).join(",") === "p,p,p" &&
        long.children[1].querySelectorAll("strong").length === 4000;
      return {
        raw, grewInPlace, closed,
        hostileScan: scanned.chars,
        hostileLength: brackets.length + 3,
        mostRemoved,
        lostFinal,
        same: box.innerHTML === fresh.innerHTML,
        cutSame,
        keptTree,
        backToStream,
        blocks: [...box.children].map((n) => n.tagName.toLowerCase()),
        scripts: box.querySelectorAll("script").length,
        xss: window.__xss,
        text: box.textContent,
      };
    });
    assert(result.mostRemoved <= 2, "an update replaces at most the open block and the one after it (" + result.mostRemoved + ")");
    assert(result.lostFinal === 0, "closed blocks are never rendered again (" + result.lostFinal + " lost)");
    assert(result.same, "streamed rendering equals a rendering of the whole text");
    assert(result.cutSame, "a cut renders the shorter text");
    assert(result.keptTree && result.backToStream, "show() keeps a tree for its length only");
    assert(result.raw && result.grewInPlace && result.closed, "a long open block: plain, grown in place, rendered once closed");
    assert(result.hostileScan < 20 * result.hostileLength, "unclosed markers are looked for once (" + result.hostileScan + " characters scanned for " + result.hostileLength + ")");
    assert(JSON.stringify(result.blocks) === JSON.stringify(["h3", "p", "ul", "pre", "blockquote", "ol", "p"]), "blocks: " + JSON.stringify(result.blocks));
    assert(result.scripts === 0 && result.xss === undefined && result.text.includes("<script>window.__xss = 5</script>"), "HTML stays text");
    await page.close();
  });
};
