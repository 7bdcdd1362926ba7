/**
 * The page's stream (public/lib/stream.js) reads frames back into events: a lean delta frame
 * (docs/sse-protocol.md §11) reaches the reducer as the full `message.part.updated` it stands for,
 * a reconnect starts afresh (a new response starts with a full frame), a `stream.reset` goes to
 * the page's reset, leaving nothing to continue, and a frame that cannot be read back reopens the
 * stream after the last event applied (§11.2). The first connection is the stream opened with the
 * conversation's snapshot (§14), read on from the same response.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { DELTA_EVENT } from "../../public/wire/frames.js";

// Loaded by path, not imported: the module is the page's, type-checked with the page's own settings
// (tsconfig.public.json: the DOM's timers), not this project's.
const STREAM_MODULE = "../../public/lib/stream.js";
const { followStream, openWithSnapshot } = (await import(/* @vite-ignore */ STREAM_MODULE)) as {
  followStream(options: Record<string, unknown>): { close(): void };
  openWithSnapshot(
    api: Record<string, unknown>,
    cid: string,
  ): Promise<{ snapshot: unknown; lastEventId: number; frames: unknown; close(): void }>;
};

type Listener = (event: { data?: string; lastEventId?: string }) => void;

/** An EventSource the test drives: it records its URL and delivers the frames it is given. */
class FakeEventSource {
  static readonly CLOSED = 2;
  static opened: FakeEventSource[] = [];
  readonly listeners = new Map<string, Listener[]>();
  readyState = 1;
  lastEventId = "";
  constructor(readonly url: string) {
    FakeEventSource.opened.push(this);
  }
  addEventListener(type: string, listener: Listener) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  close() {
    this.readyState = FakeEventSource.CLOSED;
  }
  /** One frame, as EventSource dispatches it: the last id seen so far goes with every event. */
  frame(event: string, data: string, id?: string) {
    if (id !== undefined) this.lastEventId = id;
    for (const l of this.listeners.get(event) ?? []) l({ data, lastEventId: this.lastEventId });
  }
  fail() {
    for (const l of this.listeners.get("error") ?? []) l({});
  }
}

const envelope = (seq: number, delta: string, at: string) =>
  JSON.stringify({
    seq,
    turnId: "t1",
    executionId: "e1",
    type: "message.part.updated",
    data: { part: { id: "p1", type: "text" }, delta },
    at,
  });

async function follow() {
  (globalThis as Record<string, unknown>).EventSource = FakeEventSource;
  FakeEventSource.opened = [];
  const events: unknown[] = [];
  let resets = 0;
  const api = {
    baseUrl: "",
    streamToken: async () => ({ eventsUrl: "/v1/conversations/c/events?access_token=x" }),
    summary: async () => ({ lastEventId: 0 }),
  };
  // The page's cursor: the last event it applied.
  const after = () => (events.at(-1) as { seq?: number } | undefined)?.seq ?? 0;
  const stream = followStream({
    api,
    cid: "c",
    after,
    onEvent: (e: unknown) => events.push(e),
    onReset: () => resets++,
    onState: () => {},
    exists: false,
  });
  await new Promise((r) => setTimeout(r, 0));
  return { es: FakeEventSource.opened[0]!, events, resets: () => resets, stream };
}

afterEach(() => {
  delete (globalThis as Record<string, unknown>).EventSource;
  vi.useRealTimers();
});

describe("the page's stream", () => {
  it("hands the reducer the full event a lean delta frame stands for", async () => {
    const { es, events, stream } = await follow();
    es.frame("message.part.updated", envelope(1, "Hello ", "2026-12-02T06:00:00.000Z"), "1");
    es.frame(DELTA_EVENT, '{"d":"world","t":20}', "2");
    expect(events).toEqual([
      JSON.parse(envelope(1, "Hello ", "2026-12-02T06:00:00.000Z")),
      JSON.parse(envelope(2, "world", "2026-12-02T06:00:00.020Z")),
    ]);
    stream.close();
  });

  it("a delta frame with nothing to continue (the first of a response, or after a reset) is not skipped: the stream is closed and opened again strictly after the last event applied", async () => {
    const { es, events, resets, stream } = await follow();
    // The first frame of a response: nothing to continue.
    es.frame(DELTA_EVENT, '{"d":"world"}', "2");
    expect(events).toEqual([]);
    expect(es.readyState).toBe(FakeEventSource.CLOSED);
    await new Promise((r) => setTimeout(r, 0));
    expect(FakeEventSource.opened.map((s) => new URL(s.url, "http://x").searchParams.get("after"))).toEqual(["0", "0"]);
    // The new response reads on; a reset there leaves nothing to continue, and the next delta
    // reopens after event 1, the last one applied.
    const next = FakeEventSource.opened[1]!;
    next.frame("message.part.updated", envelope(1, "Hello ", "2026-12-02T06:00:00.000Z"), "1");
    next.frame("stream.reset", '{"type":"stream.reset","data":{}}');
    expect(resets()).toBe(1);
    next.frame(DELTA_EVENT, '{"d":"!"}', "3");
    next.frame("message.part.updated", envelope(3, "!", "2026-12-02T06:00:00.000Z"), "3");
    expect(next.readyState).toBe(FakeEventSource.CLOSED);
    await new Promise((r) => setTimeout(r, 0));
    expect(FakeEventSource.opened).toHaveLength(3);
    expect(new URL(FakeEventSource.opened[2]!.url, "http://x").searchParams.get("after")).toBe("1");
    // Nothing read from a response once it was left.
    expect(events.map((e) => (e as { seq: number }).seq)).toEqual([1]);
    stream.close();
  });

  it("after EventSource's own reconnect a new decoder reads the new response from its full first frame", async () => {
    const { es, events, stream } = await follow();
    es.frame("message.part.updated", envelope(1, "Hello ", "2026-12-02T06:00:00.000Z"), "1");
    es.fail(); // EventSource reconnects: a new response, which starts with a full frame
    es.frame("message.part.updated", envelope(2, "world", "2026-12-02T06:00:00.000Z"), "2");
    es.frame(DELTA_EVENT, '{"d":"!","t":5}', "3");
    expect(events.map((e) => (e as { seq: number }).seq)).toEqual([1, 2, 3]);
    expect(FakeEventSource.opened).toHaveLength(1);
    stream.close();
  });
});

