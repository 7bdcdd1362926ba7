// The AI SDK's own chat client (the `ai` package) pointed at a running gateway: the peer of the
// tests in this folder. Nothing here knows the gateway's mapping; it only drives the SDK and
// records what went over the wire, checking every chunk with the SDK's own schema.
import assert from "node:assert/strict";
import { AbstractChat, DefaultChatTransport, uiMessageChunkSchema } from "ai";

/** The minimal chat state the SDK's AbstractChat needs (what useChat keeps in React state). */
class State {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (m) => {
    this.messages = this.messages.concat(m);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i, m) => {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
  };
  snapshot = (t) => structuredClone(t);
}

class Chat extends AbstractChat {
  constructor({ messages, ...options }) {
    super({ ...options, state: new State(messages) });
  }
}

/** Parses an SSE body's `data:` lines as the SDK does (comments skipped, `[DONE]` skipped). */
export function chunksOf(text) {
  const chunks = [];
  for (const frame of text.split(/\n\n/)) {
    const data = frame
      .split("\n")
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6))
      .join("\n");
    if (data && data !== "[DONE]") chunks.push(JSON.parse(data));
  }
  return chunks;
}

/** Every chunk must be one the SDK accepts: its own schema decides. */
export async function assertChunksValid(chunks) {
  const schema = uiMessageChunkSchema();
  for (const chunk of chunks) {
    const result = await schema.validate(chunk);
    assert.ok(
      result.success,
      `chunk refused by uiMessageChunkSchema: ${JSON.stringify(chunk)}: ${result.success ? "" : result.error?.message}`,
    );
  }
}

/**
 * A fetch that records each response's request and its chunks (the body is read alongside the
 * SDK, tee'd), and can cut a streamed body after `cutAfter` chunks (a dropped connection).
 */
function recordingFetch() {
  const exchanges = [];
  let cutAfter;
  const wrapped = async (url, init = {}) => {
    const res = await fetch(url, init);
    const exchange = {
      url: String(url),
      method: init.method ?? "GET",
      body: init.body ? JSON.parse(init.body) : undefined,
      status: res.status,
      text: "",
      chunks: [],
      done: null,
    };
    exchanges.push(exchange);
    if (!res.body || res.status !== 200) return res;
    const [mine, theirs] = res.body.tee();
    const limit = cutAfter;
    cutAfter = undefined;
    let resolveDone;
    exchange.done = new Promise((r) => (resolveDone = r));
    const decoder = new TextDecoder();
    (async () => {
      for await (const piece of mine) exchange.text += decoder.decode(piece, { stream: true });
      exchange.chunks = chunksOf(exchange.text);
      resolveDone();
    })().catch(() => resolveDone());
    if (limit === undefined) return new Response(theirs, { status: res.status, headers: res.headers });
    // Pass the first `limit` chunks, then fail like a dropped network connection.
    const reader = theirs.getReader();
    let passed = "";
    const cut = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        passed += decoder.decode(value, { stream: true });
        controller.enqueue(value);
        if (chunksOf(passed).length >= limit) {
          reader.cancel().catch(() => {});
          controller.error(new TypeError("fetch failed: network connection lost"));
        }
      },
    });
    return new Response(cut, { status: res.status, headers: res.headers });
  };
  return {
    fetch: wrapped,
    exchanges,
    cutNextAfter(n) {
      cutAfter = n;
    },
    async allChunks() {
      await Promise.all(exchanges.map((e) => e.done));
      return exchanges.flatMap((e) => e.chunks);
    },
  };
}

export async function login(base, user) {
  const res = await fetch(`${base}/v1/dev/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ user }),
  });
  assert.equal(res.status, 200);
  return (await res.json()).token;
}

/** A chat against the gateway, as a frontend would set it up, with the wire recorded. */
export function newChat(base, token, id, options = {}) {
  const wire = recordingFetch();
  let finished;
  const chat = new Chat({
    id,
    messages: options.messages ?? [],
    transport: new DefaultChatTransport({
      api: `${base}/v1/chat`,
      headers: { authorization: `Bearer ${token}` },
      fetch: wire.fetch,
      ...(options.body ? { body: options.body } : {}),
    }),
    ...(options.sendAutomaticallyWhen ? { sendAutomaticallyWhen: options.sendAutomaticallyWhen } : {}),
    onFinish: (event) => finished?.(event),
    onError: () => {},
  });
  return {
    chat,
    wire,
    /** Resolves at the next onFinish (a follow-up request the SDK sends by itself, say). */
    nextFinish() {
      return new Promise((resolve) => (finished = resolve));
    },
  };
}

/** JSON round trip: what a message is on the wire (undefined fields gone). */
export const plain = (value) => JSON.parse(JSON.stringify(value));
