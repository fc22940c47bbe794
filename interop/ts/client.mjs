// A client on the official ACP TypeScript SDK (npm @agentclientprotocol/sdk):
// v1 from the package root, v2 from its experimental entrypoint.
//
//   node client.mjs conversation [--protocol 1|2] -- AGENT_CMD...
//   node client.mjs bench [--protocol 1|2] PROMPT -- AGENT_CMD...
//
// The conversation drives Spindle's reference agent (plain prompt, /scenario
// tools answering the permission request, /scenario refine, /clear) and checks
// the replies. The bench mode rebuilds the reply from typed session/update
// notifications: chunks append per messageId; a chunk with
// _meta.spindle.snapshot replaces its message; v2 agent_message replaces
// (content [] or null clears). The v1 SDK rejects the agent_message_clear
// extension before any handler sees it, so v1 refine streams cannot be rebuilt.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acpV1 from "@agentclientprotocol/sdk";
import * as acpV2 from "@agentclientprotocol/sdk/experimental/v2";

const PLAIN_PROMPT = "hello from the typescript sdk";
const PLAIN_REPLY =
  'You said: "hello from the typescript sdk" (5 words). Every session update carries the session id, ' +
  "so one connection can serve many sessions.";
const REFINE_FINAL = "The capital of Australia is Canberra. It has been the capital since 1913.";

function fnv1a64(bytes) {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  // Work on 32-bit halves: BigInt per byte is far too slow for 200 MB.
  let hi = Number(h >> 32n) >>> 0;
  let lo = Number(h & 0xffffffffn) >>> 0;
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    // (hi,lo) * (0x100, 0x1b3) mod 2^64
    const loMul = lo * 0x1b3;
    const carry = Math.floor(loMul / 0x100000000);
    const newLo = loMul >>> 0;
    const newHi = (hi * 0x1b3 + lo * 0x100 + carry) >>> 0;
    hi = newHi;
    lo = newLo;
  }
  h = ((BigInt(hi) << 32n) | BigInt(lo)) & mask;
  return h.toString(16).padStart(16, "0");
}

class Turn {
  constructor() {
    this.reset();
  }
  reset() {
    this.kinds = [];
    this.messages = new Map(); // messageId -> array of text pieces
    this.toolStatus = new Map();
    this.usage = [];
    this.permissionRequests = 0;
    this.userMessageIds = [];
    this.notifications = 0;
    this.idle = null;
    this.idlePromise = new Promise((resolve) => (this.resolveIdle = resolve));
  }
  message(id) {
    const key = id ?? "(no id)";
    if (!this.messages.has(key)) this.messages.set(key, []);
    return this.messages.get(key);
  }
  reply() {
    const keys = [...this.messages.keys()];
    return keys.length ? this.messages.get(keys.at(-1)).join("") : "";
  }
  apply(update) {
    this.notifications++;
    const kind = update.sessionUpdate;
    this.kinds.push(kind);
    switch (kind) {
      case "agent_message_chunk": {
        const parts = this.message(update.messageId);
        if (update._meta?.spindle?.snapshot === true) parts.length = 0;
        if (update.content?.type === "text") parts.push(update.content.text);
        break;
      }
      case "agent_message": {
        const parts = this.message(update.messageId);
        if (update.content === undefined) break;
        parts.length = 0;
        for (const block of update.content ?? []) if (block.type === "text") parts.push(block.text);
        break;
      }
      case "user_message":
        this.userMessageIds.push(update.messageId);
        break;
      case "tool_call":
      case "tool_call_update":
        if (update.status != null) this.toolStatus.set(update.toolCallId, update.status);
        else if (!this.toolStatus.has(update.toolCallId)) this.toolStatus.set(update.toolCallId, "pending");
        break;
      case "usage_update":
        this.usage.push(update.used);
        break;
      case "state_update":
        if (update.state === "idle") {
          this.idle = update;
          this.resolveIdle(update);
        }
        break;
    }
  }
}

function spawnAgent(command) {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const stream = (version === 2 ? acpV2 : acpV1).ndJsonStream(
    Writable.toWeb(child.stdin),
    Readable.toWeb(child.stdout),
    { maxMessageBytes: 64 * 1024 * 1024 },
  );
  return { child, stream };
}

let version = 1;

