// The gateway as a backend of the AI SDK (docs/ai-sdk.md#use-it-from-the-ai-sdk), driven by the `ai`
// package's own chat client against `npm start`'s server with the built-in emulator.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  readUIMessageStream,
  validateUIMessages,
} from "ai";
import { startDevServer } from "../../scripts/devserver.mjs";
import { assertChunksValid, chunksOf, login, newChat, plain } from "./client.mjs";

let server;
before(async () => {
  server = await startDevServer({ vars: { EMULATOR_FRAME_DELAY_MS: "15" } });
});
after(() => server?.stop());

let n = 0;
const unique = (prefix) => `${prefix}-${Date.now().toString(36)}-${++n}`;
const base = () => server.base;

async function call(method, path, token, body) {
  const res = await fetch(`${base()}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: json };
}

const counters = async () => (await call("GET", "/_emulator/counters")).body.counters;
const delta = (before, after, name) => (after[name] ?? 0) - (before[name] ?? 0);

async function waitFor(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Lets a run held by `[hold]` (the emulator stops it after its first step,
 * docs/emulator.md#the-emulators-control-routes-local-only) go on once it is held: a test holds a turn running while it
 * does what must happen before the turn's end, instead of racing the emulator's clock.
 */
async function release(token, id, turnId) {
  const executionId = await waitFor(
    async () => (await call("GET", `/v1/conversations/${id}/turns/${turnId}`, token)).body?.executionId,
    "the turn's run",
  );
  await waitFor(
    async () => (await call("GET", `/_emulator/executions/${executionId}/hold`)).body?.held,
    "the run's hold",
  );
  const released = await call("POST", `/_emulator/executions/${executionId}/release`, undefined, {});
  assert.equal(released.status, 200, released.text);
}

/** The chat's messages as the gateway serves them for a reload, checked by the SDK's validator. */
async function reloaded(token, id) {
  const res = await call("GET", `/v1/chat/${id}/messages`, token);
  assert.equal(res.status, 200, res.text);
  await validateUIMessages({ messages: res.body });
  return res.body;
}

const toolPart = (message, toolName) => message.parts.find((p) => p.type === "dynamic-tool" && p.toolName === toolName);
const textOf = (message) =>
  message.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n\n");

describe("POST /v1/chat with the SDK's chat client", () => {
  it("streams an answer with a tool call; a reload's messages validate and equal what was streamed", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    await chat.sendMessage({ text: "What does the README say?" });
    assert.equal(chat.status, "ready", String(chat.error));
    const [user, answer] = chat.messages;
    assert.equal(answer.role, "assistant");
    assert.equal(answer.id, `${user.id}:answer`, "the answer's id is stable per turn");
    const read = toolPart(answer, "read");
    assert.equal(read.state, "output-available");
    assert.deepEqual(read.input, { filePath: "README.md" });
    assert.match(String(read.output), /Demo project/);
    assert.ok(answer.parts.some((p) => p.type === "reasoning" && p.text.length > 0));
    assert.ok(
      answer.parts.filter((p) => p.type === "step-start").length >= 2,
      "the agent's steps are the message's steps",
    );
    // The same text as the native transcript of the same conversation.
    const native = await call("GET", `/v1/conversations/${id}/messages`, token);
    assert.equal(textOf(answer), native.body.messages[1].text);
    // Metadata: the turn and its usage, the same numbers as /usage.
    const usage = await call("GET", `/v1/conversations/${id}/usage`, token);
    assert.equal(answer.metadata.turnId, user.id);
    assert.equal(answer.metadata.status, "completed");
    assert.deepEqual(answer.metadata.usage, usage.body.turns[0].usage);
    // Headers and every chunk as the protocol has them.
    const exchange = wire.exchanges[0];
    assert.equal(exchange.status, 200);
    await exchange.done;
    await assertChunksValid(exchange.chunks);
    assert.deepEqual([exchange.chunks[0].type, exchange.chunks.at(-1).type], ["start", "finish"]);
    // A reload: the gateway's UIMessage[] is what the client holds.
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("subagents are data-subagent parts, one per child task (id its childId), replaced by each update once; a reload has the same", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    // [subagents:dup]: every update is sent twice upstream; the gateway applies each once.
    await chat.sendMessage({ text: "Look around [subagents:dup]" });
    assert.equal(chat.status, "ready", String(chat.error));
    const exchange = wire.exchanges[0];
    await exchange.done;
    await assertChunksValid(exchange.chunks);
    const updates = exchange.chunks.filter((c) => c.type === "data-subagent");
    assert.deepEqual(
      updates.map((c) => [c.id.split(":").at(-1), c.data.status]),
      [
        ["child-explore", "running"],
        ["child-tests", "running"],
        ["child-tests", "failed"],
        ["child-explore", "completed"],
      ],
      "each update once, in order",
    );
    const answer = chat.messages[1];
    const subagents = answer.parts.filter((p) => p.type === "data-subagent");
    assert.deepEqual(
      subagents.map((p) => [p.id, p.data.childId, p.data.parentChildId, p.data.status]),
      [
        [updates[0].id, updates[0].id, undefined, "completed"],
        [updates[1].id, updates[1].id, updates[0].id, "failed"],
      ],
    );
    assert.deepEqual(subagents[0].data.usage, { inputTokens: 2400, outputTokens: 310, cost: 0.0017 });
    assert.equal(subagents[1].data.usage, undefined, "no usage reported: unknown, never zero");
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("carries the agent in the transport's body (the first message chooses the conversation's); a per-request body overrides the model", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const key = `sk-${unique("key")}`;
    assert.equal((await call("PUT", "/v1/credentials/mine", token, { provider: "anthropic", key })).status, 200);
    const { chat } = newChat(base(), token, id, {
      body: {
        credential: "mine",
        model: "anthropic/claude-opus-4-5",
        providerOptions: { backend: { type: "claude-code" } },
      },
    });
    await chat.sendMessage({ text: "[whoami]" });
    assert.equal(chat.status, "ready", String(chat.error));
    assert.match(textOf(chat.messages[1]), /backend claude-code; model anthropic\/claude-opus-4-5/);
    assert.match(textOf(chat.messages[1]), /credential anthropic \(key set\)/);
    assert.doesNotMatch(JSON.stringify(chat.messages), new RegExp(key));
    const summary = await call("GET", `/v1/conversations/${id}`, token);
    assert.deepEqual(summary.body.agent, {
      backend: "claude-code",
      model: "anthropic/claude-opus-4-5",
      chosen: "first-turn",
      credential: "mine",
      mcpServers: [],
    });
    // A request's own body (the SDK's sendMessage options) overrides the model for that message only.
    await chat.sendMessage({ text: "[whoami] again" }, { body: { model: "anthropic/claude-sonnet-4-5" } });
    assert.equal(chat.status, "ready", String(chat.error));
    assert.match(textOf(chat.messages[3]), /backend claude-code; model anthropic\/claude-sonnet-4-5/);
    // A refusal of the agent's fields is the chat's error; nothing was sent.
    const before = await counters();
    const { chat: refused } = newChat(base(), token, unique("chat"), {
      body: { providerOptions: { backend: { type: "no-such-agent" } } },
    });
    await refused.sendMessage({ text: "hi" });
    assert.equal(refused.status, "error");
    assert.match(String(refused.error), /no-such-agent/);
    assert.equal(delta(before, await counters(), "runs.dispatches"), 0);
  });

  it("a first message with a file part: a new user's conversation starts with the file in its sandbox", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    const url = `data:text/plain;base64,${Buffer.from("a screenshot's words\n").toString("base64")}`;
    await chat.sendMessage({
      text: "what does it say?",
      files: [{ type: "file", mediaType: "text/plain", filename: "shot.txt", url }],
    });
    assert.equal(chat.status, "ready", String(chat.error));
    const listed = await call("GET", "/v1/environment/files?path=uploads", token);
    assert.equal(listed.status, 200, listed.text);
    const path = listed.body.entries[0].path;
    assert.match(path, /^uploads\/[A-Za-z0-9]{12}-shot\.txt$/);
    const turn = await call("GET", `/v1/conversations/${id}/turns/${chat.messages[0].id}`, token);
    const execution = await call("GET", `/_emulator/executions/${turn.body.executionId}`);
    assert.equal(execution.body.request.message, `what does it say?\n\nAttached: ${path}, text/plain, 21 bytes`);
  });

  it("a file part (a data: URL) is attached to the turn: written under uploads/, the message says where; a retry names the same one", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    await chat.sendMessage({ text: "hello" });
    assert.equal(chat.status, "ready", String(chat.error));
    const notes = "notes the user attached\n";
    const url = `data:text/plain;base64,${Buffer.from(notes).toString("base64")}`;
    await chat.sendMessage({
      text: "read my notes",
      files: [{ type: "file", mediaType: "image/png", filename: "../my notes.txt", url }],
    });
    assert.equal(chat.status, "ready", String(chat.error));
    const listed = await call("GET", "/v1/environment/files?path=uploads", token);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.entries.length, 1);
    const path = listed.body.entries[0].path;
    assert.match(path, /^uploads\/[A-Za-z0-9]{12}-my notes\.txt$/);
    const content = await call("GET", `/v1/environment/files/content?path=${encodeURIComponent(path)}`, token);
    assert.equal(content.body.content, notes);
    // The turn's message as dispatched names the file, its type sniffed (text, not the part's image/png).
    const userMessage = chat.messages[2];
    const turn = await call("GET", `/v1/conversations/${id}/turns/${userMessage.id}`, token);
    const execution = await call("GET", `/_emulator/executions/${turn.body.executionId}`);
    assert.equal(execution.body.request.message, `read my notes\n\nAttached: ${path}, text/plain, 24 bytes`);
    // The same request again (a retry): the same turn, the same attachment, nothing new written.
    const body = wire.exchanges.at(-1).body;
    const again = await call("POST", "/v1/chat", token, body);
    assert.equal(again.status, 200, again.text);
    const after = await call("GET", "/v1/environment/files?path=uploads", token);
    assert.deepEqual(
      after.body.entries.map((e) => e.path),
      [path],
    );
    // One uploaded before (POST …/attachments) named by the request's body.
    const form = new FormData();
    form.append("file", new Blob(["earlier upload"]), "earlier.txt");
    const uploaded = await (
      await fetch(`${base()}/v1/conversations/${id}/attachments`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: form,
      })
    ).json();
    await chat.sendMessage({ text: "and this one" }, { body: { attachments: [uploaded.id] } });
    assert.equal(chat.status, "ready", String(chat.error));
    const third = await call("GET", `/v1/conversations/${id}/turns/${chat.messages.at(-2).id}`, token);
    const dispatched = await call("GET", `/_emulator/executions/${third.body.executionId}`);
    assert.equal(dispatched.body.request.message, `and this one\n\nAttached: ${uploaded.path}, text/plain, 14 bytes`);
    // A file part that is not a data: URL is refused, naming the part.
    const { chat: remote } = newChat(base(), token, id, { messages: plain(chat.messages) });
    await remote.sendMessage({
      text: "fetch it",
      files: [{ type: "file", mediaType: "text/plain", url: "https://example.com/x.txt" }],
    });
    assert.equal(remote.status, "error");
    assert.match(String(remote.error), /data: URL/);
  });

  it("answers with the protocol's headers", async () => {
    const token = await login(base(), unique("ai-user"));
    const res = await fetch(`${base()}/v1/chat`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        id: unique("chat"),
        trigger: "submit-message",
        messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
      }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("x-vercel-ai-ui-message-stream"), "v1");
    assert.match(res.headers.get("content-type"), /^text\/event-stream/);
    const chunks = chunksOf(await res.text());
    await assertChunksValid(chunks);
  });

  it("a retried message runs once and streams the same turn", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const body = {
      id,
      trigger: "submit-message",
      messages: [{ id: "retry-1", role: "user", parts: [{ type: "text", text: "say it once" }] }],
    };
    const before = await counters();
    const first = await call("POST", "/v1/chat", token, body);
    const second = await call("POST", "/v1/chat", token, body);
    const after = await counters();
    assert.equal(delta(before, after, "runs.dispatches"), 1, "one dispatch for two requests");
    assert.equal(delta(before, after, "runs.started"), 1);
    const messageOf = async (text) => {
      const stream = new ReadableStream({
        start(controller) {
          for (const chunk of chunksOf(text)) controller.enqueue(chunk);
          controller.close();
        },
      });
      let last;
      for await (const m of readUIMessageStream({ stream })) last = m;
      return plain(last);
    };
    assert.deepEqual(await messageOf(second.text), await messageOf(first.text), "the retry streams the same answer");
    const turns = await call("GET", `/v1/conversations/${id}`, token);
    assert.equal(turns.body.turnCount, 1);
  });

  it("a dropped stream resumes with reconnectToStream: nothing lost or doubled; 204 when idle", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    wire.cutNextAfter(12);
    // Held after its first step until the resumed stream is reading it: the resume finds it running.
    await chat.sendMessage({ text: "[slow] take your time [hold]" });
    assert.ok(chat.messages.length >= 1);
    // A new page: no state but the chat id; resume: true calls the stream route.
    const again = newChat(base(), token, id, { messages: chat.messages.slice(0, 1) });
    const resuming = again.chat.resumeStream();
    await waitFor(() => again.chat.status === "streaming", "the resumed stream");
    await release(token, id, chat.messages[0].id);
    await resuming;
    assert.equal(again.chat.status, "ready", String(again.chat.error));
    const turn = await call("GET", `/v1/conversations/${id}/turns/${chat.messages[0].id}`, token);
    assert.equal(turn.body.status, "completed");
    const resumed = again.chat.messages.at(-1);
    assert.equal(resumed.id, `${chat.messages[0].id}:answer`);
    assert.equal(textOf(resumed), turn.body.result.text.split("\n\n").join("\n\n"), "the whole answer, once");
    assert.deepEqual(plain(again.chat.messages), await reloaded(token, id));
    await assertChunksValid(await again.wire.allChunks());
    // Nothing running: 204, and the SDK stays ready.
    const idle = await call("GET", `/v1/chat/${id}/stream`, token);
    assert.equal(idle.status, 204);
    const count = again.chat.messages.length;
    await again.chat.resumeStream();
    assert.equal(again.chat.status, "ready");
    assert.equal(again.chat.messages.length, count);
    // A chat id never used: nothing to resume either, and nothing is stored by asking.
    assert.equal((await call("GET", `/v1/chat/${unique("never")}/stream`, token)).status, 204);
  });

  it("a stream dropped mid-answer by the client: the run goes on, and the resumed message has all of it", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    const sent = chat.sendMessage({ text: "[slow] keep going" });
    await waitFor(() => chat.status === "streaming", "streaming");
    await chat.stop();
    await sent;
    const userId = chat.messages[0].id;
    const turn = await waitFor(async () => {
      const t = await call("GET", `/v1/conversations/${id}/turns/${userId}`, token);
      return t.body.status !== "running" && t.body.status !== "pending" ? t.body : null;
    }, "the turn to finish");
    assert.equal(turn.status, "completed", "stopping the request does not cancel the run");
    const again = newChat(base(), token, id, { messages: await reloaded(token, id) });
    assert.equal(textOf(again.chat.messages.at(-1)), turn.result.text);
  });
});

describe("the agent's asks as the SDK's tool approvals and client-side tools", () => {
  const either = (options) =>
    lastAssistantMessageIsCompleteWithApprovalResponses(options) ||
    lastAssistantMessageIsCompleteWithToolCalls(options);

  async function askFor(message, token, id) {
    const session = newChat(base(), token, id, { sendAutomaticallyWhen: either });
    await session.chat.sendMessage({ text: message });
    assert.equal(session.chat.status, "ready", String(session.chat.error));
    return session;
  }

  it("a permission approved through addToolApprovalResponse: the run goes on in the same message", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire, nextFinish } = await askFor("[permission] run the tests", token, id);
    const answer = chat.messages.at(-1);
    const permission = toolPart(answer, "permission");
    assert.equal(permission.state, "approval-requested");
    assert.equal(permission.input.title, "Run the test suite?");
    const waiting = await call("GET", `/v1/conversations/${id}`, token);
    assert.equal(waiting.body.interactions.length, 1, "the ask is outstanding");
    // The message says what the turn waits for, as the turn does.
    assert.equal(answer.metadata.waitingFor, "awaiting_permission");
    assert.equal(waiting.body.activeTurn.waitingFor, "awaiting_permission");
    const done = nextFinish();
    await chat.addToolApprovalResponse({ id: permission.approval.id, approved: true });
    await done;
    assert.equal(chat.status, "ready", String(chat.error));
    assert.equal(chat.messages.length, 2, "the same assistant message, continued");
    const final = chat.messages.at(-1);
    assert.equal(final.id, answer.id);
    assert.equal(toolPart(final, "permission").state, "output-available");
    assert.equal(toolPart(final, "permission").approval.approved, true);
    assert.equal(toolPart(final, "bash").output, "12 tests passed");
    assert.match(textOf(final), /The tests pass \(allowed once\)/);
    assert.equal(final.metadata.status, "completed");
    assert.equal(final.metadata.waitingFor, null, "answered: it waits for nothing");
    const continuation = wire.exchanges[1];
    assert.equal(continuation.body.messageId, answer.id);
    await assertChunksValid(await wire.allChunks());
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("a permission in the Sandbox SDK's { response } form: approved through addToolApprovalResponse, answered in that form", async () => {
    assert.equal((await call("POST", "/_emulator/variants", undefined, { permissionAnswer: "response" })).status, 200);
    try {
      const token = await login(base(), unique("ai-user"));
      const id = unique("chat");
      const { chat, nextFinish } = await askFor("[permission] run the tests", token, id);
      const permission = toolPart(chat.messages.at(-1), "permission");
      assert.deepEqual(
        permission.input.fields.map((f) => f.name),
        ["response"],
      );
      const done = nextFinish();
      await chat.addToolApprovalResponse({ id: permission.approval.id, approved: true });
      await done;
      assert.equal(chat.status, "ready", String(chat.error));
      const final = chat.messages.at(-1);
      assert.equal(toolPart(final, "bash").output, "12 tests passed");
      assert.match(textOf(final), /The tests pass \(allowed once\)/);
    } finally {
      await call("POST", "/_emulator/variants", undefined, {});
    }
  });

  it("a permission denied with a reason: the agent is told, and the tool call is denied", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire, nextFinish } = await askFor("[permission] run the tests", token, id);
    const permission = toolPart(chat.messages.at(-1), "permission");
    const done = nextFinish();
    await chat.addToolApprovalResponse({ id: permission.approval.id, approved: false, reason: "not on my machine" });
    await done;
    await assertChunksValid(await wire.allChunks());
    const final = chat.messages.at(-1);
    assert.equal(toolPart(final, "permission").state, "output-denied");
    assert.equal(toolPart(final, "bash"), undefined, "the tool never ran");
    assert.match(textOf(final), /You denied running the tests \(not on my machine\)/);
    // The reload is the streamed message less the client's own reason: the gateway never stores an answer.
    const reload = await reloaded(token, id);
    assert.equal(toolPart(reload.at(-1), "permission").approval.reason, undefined);
    const streamed = plain(chat.messages);
    delete toolPart(streamed.at(-1), "permission").approval.reason;
    assert.deepEqual(reload, streamed);
  });

  it("a question answered through addToolOutput; an invalid answer is a clear error and the ask stays open", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire, nextFinish } = await askFor("[ask] set up tests", token, id);
    const question = toolPart(chat.messages.at(-1), "question");
    assert.equal(question.state, "input-available");
    assert.ok(question.input.fields.some((f) => f.name === "project"));
    // Invalid: the project name must be text.
    let done = nextFinish();
    await chat.addToolOutput({
      tool: "question",
      toolCallId: question.toolCallId,
      output: { project: 5, framework: "vitest" },
    });
    await done;
    assert.equal(chat.status, "error");
    assert.match(chat.error.message, /project/);
    const still = await call("GET", `/v1/conversations/${id}`, token);
    assert.equal(still.body.interactions.length, 1, "the ask stays open");
    chat.clearError();
    done = nextFinish();
    await chat.addToolOutput({
      tool: "question",
      toolCallId: question.toolCallId,
      output: { project: "gateway", framework: "vitest" },
    });
    await done;
    assert.equal(chat.status, "ready", String(chat.error));
    const final = chat.messages.at(-1);
    assert.equal(toolPart(final, "question").state, "output-available");
    assert.deepEqual(
      toolPart(final, "question").output,
      { status: "answered", outcome: "accepted" },
      "never the answer's values",
    );
    await assertChunksValid(await wire.allChunks());
    assert.match(textOf(final), /gateway/);
    assert.equal(final.metadata.status, "completed");
    assert.deepEqual(await reloaded(token, id), plain(chat.messages));
  });

  it("a plan approved as a tool approval", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire, nextFinish } = await askFor("[plan] add a test", token, id);
    const plan = toolPart(chat.messages.at(-1), "plan");
    assert.equal(plan.state, "approval-requested");
    assert.match(plan.input.body, /Read the README/);
    const done = nextFinish();
    await chat.addToolApprovalResponse({ id: plan.approval.id, approved: true });
    await done;
    assert.match(textOf(chat.messages.at(-1)), /Plan revision 1 approved/);
    await assertChunksValid(await wire.allChunks());
  });
});

describe("how turns end", () => {
  it("a failed turn is an error chunk: the chat is in error with the turn's error", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    await chat.sendMessage({ text: "[fail] try" });
    assert.equal(chat.status, "error");
    assert.match(chat.error.message, /exited unexpectedly/);
    const chunks = await wire.allChunks();
    await assertChunksValid(chunks);
    assert.equal(chunks.at(-1).type, "error");
    const messages = await reloaded(token, id);
    assert.equal(messages.at(-1).metadata.status, "failed");
  });

  it("a cancel through the cancel route is seen as abort", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat, wire } = newChat(base(), token, id);
    // Held after its first step ([hold]): the cancel lands before its end.
    const sent = chat.sendMessage({ text: "[slow] a long one [hold]" });
    await waitFor(() => chat.status === "streaming", "streaming");
    const cancel = await call("POST", `/v1/conversations/${id}/cancel`, token, {
      operationId: "stop-1",
      reason: "changed my mind",
    });
    assert.equal(cancel.status, 200, cancel.text);
    await sent;
    assert.equal(chat.status, "ready");
    const chunks = await wire.allChunks();
    await assertChunksValid(chunks);
    assert.deepEqual(chunks.at(-1), { type: "abort", reason: "changed my mind" });
    assert.equal(chat.messages.at(-1).metadata.status, "cancelled");
  });
});

describe("one conversation, two protocols", () => {
  it("a chat is an ordinary conversation, and a native turn is in the chat's messages", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    await chat.sendMessage({ text: "first, through the SDK" });
    const list = await call("GET", "/v1/conversations", token);
    assert.ok(list.body.conversations.some((c) => c.conversationId === id));
    const native = await call("POST", `/v1/conversations/${id}/turns`, token, {
      turnId: "native-2",
      message: "second, through the turns route",
    });
    assert.equal(native.status, 202);
    await waitFor(
      async () => (await call("GET", `/v1/conversations/${id}/turns/native-2`, token)).body.status === "completed",
      "the native turn",
    );
    const messages = await reloaded(token, id);
    assert.deepEqual(
      messages.map((m) => m.id),
      [chat.messages[0].id, chat.messages[1].id, "native-2", "native-2:answer"],
    );
    assert.deepEqual(messages.slice(0, 2), plain(chat.messages));
    // The SDK continues the conversation from what it reloaded.
    const later = newChat(base(), token, id, { messages });
    await later.chat.sendMessage({ text: "third" });
    assert.equal(later.chat.messages.length, 6);
    assert.equal(later.chat.messages.at(-1).metadata.status, "completed");
  });

  it("regenerate answers the last message again as a new turn, a branch beside the first answer; a retry of it runs once", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    await chat.sendMessage({ text: "answer me" });
    const before = await counters();
    await chat.regenerate();
    assert.equal(chat.status, "ready", String(chat.error));
    assert.equal(chat.messages.length, 2);
    const summary = await call("GET", `/v1/conversations/${id}`, token);
    assert.equal(summary.body.branchCount, 2, "a new turn with the same message, on a branch of its own");
    assert.equal(summary.body.turnCount, 1, "the active branch holds the new answer only");
    assert.equal(summary.body.lastTurn.message, "answer me");
    assert.equal(chat.messages[1].id, `${summary.body.lastTurn.turnId}:answer`);
    const replay = chat.messages.slice(0, 1);
    // Regenerating the first answer again is the SDK's regenerate, retried: the same turn.
    const same = await call("POST", "/v1/chat", token, {
      id,
      trigger: "regenerate-message",
      messageId: `${chat.messages[0].id}:answer`,
      messages: replay,
    });
    assert.equal(same.status, 200);
    // Regenerating the current answer, sent twice: one new turn.
    const again = await call("POST", "/v1/chat", token, {
      id,
      trigger: "regenerate-message",
      messageId: chat.messages[1].id,
      messages: replay,
    });
    assert.equal(again.status, 200, again.text);
    const twice = await call("POST", "/v1/chat", token, {
      id,
      trigger: "regenerate-message",
      messageId: chat.messages[1].id,
      messages: replay,
    });
    assert.equal(twice.status, 200);
    const after = await counters();
    assert.equal(
      delta(before, after, "runs.dispatches"),
      2,
      "the SDK's regenerate, and one regenerate of its answer sent twice",
    );
    assert.equal((await call("GET", `/v1/conversations/${id}`, token)).body.branchCount, 3);
  });

  it("an edit of an earlier message and a regenerate of an earlier answer branch there: the SDK's history after them is the branch's, and each forks once", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    await chat.sendMessage({ text: "first" });
    await chat.sendMessage({ text: "second" });
    await chat.sendMessage({ text: "third" });
    assert.equal(chat.messages.length, 6);
    const [first, , second] = chat.messages;

    // Edit the second message (the SDK's sendMessage with its id): a branch after the first turn.
    const before = await counters();
    await chat.sendMessage({ text: "second, edited [recall]", messageId: second.id });
    assert.equal(chat.status, "ready", String(chat.error));
    assert.equal(chat.messages.length, 4);
    assert.match(
      textOf(chat.messages[3]),
      /Earlier in this session: "first"\./,
      "the branch's agent remembers the first message only",
    );
    const afterEdit = await counters();
    assert.equal(delta(before, afterEdit, "sessions.forked"), 1);
    let summary = (await call("GET", `/v1/conversations/${id}`, token)).body;
    assert.equal(summary.branch, 1);
    assert.equal(summary.turnCount, 2);
    // A reload shows the active branch: what the SDK holds now.
    const messages = await reloaded(token, id);
    assert.deepEqual(
      messages.map((m) => textOf(m)).filter((_, i) => i % 2 === 0),
      ["first", "second, edited [recall]"],
    );
    // The answers are the same messages; the edited message is its new turn after a reload (the SDK keeps the id it edited).
    assert.deepEqual([messages[1].id, messages[3].id], [chat.messages[1].id, chat.messages[3].id]);
    assert.equal(`${messages[2].id}:answer`, chat.messages[3].id);

    // Sent again as the SDK would retry it: the same turn, nothing forks or runs again.
    const retryBody = {
      id,
      trigger: "submit-message",
      messageId: second.id,
      messages: [
        ...plain(chat.messages.slice(0, 2)),
        { id: second.id, role: "user", parts: [{ type: "text", text: "second, edited [recall]" }] },
      ],
    };
    const retried = await call("POST", "/v1/chat", token, retryBody);
    assert.equal(retried.status, 200, retried.text);
    const afterRetry = await counters();
    assert.equal(delta(afterEdit, afterRetry, "sessions.forked"), 0);
    assert.equal(delta(afterEdit, afterRetry, "runs.dispatches"), 0);

    // Regenerate the first answer: the first message answered again, afresh (nothing before it to copy).
    await chat.regenerate({ messageId: chat.messages[1].id });
    assert.equal(chat.status, "ready", String(chat.error));
    assert.equal(chat.messages.length, 2);
    assert.equal(chat.messages[0].id, first.id);
    summary = (await call("GET", `/v1/conversations/${id}`, token)).body;
    assert.equal(summary.branch, 2);
    assert.equal(summary.branchCount, 3);
    assert.equal(delta(afterRetry, await counters(), "runs.dispatches"), 1);
    // The original line is still there, whole.
    const old = await call("GET", `/v1/conversations/${id}/messages?branch=0`, token);
    assert.deepEqual(
      old.body.messages.filter((m) => m.role === "user").map((m) => m.text),
      ["first", "second", "third"],
    );
  });

  it("a history that goes on from an earlier answer (a client holding an older history) branches there", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const { chat } = newChat(base(), token, id);
    await chat.sendMessage({ text: "first" });
    await chat.sendMessage({ text: "second" });
    const before = await counters();
    const stale = newChat(base(), token, id, { messages: plain(chat.messages.slice(0, 2)) });
    await stale.chat.sendMessage({ text: "another second [recall]" });
    assert.equal(stale.chat.status, "ready", String(stale.chat.error));
    assert.match(textOf(stale.chat.messages[3]), /Earlier in this session: "first"\./);
    assert.equal(delta(before, await counters(), "sessions.forked"), 1);
    const summary = (await call("GET", `/v1/conversations/${id}`, token)).body;
    assert.equal(summary.branch, 1);
    assert.equal(summary.turnCount, 2);
  });

  it("another user's chat id is their own conversation", async () => {
    const ada = await login(base(), unique("ada"));
    const bob = await login(base(), unique("bob"));
    const id = unique("shared-id");
    const a = newChat(base(), ada, id);
    await a.chat.sendMessage({ text: "ada's message" });
    assert.equal((await call("GET", `/v1/chat/${id}/messages`, bob)).status, 404);
    const b = newChat(base(), bob, id);
    await b.chat.sendMessage({ text: "bob's message" });
    const mine = await reloaded(ada, id);
    const theirs = await reloaded(bob, id);
    assert.equal(mine[0].parts[0].text, "ada's message");
    assert.equal(theirs[0].parts[0].text, "bob's message");
    assert.equal(mine.length, 2);
  });

  it("a turn running already with another message: 409 session_busy, as on the turns route", async () => {
    const token = await login(base(), unique("ai-user"));
    const id = unique("chat");
    const first = newChat(base(), token, id);
    // Held after its first step ([hold]) until the second message was refused.
    const sent = first.chat.sendMessage({ text: "[slow] first [hold]" });
    await waitFor(() => first.chat.status === "streaming", "streaming");
    const busy = await call("POST", "/v1/chat", token, {
      id,
      trigger: "submit-message",
      messages: [{ id: "other", role: "user", parts: [{ type: "text", text: "second" }] }],
    });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.error.code, "session_busy");
    await release(token, id, first.chat.messages[0].id);
    await sent;
  });
});

describe("bad bodies", () => {
  const user = (text = "hi", id = "u1") => ({ id, role: "user", parts: [{ type: "text", text }] });
  const cases = [
    ["no messages", { trigger: "submit-message", messages: [] }, /messages/],
    [
      "a last message of another role",
      { trigger: "submit-message", messages: [{ id: "s", role: "system", parts: [{ type: "text", text: "x" }] }] },
      /role/,
    ],
    [
      "parts of the wrong shape",
      { trigger: "submit-message", messages: [{ id: "u", role: "user", parts: [{ type: "text" }] }] },
      /text/,
    ],
    ["parts not a list", { trigger: "submit-message", messages: [{ id: "u", role: "user", parts: "hi" }] }, /parts/],
    ["an unknown trigger", { trigger: "resume-please", messages: [user()] }, /trigger/],
    [
      "a file part that is not a data: URL",
      {
        trigger: "submit-message",
        messages: [
          {
            id: "u",
            role: "user",
            parts: [
              { type: "text", text: "hi" },
              { type: "file", url: "https://example.com/x", mediaType: "text/plain" },
            ],
          },
        ],
      },
      /file part's url must be a data: URL/,
    ],
    [
      "a file part and no text",
      {
        trigger: "submit-message",
        messages: [{ id: "u", role: "user", parts: [{ type: "file", url: "data:,x", mediaType: "text/plain" }] }],
      },
      /no text/,
    ],
    [
      "a message id that cannot be a turn id",
      { trigger: "submit-message", messages: [user("hi", "has spaces")] },
      /id/,
    ],
    [
      "an assistant message with nothing to answer",
      {
        trigger: "submit-message",
        messages: [user(), { id: "u1:answer", role: "assistant", parts: [{ type: "text", text: "x" }] }],
      },
      /assistant|answers/,
    ],
    ["an unknown field", { trigger: "submit-message", messages: [user()], surprise: 1 }, /surprise/],
  ];
  for (const [name, body, pattern] of cases) {
    it(`${name}: 400 naming the problem, nothing stored or dispatched`, async () => {
      const token = await login(base(), unique("ai-user"));
      const id = unique("chat");
      const before = await counters();
      const res = await call("POST", "/v1/chat", token, { id, ...body });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, "invalid_request");
      assert.match(res.body.error.message, pattern);
      const after = await counters();
      assert.equal(delta(before, after, "runs.dispatches"), 0);
      assert.equal((await call("GET", `/v1/conversations/${id}`, token)).status, 404, "no conversation was created");
    });
  }

  it("not JSON, too large, no token", async () => {
    const token = await login(base(), unique("ai-user"));
    assert.equal((await call("POST", "/v1/chat", token, "{not json")).status, 400);
    const big = "x".repeat(70_000);
    const tooLarge = await call("POST", "/v1/chat", token, {
      id: unique("chat"),
      trigger: "submit-message",
      messages: [{ id: "u", role: "user", parts: [{ type: "text", text: big }] }],
    });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.error.code, "message_too_large");
    assert.equal(
      (await call("POST", "/v1/chat", undefined, { id: "x", trigger: "submit-message", messages: [] })).status,
      401,
    );
    assert.equal((await call("GET", "/v1/chat/x/messages")).status, 401);
  });
});

describe("every chunk of every emulator script", () => {
  const scripts = [
    "plain answer",
    "[long] go",
    "[no-usage] go",
    "[receipt-none] go",
    "[receipt-partial] go",
    "[step-partial] go",
    "[bad-usage] go",
    "[receipt-low] go",
    "[fail] go",
    "[words:40] [paragraphs] go",
    "[ask-timeout] go",
    "[big-output:1046000] a frame at the size bound",
  ];
  for (const message of scripts) {
    it(`${message}: the SDK's schema accepts every chunk, and the reload is the streamed message`, async () => {
      const token = await login(base(), unique("ai-user"));
      const id = unique("chat");
      const { chat, wire } = newChat(base(), token, id);
      await chat.sendMessage({ text: message });
      // An ask that expires: the turn waits, then goes on; follow it to its end.
      if (message.startsWith("[ask-timeout]")) {
        await waitFor(
          async () => (await call("GET", `/v1/conversations/${id}`, token)).body.state === "idle",
          "the turn to end",
        );
        const rest = new DefaultChatTransport({
          api: `${base()}/v1/chat`,
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(await rest.reconnectToStream({ chatId: id }), null, "nothing left running");
      }
      await assertChunksValid(await wire.allChunks());
      const messages = await reloaded(token, id);
      if (!message.startsWith("[ask-timeout]")) assert.deepEqual(messages, plain(chat.messages));
    });
  }
});
