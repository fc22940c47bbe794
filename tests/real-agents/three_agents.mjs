// One `spindle serve`, three agents side by side, in headless Chromium (playwright-core from
// tests/browser/node_modules). Started by three_agents.py, which installs the agents, starts the
// scripted model API and the server.
// Usage: node three_agents.mjs URL OUT_DIR AGENTS_JSON
//   AGENTS_JSON: [{"id", "label", "prompt", "answer"}]: the agent's id in the form's list, the
//   "name version" the page must show for it, what to send and a text its answer must hold.
// For each agent, in a tab of its own: pick it in the new-session form, create the session,
// check its agent above the transcript and in the session list, prompt it and wait for the
// answer in that tab's transcript. Then reload: all three sessions listed with their agents,
// each transcript still holding its answer. Screenshots (desktop and phone width) go to OUT_DIR.
// Prints "N passed, M failed"; exits 1 on a failure.

import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "browser", "package.json"));
const { chromium } = require("playwright-core");

const [base, outDir, agentsJson] = process.argv.slice(2);
const agents = JSON.parse(agentsJson);
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
// A bound so that a broken run fails instead of hanging; never a timing assertion. Production
// agents start slowly (node, a Python venv), two of them at once.
const PATIENCE_MS = 180000;

fs.mkdirSync(outDir, { recursive: true });

function assert(condition, message) {
  if (!condition) throw new Error("assertion failed: " + message);
}

async function eventually(what, check) {
  const deadline = Date.now() + PATIENCE_MS;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error("timed out waiting for " + what + " (last: " + String(last) + ")");
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sessionOf = (page) => new URLSearchParams(new URL(page.url()).hash.slice(1)).get("session");
const agentTexts = (page) => page.$$eval("#transcript .entry.agent", (nodes) => nodes.map((n) => n.textContent));
// The session list: session id -> the agent label shown under its title.
const listedAgents = (page) => page.$$eval("#session-list button", (buttons) =>
  Object.fromEntries(buttons.map((b) => {
    const name = b.querySelector(".session-agent-name");
    return [b.dataset.session, name ? name.textContent : null];
  })));

async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, name + ".png") });
}

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log("ok   " + name);
  } catch (e) {
    failed += 1;
    console.log("FAIL " + name + ": " + (e && e.stack ? e.stack : e));
  }
}

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const sessions = {}; // agent id -> session id
const pages = {};

await check("the form lists the three agents, the default picked", async () => {
  const page = await context.newPage();
  await page.goto(base + "/");
  await eventually("agents listed", async () => (await page.locator("#new-session-agent option").count()) === agents.length);
  const options = await page.$$eval("#new-session-agent option", (os) => os.map((o) => [o.value, o.textContent]));
  for (const a of agents) {
    assert(options.some(([id, text]) => id === a.id && text === a.label), a.id + " listed as " + a.label + ": " + JSON.stringify(options));
  }
  const picked = await page.inputValue("#new-session-agent");
  const served = await (await page.request.get(base + "/api/agents")).json();
  assert(served.agents.find((a) => a.default).id === picked, "the default agent is picked: " + picked);
  await page.close();
});

// Each agent in a tab of its own, all three sessions created before any answer is awaited: the
// server runs the three agents at once.
await check("a session per agent, created from the form, shows its agent", async () => {
  for (const a of agents) {
    const page = await context.newPage();
    pages[a.id] = page;
    await page.goto(base + "/");
    await eventually("agents listed", async () => (await page.locator("#new-session-agent option").count()) === agents.length);
    await page.selectOption("#new-session-agent", a.id);
    await page.click("#new-session");
    await page.waitForSelector("#prompt-form:not([hidden])");
    const id = await eventually("session selected", async () => sessionOf(page));
    sessions[a.id] = id;
    await eventually(a.id + " shown above the transcript", async () =>
      (await page.textContent("#session-agent")) === a.label);
    await eventually(a.id + " shown in the session list", async () => (await listedAgents(page))[id] === a.label);
  }
  assert(new Set(Object.values(sessions)).size === agents.length, "three sessions: " + JSON.stringify(sessions));
});

await check("each agent answers in its own pane", async () => {
  for (const a of agents) {
    const page = pages[a.id];
    await page.fill("#prompt-input", a.prompt);
    await page.click("#send");
    await eventually(a.id + " prompt accepted", async () => (await page.inputValue("#prompt-input")) === "");
  }
  for (const a of agents) {
    const page = pages[a.id];
    await eventually(a.id + " answer", async () => (await agentTexts(page)).some((t) => t.includes(a.answer)));
    await eventually(a.id + " turn over", async () => (await page.getAttribute("#state", "data-state")) === "idle");
    // No other agent's answer reached this pane.
    for (const other of agents) {
      if (other.answer === a.answer) continue;
      assert(!(await agentTexts(page)).some((t) => t.includes(other.answer)), other.id + "'s answer in " + a.id + "'s pane");
    }
    await shot(page, "desktop-" + a.id);
  }
  const response = await pages[agents[0].id].request.get(base + "/api/sessions");
  const listed = (await response.json()).sessions;
  for (const a of agents) {
    const s = listed.find((s) => String(s.id) === sessions[a.id]);
    assert(s && s.agent.id === a.id && s.agent.available, a.id + "'s session records its agent: " + JSON.stringify(s));
  }
});

await check("after a reload all three are listed with their agents and answers", async () => {
  const page = pages[agents[0].id];
  await page.reload();
  await page.waitForSelector("#prompt-form:not([hidden])");
  await eventually("three sessions listed with their agents", async () => {
    const listed = await listedAgents(page);
    return agents.every((a) => listed[sessions[a.id]] === a.label);
  });
  for (const a of agents) {
    await page.click(`#session-list button[data-session="${sessions[a.id]}"]`);
    await eventually(a.id + " shown above the transcript", async () => (await page.textContent("#session-agent")) === a.label);
    await eventually(a.id + " answer after reload", async () => (await agentTexts(page)).some((t) => t.includes(a.answer)));
  }
  await shot(page, "desktop-after-reload");
});

await check("at phone width the form, the list and a session's agent fit", async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await phone.newPage();
  const last = agents[agents.length - 1];
  await page.goto(base + "/#session=" + sessions[last.id]);
  await page.waitForSelector("#prompt-form:not([hidden])");
  await eventually("agent shown", async () => (await page.textContent("#session-agent")) === last.label);
  await eventually(last.id + " answer", async () => (await agentTexts(page)).some((t) => t.includes(last.answer)));
  const wide = await page.evaluate(() => document.documentElement.scrollWidth);
  assert(wide <= 390, "the chat tab is " + wide + "px wide");
  await shot(page, "phone-chat");
  await page.click('#tabs button[data-tab="sessions"]');
  await page.waitForSelector("#new-session-agent", { state: "visible" });
  const widest = await page.evaluate(() => Math.max(document.documentElement.scrollWidth,
    ...[...document.querySelectorAll("#sidebar *")].map((n) => n.getBoundingClientRect().right)));
  assert(widest <= 390, "the sessions tab is " + widest + "px wide");
  await shot(page, "phone-sessions");
  await phone.close();
});

await browser.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
