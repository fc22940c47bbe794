// Clients on the official ACP TypeScript SDK's experimental remote transports
// (@agentclientprotocol/sdk/experimental/http-client and ws-client) driving an agent behind an
// RFD `/acp` endpoint: Spindle's `spindle serve` or `spindle bridge --listen`, as a v1 client
// (the SDK's default; `spindle serve --protocol 2`, as run.sh starts it, runs v2 agents and
// translates for it).
//
//   node --experimental-websocket remote.mjs http|ws URL
//
// (Node 20 has WebSocket behind that flag; Node 22+ has it by default.) A plain prompt, then
// /scenario tools answering the permission request; prints one line per check and
// "N passed, M failed"; exit 1 when a check failed.
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";

const [profile, url] = process.argv.slice(2);
if (!["http", "ws"].includes(profile) || !url) {
  console.error("usage: node remote.mjs http|ws URL");
  process.exit(2);
}

const PLAIN_PROMPT = "hello from the typescript remote client";
const TOOLS_REPLY = "I will read the file and then edit it. I changed the greeting in src/main.rs.";

let passed = 0;
let failed = 0;
const check = (name, ok, detail = "") => {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok  " : "FAIL"} ts ${profile} client: ${name}${ok ? "" : " " + JSON.stringify(detail)}`);
};

const seen = { reply: "", user: [], permissions: 0 };
const stream = profile === "http" ? createHttpStream(url) : createWebSocketStream(url);
const app = acp
  .client({ name: "spindle-interop-ts-remote" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content?.type === "text") {
      seen.reply += update.content.text;
    }
    if (update.sessionUpdate === "user_message_chunk" && update.content?.type === "text") {
      seen.user.push(update.content.text);
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    seen.permissions++;
    const allow = params.options.find((o) => o.kind === "allow_once");
    return allow
      ? { outcome: { outcome: "selected", optionId: allow.optionId } }
      : { outcome: { outcome: "cancelled" } };
  });

const timer = setTimeout(() => {
  check("finished within 60 s", false, "timed out");
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(1);
}, 60_000);

try {
  await app.connectWith(stream, async (cx) => {
    const init = await cx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    check("initialize: protocol 1", init.protocolVersion === 1, init.protocolVersion);
    check("initialize: loadSession offered", init.agentCapabilities?.loadSession === true, init.agentCapabilities);
    const session = await cx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    check("session/new: a session id", typeof session.sessionId === "string", session);
    let r = await cx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: PLAIN_PROMPT }],
    });
    check("plain: end_turn", r.stopReason === "end_turn", r.stopReason);
    check("plain: the reply streamed", seen.reply.includes(`You said: "${PLAIN_PROMPT}"`), seen.reply);
    // A v1 client shows its own prompt: Spindle does not send it back (the session's other
    // clients get it as user_message_chunk updates).
    check("plain: its own prompt is not echoed back", seen.user.length === 0, seen.user);
    seen.reply = "";
    r = await cx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "/scenario tools" }],
    });
    check("tools: one permission request answered", seen.permissions === 1, seen.permissions);
    check("tools: end_turn with the allowed edit", r.stopReason === "end_turn" && seen.reply === TOOLS_REPLY, [r.stopReason, seen.reply]);
  });
} catch (error) {
  check("the conversation ran", false, String(error?.stack ?? error));
}
clearTimeout(timer);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
