// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk). It spawns
// the agent command given after its options, initializes, opens a session in the current
// directory, sends two prompts, allows every permission request, reads the files the agent
// asks for (v1), and prints one JSON summary of what it saw on stdout.
//
//   node client.mjs [--v2] AGENT_COMMAND [ARGS...]
//
// --v2 uses the package's "./experimental/v2" entrypoint: a prompt is acknowledged with a
// messageId and its turn ends with an idle state_update instead of the prompt response.

import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";

const argv = process.argv.slice(2);
const v2 = argv[0] === "--v2";
const command = v2 ? argv.slice(1) : argv;
if (command.length === 0) {
  console.error("usage: node client.mjs [--v2] AGENT_COMMAND [ARGS...]");
  process.exit(2);
}
const acp = await import(
  v2 ? "@agentclientprotocol/sdk/experimental/v2" : "@agentclientprotocol/sdk"
);

const PROMPTS = ["hello", "héllo ✔"];
const CLIENT_INFO = { name: "ts-test-client", version: "0.1.0" };

const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve, reject) => {
  child.once("error", reject);
  child.once("exit", (code, signal) => resolve({ code, signal }));
});

const updates = [];
const permissions = [];
const reads = [];
let idle = null; // v2: resolves the current turn when the agent reports idle

const app = acp
  .client({ name: CLIENT_INFO.name })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    const u = params.update;
    if (v2 && u.sessionUpdate === "state_update" && u.state === "idle" && idle) {
      idle(u.stopReason);
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once") ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });
if (!v2) {
  app.onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    reads.push(params.path);
    return { content: await readFile(params.path, "utf8") };
  });
}

const initializeParams = v2
  ? { protocolVersion: acp.PROTOCOL_VERSION, info: CLIENT_INFO, capabilities: {} }
  : {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: false }, terminal: false },
      clientInfo: CLIENT_INFO,
    };

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const summary = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, initializeParams);
  const session = await ctx.request(acp.methods.agent.session.new, {
    cwd: process.cwd(),
    mcpServers: [],
  });
  const stopReasons = [];
  const promptResponses = [];
  for (const text of PROMPTS) {
    const turnEnded = new Promise((resolve) => {
      idle = resolve;
    });
    const response = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text }],
    });
    promptResponses.push(response);
    stopReasons.push(v2 ? await turnEnded : response.stopReason);
  }
  return {
    protocolVersion: init.protocolVersion,
    agentInfo: (v2 ? init.info : init.agentInfo) ?? null,
    initializeMeta: init._meta ?? null,
    sessionId: session.sessionId,
    promptResponses,
    stopReasons,
  };
});

// Closing the agent's stdin is how an ACP client ends a stdio connection.
child.stdin.end();
const exit = await exited;
process.stdout.write(
  JSON.stringify({ ...summary, updates, permissions, reads, agentExit: exit }) + "\n",
);
