#!/usr/bin/env node
// A terminal chat with a coding agent through the gateway, using only the AI SDK's own chat
// client (the `ai` package): DefaultChatTransport against /v1/chat, resume after a restart, and
// the agent's asks as the SDK's tool approvals and tool outputs.
//
//   npm start                                   # in another terminal
//   node examples/ai-sdk-chat.mjs               # then type; Ctrl-D ends
//   node examples/ai-sdk-chat.mjs --chat demo   # pick up chat "demo" where it was, even mid-answer
//
// Options: --base <url> (else BASE_URL, else http://127.0.0.1:$PORT, PORT as `npm start` takes it,
// default 8787), --chat <id>, --user <name> (dev login); TOKEN=<user token> instead of dev login.
// Try "[permission] run the tests", "[ask] set up tests".
import { createInterface } from "node:readline";
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1] : fallback;
};
const base = option("base", process.env.BASE_URL || `http://127.0.0.1:${process.env.PORT || "8787"}`).replace(
  /\/$/,
  "",
);
const chatId = option("chat", `chat-${Date.now().toString(36)}`);

async function token() {
  if (process.env.TOKEN) return process.env.TOKEN;
  const res = await fetch(`${base}/v1/dev/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user: option("user", "terminal") }),
  });
  if (!res.ok) throw new Error(`dev login failed (${res.status}): set TOKEN to a user token`);
  return (await res.json()).token;
}

// The chat state the SDK's AbstractChat keeps (useChat keeps it in React state); every change
// of a message is drawn as it happens.
class State {
  messages = [];
  status = "ready";
  error = undefined;
  constructor(onChange) {
    this.onChange = onChange;
  }
  pushMessage = (m) => {
    this.messages = [...this.messages, m];
    this.onChange(m);
  };
  popMessage = () => (this.messages = this.messages.slice(0, -1));
  replaceMessage = (i, m) => {
    this.messages = this.messages.map((old, j) => (j === i ? m : old));
    this.onChange(m);
  };
  snapshot = (value) => structuredClone(value);
}

class TerminalChat extends AbstractChat {
  constructor(options) {
    super({ ...options, state: new State(show) });
  }
}

// Lines from the terminal (or a pipe): messages, and answers to the agent's asks.
const lines = createInterface({ input: process.stdin, terminal: false });
const queue = [];
let waiting;
let ended = false;
lines.on("line", (line) => {
  if (!waiting) return queue.push(line);
  const take = waiting;
  waiting = undefined;
  take(line);
});
lines.on("close", () => {
  ended = true;
  waiting?.(null);
});
const ask = (prompt) => {
  process.stdout.write(prompt);
  if (queue.length) return Promise.resolve(queue.shift());
  if (ended) return Promise.resolve(null);
  return new Promise((resolve) => (waiting = resolve));
};

// What is printed of the answer as it streams: text as it grows, tools and asks once per state.
const printed = new Map();
function show(message) {
  if (message?.role !== "assistant") return;
  message.parts.forEach((part, i) => {
    const key = `${message.id}/${i}`;
    if (part.type === "text") {
      if (!printed.has(key) && i > 0) process.stdout.write("\n");
      const before = printed.get(key) ?? "";
      if (part.text.startsWith(before)) process.stdout.write(part.text.slice(before.length));
      printed.set(key, part.text);
    } else if (part.type === "dynamic-tool" && printed.get(key) !== part.state) {
      printed.set(key, part.state);
      if (
        part.toolName !== "permission" &&
        part.toolName !== "plan" &&
        part.toolName !== "question" &&
        part.state === "output-available"
      ) {
        process.stdout.write(`\n  [${part.toolName}] ${JSON.stringify(part.input)}\n`);
      }
    }
  });
}

const authorization = `Bearer ${await token()}`;
let settle;
const chat = new TerminalChat({
  id: chatId,
  transport: new DefaultChatTransport({ api: `${base}/v1/chat`, headers: { authorization } }),
  // After an approval or a question's answer, send it and go on with the same answer.
  sendAutomaticallyWhen: (options) =>
    lastAssistantMessageIsCompleteWithApprovalResponses(options) ||
    lastAssistantMessageIsCompleteWithToolCalls(options),
  onFinish: ({ message }) => settle?.(message),
  onError: (error) => process.stdout.write(`\n! ${error.message}\n`),
});

/** Asks the user what the agent is waiting for; true when an answer was given. */
async function answerAsks(message) {
  for (const part of message?.parts ?? []) {
    if (part.type !== "dynamic-tool") continue;
    if (part.state === "approval-requested") {
      const reply = await ask(`\n? ${part.input.title}${part.input.body ? ` (${part.input.body})` : ""} [y/N] `);
      if (reply === null) return false;
      const approved = /^y/i.test(reply.trim());
      const finished = new Promise((resolve) => (settle = resolve));
      await chat.addToolApprovalResponse({
        id: part.approval.id,
        approved,
        ...(approved ? {} : { reason: "denied in the terminal" }),
      });
      await finished;
      return true;
    }
    if (part.toolName === "question" && part.state === "input-available") {
      const output = {};
      process.stdout.write(`\n? ${part.input.title}\n`);
      for (const field of part.input.fields ?? []) {
        if (field.type === "secret") continue;
        const reply = await ask(`  ${field.label ?? field.name}${field.required ? "" : " (optional)"}: `);
        if (reply === null) return false;
        if (!reply.trim()) continue;
        output[field.name] =
          field.type === "number"
            ? Number(reply)
            : field.type === "boolean"
              ? /^y|true/i.test(reply)
              : field.multi
                ? reply.split(",").map((s) => s.trim())
                : reply.trim();
      }
      const finished = new Promise((resolve) => (settle = resolve));
      await chat.addToolOutput({ tool: "question", toolCallId: part.toolCallId, output });
      await finished;
      return true;
    }
  }
  return false;
}

// Picking up a chat: its messages so far, then whatever its running turn still streams.
const history = await fetch(`${base}/v1/chat/${encodeURIComponent(chatId)}/messages`, { headers: { authorization } });
if (history.ok) {
  chat.messages = await history.json();
  for (const m of chat.messages)
    for (const [i, p] of m.parts.entries()) if (p.type === "text") printed.set(`${m.id}/${i}`, p.text);
  process.stdout.write(`(chat ${chatId}: ${chat.messages.length} messages)\n`);
  await chat.resumeStream();
  while (await answerAsks(chat.lastMessage));
} else {
  process.stdout.write(`(new chat ${chatId})\n`);
}

let status = 0;
while (true) {
  const line = await ask("\n> ");
  if (line === null) break;
  if (!line.trim()) continue;
  await chat.sendMessage({ text: line });
  while (await answerAsks(chat.lastMessage));
  const meta = chat.lastMessage?.metadata ?? {};
  status = chat.status === "error" || meta.status === "failed" ? 1 : 0;
  const usage = meta.usage;
  process.stdout.write(
    `\n(${meta.status ?? chat.status}${usage ? `; tokens in ${usage.inputTokens ?? "unknown"}, out ${usage.outputTokens ?? "unknown"}` : ""})\n`,
  );
}
process.stdout.write("\n");
process.exit(status);