describe("the page's stream opened with its snapshot", () => {
  it("reads the snapshot first and the events after it from the same response (a lean frame continuing the one before it); once it ends, a new connection mints a token and resumes after the last event", async () => {
    (globalThis as Record<string, unknown>).EventSource = FakeEventSource;
    FakeEventSource.opened = [];
    // The reopen delay is the test's to pass: no wait on the clock.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const asked: string[] = [];
    const states: string[] = [];
    // The response's body: the test writes it, a chunk at a time.
    let body!: ReadableStreamDefaultController<Uint8Array>;
    const write = (text: string) => body.enqueue(new TextEncoder().encode(text));
    const api = {
      baseUrl: "",
      openStream: async () => {
        asked.push("events?snapshot=1");
        return new ReadableStream<Uint8Array>({ start: (controller) => void (body = controller) });
      },
      streamToken: async () => {
        asked.push("stream-token");
        return { eventsUrl: "/v1/conversations/c/events?access_token=minted" };
      },
      summary: async () => {
        asked.push("summary");
        return { lastEventId: 5 };
      },
    };
    const snapshot = { summary: { lastEventId: 3 }, messages: { lastEventId: 3, messages: [] } };
    const opening = openWithSnapshot(api, "c");
    await vi.advanceTimersByTimeAsync(0);
    // The snapshot's frame split across two chunks.
    write("retry: 2000\n\nid: 3\nevent: conversation.snapshot\ndata: ");
    write(`${JSON.stringify({ type: "conversation.snapshot", data: snapshot })}\n\n`);
    const opened = await opening;
    expect(opened.snapshot).toEqual(snapshot);
    expect(opened.lastEventId).toBe(3);

    const events: Array<{ seq: number }> = [];
    const stream = followStream({
      api,
      cid: "c",
      after: () => events.at(-1)?.seq ?? 3,
      onEvent: (e: { seq: number }) => events.push(e),
      onReset: () => {},
      onState: (s: string) => states.push(s),
      exists: true,
      first: opened,
    });
    // Live at once: the page has the snapshot's last event.
    expect(states.at(-1)).toBe("live");
    write(`id: 4\nevent: message.part.updated\ndata: ${envelope(4, "Hello ", "2026-12-02T06:00:00.000Z")}\n\n`);
    write(`: ping\n\nid: 5\nevent: ${DELTA_EVENT}\ndata: {"d":"world","t":20}\n\n`);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual([
      JSON.parse(envelope(4, "Hello ", "2026-12-02T06:00:00.000Z")),
      JSON.parse(envelope(5, "world", "2026-12-02T06:00:00.020Z")),
    ]);
    // One request so far: no token, no summary, no EventSource.
    expect(asked).toEqual(["events?snapshot=1"]);
    expect(FakeEventSource.opened).toHaveLength(0);
    // The response ends (a deploy, a dev drop): a new connection, with a token minted for it, after event 5.
    body.close();
    await vi.advanceTimersByTimeAsync(0);
    expect(states.at(-1)).toBe("reconnecting");
    await vi.advanceTimersByTimeAsync(1000);
    const next = FakeEventSource.opened[0]!;
    expect(new URL(next.url, "http://x").searchParams.get("access_token")).toBe("minted");
    expect(new URL(next.url, "http://x").searchParams.get("after")).toBe("5");
    for (const l of next.listeners.get("open") ?? []) l({});
    await vi.advanceTimersByTimeAsync(0);
    expect(asked).toEqual(["events?snapshot=1", "stream-token", "summary"]);
    expect(states.at(-1)).toBe("live");
    stream.close();
  });

  it("a stream that does not begin with its snapshot is refused", async () => {
    const api = {
      openStream: async () =>
        new ReadableStream<Uint8Array>({
          start: (c) => {
            c.enqueue(new TextEncoder().encode(`retry: 2000\n\nid: 1\nevent: turn.accepted\ndata: {}\n\n`));
            c.close();
          },
        }),
    };
    await expect(openWithSnapshot(api, "c")).rejects.toThrow("did not begin with the conversation's snapshot");
  });
});
