// The AI SDK's chat client over PROVIDER=cli-bridge (the stand-in, test/cli-bridge/standin.mjs):
// the same routes and mapping, against the second provider.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { lastAssistantMessageIsCompleteWithApprovalResponses, validateUIMessages } from "ai";
import { startDevServer } from "../../scripts/devserver.mjs";
import { startStandIn } from "../cli-bridge/standin.mjs";
import { assertChunksValid, login, newChat, plain } from "./client.mjs";

let bridge;
let server;
before(async () => {
  bridge = await startStandIn({ port: 0, token: "ai-sdk-bridge-token" });
  server = await startDevServer({
    vars: {
      PROVIDER: "cli-bridge",
      CLI_BRIDGE_URL: bridge.url,
      CLI_BRIDGE_TOKEN: "ai-sdk-bridge-token",
      CLI_BRIDGE_MODEL: "codex/default",
    },
  });
});
after(async () => {
  server?.stop();
  await bridge?.close();
});

let n = 0;
const unique = (prefix) => `${prefix}-${Date.now().toString(36)}-${++n}`;

async function reloaded(token, id) {
  const res = await fetch(`${server.base}/v1/chat/${id}/messages`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  const messages = await res.json();
  await validateUIMessages({ messages });
  return messages;
}

const textOf = (message) =>
  message.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("");

describe("the AI SDK over a CLI Bridge", () => {
  it("a Codex answer streams through the chat client, and a second message continues the conversation", async () => {
    const token = await login(server.base, unique("bridge-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(server.base, token, id);
    await chat.sendMessage({ text: "hello bridge peer" });
    assert.equal(chat.status, "ready", String(chat.error));
    assert.equal(textOf(chat.messages.at(-1)), "echo: hello bridge peer");
    await chat.sendMessage({ text: "and again" });
    assert.equal(textOf(chat.messages.at(-1)), "echo: and again");
    assert.equal(chat.messages.at(-1).metadata.status, "completed");
    await assertChunksValid(await wire.allChunks());
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("the message metadata's usage says where its figures come from and which model served the turn, as /usage does", async () => {
    const token = await login(server.base, unique("bridge-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(server.base, token, id);
    await chat.sendMessage({ text: "[estimated] [served:gpt-5.4] count" });
    assert.equal(chat.status, "ready", String(chat.error));
    const usage = chat.messages.at(-1).metadata.usage;
    assert.deepEqual(
      [usage.provenance.inputTokens, usage.provenance.outputTokens, usage.servedModels],
      ["estimated", "estimated", ["gpt-5.4"]],
    );
    const res = await fetch(`${server.base}/v1/conversations/${id}/usage`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.deepEqual(usage, (await res.json()).turns[0].usage);
    await assertChunksValid(await wire.allChunks());
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("a Pi permission ask approved with addToolApprovalResponse: the tool runs and the turn completes", async () => {
    const token = await login(server.base, unique("bridge-user"));
    const id = unique("chat");
    const { chat, wire, nextFinish } = newChat(server.base, token, id, {
      body: { model: "pi/tangle-router/fake-echo", interactions: { permission: true } },
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: "[permission] run the tests" });
    assert.equal(chat.status, "ready", String(chat.error));
    const ask = chat.messages.at(-1).parts.find((p) => p.type === "dynamic-tool" && p.toolName === "permission");
    assert.equal(ask.state, "approval-requested");
    const done = nextFinish();
    await chat.addToolApprovalResponse({ id: ask.approval.id, approved: true });
    await done;
    const final = chat.messages.at(-1);
    assert.equal(final.parts.find((p) => p.toolName === "permission").state, "output-available");
    assert.equal(final.metadata.status, "completed");
    assert.ok(
      final.parts.some((p) => p.type === "dynamic-tool" && p.toolName !== "permission"),
      "the agent's tool ran",
    );
    await assertChunksValid(await wire.allChunks());
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });
});