async function withAgent(command, turn, op) {
  const acp = version === 2 ? acpV2 : acpV1;
  const { child, stream } = spawnAgent(command);
  const app = acp
    .client({ name: "spindle-interop-ts" })
    .onNotification(acp.methods.client.session.update, ({ params }) => turn.apply(params.update))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      turn.permissionRequests++;
      const allow = params.options.find((o) => o.kind === "allow_once");
      return allow
        ? { outcome: { outcome: "selected", optionId: allow.optionId } }
        : { outcome: { outcome: "cancelled" } };
    });
  try {
    return await app.connectWith(stream, async (cx) => {
      const init =
        version === 2
          ? await cx.request(acp.methods.agent.initialize, {
              protocolVersion: 2,
              info: { name: "spindle-interop-ts", version: "0.1.0" },
              capabilities: {},
            })
          : await cx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      const session = await cx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
      const prompt = async (text) => {
        turn.reset();
        const response = await cx.request(acp.methods.agent.session.prompt, {
          sessionId: session.sessionId,
          prompt: [{ type: "text", text }],
        });
        if (version === 1) return { stopReason: response.stopReason, response };
        // v2: the response means accepted; the turn ends with state_update idle.
        const idle = await turn.idlePromise;
        return { stopReason: idle.stopReason, response };
      };
      return await op({ init, prompt });
    });
  } finally {
    child.stdin.end();
  }
}

async function conversation(command) {
  const turn = new Turn();
  let passed = 0;
  let failed = 0;
  const check = (name, ok, detail = "") => {
    if (ok) passed++;
    else failed++;
    console.log(`${ok ? "ok  " : "FAIL"} ts v${version} ${name}${ok ? "" : " " + JSON.stringify(detail)}`);
  };
  await withAgent(command, turn, async ({ init, prompt }) => {
    check(`initialize: protocol ${version}`, init.protocolVersion === version, init.protocolVersion);

    let r = await prompt(PLAIN_PROMPT);
    check("plain: end_turn", r.stopReason === "end_turn", r.stopReason);
    check("plain: exact reply", turn.reply() === PLAIN_REPLY, turn.reply());
    check("plain: usage_update", turn.usage.length > 0, turn.kinds);
    if (version === 2) {
      check("plain: prompt answered with the user messageId", typeof r.response.messageId === "string", r.response);
      check("plain: user_message acknowledges it", turn.userMessageIds.includes(r.response.messageId), turn.userMessageIds);
      check("plain: running before idle", turn.kinds.includes("state_update"), turn.kinds);
    }

    r = await prompt("/scenario tools");
    check("tools: one permission request answered", turn.permissionRequests === 1, turn.permissionRequests);
    const statuses = [...turn.toolStatus.values()];
    check("tools: every tool call completed", statuses.length > 0 && statuses.every((s) => s === "completed"), statuses);
    check("tools: plan sent", turn.kinds.includes(version === 2 ? "plan_update" : "plan"), turn.kinds);
    check("tools: end_turn", r.stopReason === "end_turn", r.stopReason);

    r = await prompt("/scenario refine");
    check("refine: end_turn", r.stopReason === "end_turn", r.stopReason);
    if (process.env.SPINDLE_INTEROP_REFINE === "repush") {
      // Through `spindle bridge --policy degrade` to a v2 agent: BRIDGE.md's marked re-push, one
      // message whose last section after the separator is the correction.
      const sections = turn.reply().split("\n\n---\n\n");
      check("refine: marked re-push ends with the correction", sections.length > 1 && sections.at(-1) === REFINE_FINAL, turn.reply());
      check("refine: re-pushed in one message", turn.messages.size === 1, [...turn.messages.keys()]);
    } else {
      check("refine: final message is the correction", turn.reply() === REFINE_FINAL, turn.reply());
      if (version === 2) check("refine: replaced in place (one message)", turn.messages.size === 1, [...turn.messages.keys()]);
      else check("refine: plain v1 gets draft + correction as two messages", turn.messages.size === 2, [...turn.messages.keys()]);
    }

    r = await prompt("/clear");
    check("clear: usage reset to 0", turn.usage.includes(0), turn.usage);
    check("clear: available commands refreshed", turn.kinds.includes("available_commands_update"), turn.kinds);
    check("clear: end_turn", r.stopReason === "end_turn", r.stopReason);

    r = await prompt("/stream 2000 mixed");
    check("stream: 2000 notifications", turn.notifications >= 2000, turn.notifications);
  });
  console.log(`${passed} passed, ${failed} failed`);
  return failed ? 1 : 0;
}

async function bench(promptText, command) {
  const turn = new Turn();
  const out = await withAgent(command, turn, async ({ prompt }) => {
    const r = await prompt(promptText);
    const text = Buffer.from(turn.reply(), "utf8");
    return {
      replyBytes: text.length,
      replyFnv1a64: fnv1a64(text),
      notifications: turn.notifications,
      stopReason: r.stopReason,
    };
  });
  console.log(JSON.stringify(out));
  return 0;
}

const argv = process.argv.slice(2);
const dash = argv.indexOf("--");
if (dash < 1) {
  console.error("usage: node client.mjs conversation|bench [--protocol 1|2] [PROMPT] -- AGENT_CMD...");
  process.exit(2);
}
const head = argv.slice(0, dash);
const command = argv.slice(dash + 1);
const mode = head.shift();
if (head[0] === "--protocol") {
  version = Number(head[1]);
  head.splice(0, 2);
}
const code = mode === "bench" ? await bench(head.join(" "), command) : await conversation(command);
process.exit(code);
