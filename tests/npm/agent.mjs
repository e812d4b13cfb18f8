// An ACP agent built on the official TypeScript SDK (@agentclientprotocol/sdk), speaking
// newline-delimited JSON-RPC on stdin/stdout. No LLM: on each prompt it echoes the text
// (with _meta), opens a tool call, asks the client for permission, waits for the answer,
// finishes the tool call and ends the turn.
//
//   node agent.mjs          ACP v1 (the package's default entrypoint)
//   node agent.mjs --v2     the v2 draft (the package's "./experimental/v2" entrypoint)

import { Readable, Writable } from "node:stream";

const v2 = process.argv.includes("--v2");
const acp = await import(
  v2 ? "@agentclientprotocol/sdk/experimental/v2" : "@agentclientprotocol/sdk"
);

const AGENT_INFO = { name: "ts-test-agent", title: "TS SDK test agent", version: "0.1.0" };
const OPTIONS = [
  { optionId: "ok", name: "Allow", kind: "allow_once" },
  { optionId: "no", name: "Deny", kind: "reject_once" },
];
const TITLE = "Think about the prompt";

let sessions = 0;
let turns = 0;

const textOf = (block) => (block.type === "text" ? block.text : `[${block.type}]`);
const chosenOption = ({ outcome }) =>
  outcome.outcome === "selected" ? outcome.optionId : outcome.outcome;

// ACP v1: the session/prompt response ends the turn, updates come before it.
async function promptV1({ params, client }) {
  const { sessionId } = params;
  const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
  for (const block of params.prompt) {
    await client.notify(acp.methods.client.session.update, {
      sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `echo: ${textOf(block)}`, _meta: { block: true } },
        _meta: { echo: true },
      },
      _meta: { sdk: "typescript" },
    });
  }
  turns += 1;
  const toolCallId = `call_${turns}`;
  await update({
    sessionUpdate: "tool_call",
    toolCallId,
    title: TITLE,
    kind: "think",
    status: "pending",
    rawInput: { blocks: params.prompt.length },
  });
  const permission = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId, title: TITLE },
    options: OPTIONS,
  });
  const chosen = chosenOption(permission);
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: chosen === "ok" ? "completed" : "failed",
    rawOutput: { permission: chosen },
  });
  return { stopReason: "end_turn" };
}

// ACP v2: session/prompt is only acknowledged ({messageId}); the turn then runs as
// session/update notifications and ends with an idle state_update.
function promptV2({ params, client }) {
  turns += 1;
  const n = turns;
  const messageId = `msg_user_${n}`;
  setImmediate(() => {
    turnV2(client, params, n, messageId).catch((err) => {
      console.error("agent turn failed:", err);
      process.exitCode = 1;
    });
  });
  return { messageId };
}

async function turnV2(client, params, n, userMessageId) {
  const { sessionId } = params;
  const update = (u) => client.notify(acp.methods.client.session.update, { sessionId, update: u });
  await update({ sessionUpdate: "user_message", messageId: userMessageId, content: params.prompt });
  await update({ sessionUpdate: "state_update", state: "running" });
  for (const block of params.prompt) {
    await client.notify(acp.methods.client.session.update, {
      sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        messageId: `msg_agent_${n}`,
        content: { type: "text", text: `echo: ${textOf(block)}`, _meta: { block: true } },
        _meta: { echo: true },
      },
      _meta: { sdk: "typescript" },
    });
  }
  const toolCallId = `call_${n}`;
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    title: TITLE,
    kind: "think",
    status: "pending",
    rawInput: { blocks: params.prompt.length },
  });
  await update({ sessionUpdate: "state_update", state: "requires_action" });
  const permission = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    title: TITLE,
    subject: { type: "tool_call", toolCall: { toolCallId, title: TITLE } },
    options: OPTIONS,
  });
  const chosen = chosenOption(permission);
  await update({ sessionUpdate: "state_update", state: "running" });
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: chosen === "ok" ? "completed" : "failed",
    rawOutput: { permission: chosen },
  });
  await update({ sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" });
}

const app = acp
  .agent({ name: AGENT_INFO.name })
  .onRequest(acp.methods.agent.initialize, ({ params }) =>
    v2
      ? {
          protocolVersion: acp.PROTOCOL_VERSION,
          info: AGENT_INFO,
          capabilities: {},
          _meta: { "ts-sdk": true, requested: params.protocolVersion },
        }
      : {
          protocolVersion: acp.PROTOCOL_VERSION,
          agentCapabilities: { loadSession: false },
          agentInfo: AGENT_INFO,
          _meta: { "ts-sdk": true, requested: params.protocolVersion },
        },
  )
  .onRequest(acp.methods.agent.session.new, () => {
    sessions += 1;
    return { sessionId: `ts-session-${sessions}` };
  })
  .onRequest(acp.methods.agent.session.prompt, v2 ? promptV2 : promptV1);

app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
