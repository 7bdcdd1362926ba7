import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { DELTA_EVENT, frameDecoder } from "../../public/wire/frames.js";
import { relayStream } from "../http/sse-relay";
import { type SseFrame, SseParser } from "../lib/sse";
import { CLOSE_PROTOCOL, DIRECT, EVENTS, HANDOVER, LIVE, LIVE_MESSAGE_BYTES, PULL } from "../lib/subscription-wire";
import { DirectStreams } from "./direct-streams";
import { updateRow } from "./store/log-chunks";
import type { EventRow } from "./store/records";
import { SessionStore } from "./store/store";
import {
  attachmentOf,
  newSubscription,
  type StreamSnapshot,
  type Subscription,
  SubscriptionHub,
  subscriptionOf,
} from "./subscriptions";

interface FanoutOptions {
  /** Sees every message the hub sends, before the socket does. */
  onSend?(ws: WebSocket, message: Uint8Array): void;
  readPage(after: number, limit: number, branch?: number): EventRow[];
  lastSeq(): number;
  firstRetainedSeq(): number | null;
  lowestHeldCursor?(): number | null;
  pingIntervalMs: number;
  maxPendingBytes: number;
  pageSize?: number;
  pageBytes?: number;
  liveIntervalMs?: number;
  now?(): number;
  snapshot?(): StreamSnapshot | null;
  /** Runs in the task that answers a pull, right before and right after it. */
  aroundPull?: { before(): void; after(): void };
  /** Direct streams (./direct-streams.ts), offered to every subscription, with this quiet time. */
  directQuietMs?: number;
}

/**
 * The whole streaming path but the HTTP: the object's subscription hub and the Worker's relay,
 * joined by real WebSocket pairs, as the session object and the events route join them.
 */
class EventFanout {
  private readonly sockets = new Set<WebSocket>();
  private readonly states = new Map<WebSocket, Subscription>();
  private readonly hub: SubscriptionHub<WebSocket>;
  readonly directs: DirectStreams | undefined;

  constructor(private readonly options: FanoutOptions) {
    const quietMs = options.directQuietMs;
    this.directs =
      quietMs === undefined
        ? undefined
        : new DirectStreams({ onQuiet: () => this.hub.endDirect(), quietMs: () => quietMs });
    this.hub = new SubscriptionHub<WebSocket>({
      ...(this.directs ? { directs: this.directs } : {}),
      sockets: () => this.sockets,
      load: (ws) => (this.states.has(ws) ? structuredClone(this.states.get(ws)!) : null),
      save: (ws, state) => void this.states.set(ws, structuredClone(state)),
      send: (ws, message) => {
        options.onSend?.(ws, message);
        ws.send(message);
      },
      readPage: options.readPage,
      lastSeq: options.lastSeq,
      firstRetainedSeq: options.firstRetainedSeq,
      ...(options.lowestHeldCursor ? { lowestHeldCursor: options.lowestHeldCursor } : {}),
      ...(options.pageSize ? { pageSize: options.pageSize } : {}),
      ...(options.pageBytes ? { pageBytes: options.pageBytes } : {}),
      ...(options.liveIntervalMs !== undefined ? { liveIntervalMs: options.liveIntervalMs } : {}),
      ...(options.now ? { now: options.now } : {}),
      ...(options.snapshot ? { snapshot: options.snapshot } : {}),
    });
  }

  get size(): number {
    return this.sockets.size;
  }

  open(cursor: number, branch?: number, snapshot = false): ReadableStream<Uint8Array> {
    const { 0: client, 1: server } = new WebSocketPair();
    server.accept();
    this.sockets.add(server);
    const id = this.directs ? crypto.randomUUID().replaceAll("-", "") : undefined;
    this.states.set(server, newSubscription(cursor, branch, snapshot, id));
    server.addEventListener("message", () => {
      this.options.aroundPull?.before();
      this.hub.pull(server);
      this.options.aroundPull?.after();
    });
    server.addEventListener("close", () => {
      this.sockets.delete(server);
      try {
        server.close(1000);
      } catch {
        // closed
      }
    });
    client.accept();
    // The object's answer to the relay's open, as the Worker gets it: a stream of another request
    // (here a JavaScript stream: the runtime pipes one transform stream into another only across requests).
    const openDirect = async () =>
      this.hub.openDirect(server, this.options.maxPendingBytes)?.pipeThrough(new TransformStream()) ?? null;
    return relayStream(
      { socket: client, ...(this.directs ? { openDirect } : {}) },
      {
        pingIntervalMs: this.options.pingIntervalMs,
        maxPendingBytes: this.options.maxPendingBytes,
      },
    );
  }

  publish(row: EventRow): void {
    this.hub.publish(row);
  }

  publishBatch(rows: EventRow[]): void {
    this.hub.publishBatch(rows);
  }

  endDirect(): void {
    this.hub.endDirect();
  }

  endDirectSoon(): void {
    this.hub.endDirectSoon();
  }
}

function log() {
  const rows: EventRow[] = [];
  let pages = 0;
  const append = (type = "x") => {
    const seq = rows.length + 1;
    const row = { seq, type, envelope: JSON.stringify({ seq, type }) };
    rows.push(row);
    return row;
  };
  return {
    rows,
    append,
    pages: () => pages,
    options: {
      readPage: (after: number, limit: number) => {
        pages++;
        return rows.filter((r) => r.seq > after).slice(0, limit);
      },
      lastSeq: () => rows.length,
      firstRetainedSeq: () => (rows.length ? 1 : null),
      pingIntervalMs: 60_000,
      maxPendingBytes: 10_000,
      pageSize: 100,
    },
  };
}

const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 1));
};

async function readIds(stream: ReadableStream<Uint8Array>, count: number): Promise<number[]> {
  const reader = stream.getReader();
  const parser = new SseParser();
  const ids: number[] = [];
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const f of parser.push(new TextDecoder().decode(value))) if (f.id) ids.push(Number(f.id));
  }
  await reader.cancel();
  return ids;
}

describe("streaming: object hub to Worker relay", () => {
  it("replays page by page, joins live with nothing between, and sends each event once", async () => {
    const l = log();
    for (let i = 0; i < 250; i++) l.append();
    const fanout = new EventFanout(l.options);
    const stream = fanout.open(10);
    const reading = readIds(stream, 250 - 10 + 5);
    // Events appended while the reader is still replaying are read from the log, not pushed twice.
    for (let i = 0; i < 5; i++) fanout.publish(l.append());
    const ids = await reading;
    expect(ids).toEqual(Array.from({ length: 245 }, (_, i) => i + 11));
    expect(l.pages()).toBeGreaterThanOrEqual(3);
  });

  it("a snapshot and the events after it are read in one step: an event appended right before or after is sent once", async () => {
    const l = log();
    for (let i = 0; i < 3; i++) l.append();
    // The snapshot reflects the log as the pull finds it: its last seq.
    const snapshot = () => ({ lastSeq: l.rows.length, json: JSON.stringify({ seqs: l.rows.map((r) => r.seq) }) });
    let pulls = 0;
    const fanout: EventFanout = new EventFanout({
      ...l.options,
      snapshot,
      // In the task that answers the first pull: one event appended (and published) right before the snapshot is
      // read, one right after the subscription went live. Nothing else runs between them and the pull.
      aroundPull: {
        before: () => void (pulls++ === 0 && fanout.publish(l.append())),
        after: () => void (pulls === 1 && fanout.publish(l.append())),
      },
    });
    const reader = fanout.open(0, undefined, true).getReader();
    const parser = new SseParser();
    const frames: SseFrame[] = [];
    while (!frames.some((f) => f.id === "5")) {
      const { value, done } = await reader.read();
      if (done) break;
      frames.push(...parser.push(new TextDecoder().decode(value)));
    }
    await reader.cancel();
    const events = frames.filter((f) => f.data !== undefined);
    // The snapshot first (its id the last event it reflects: the one appended before it), then only the event
    // appended after it, once: neither lost nor doubled.
    expect(events.map((f) => [f.event, f.id])).toEqual([
      ["conversation.snapshot", "4"],
      ["x", "5"],
    ]);
    expect(JSON.parse(events[0]!.data!)).toEqual({ seqs: [1, 2, 3, 4] });
    expect(pulls).toBe(1);
  });

  it("a page cut short by its byte bound is not the last: the rest follows, then live", async () => {
    const l = log();
    for (let i = 0; i < 60; i++) l.append();
    const fanout = new EventFanout({ ...l.options, pageSize: 100, pageBytes: 300 });
    const reading = readIds(fanout.open(0), 62);
    await new Promise((r) => setTimeout(r, 0));
    for (let i = 0; i < 2; i++) fanout.publish(l.append());
    expect(await reading).toEqual(Array.from({ length: 62 }, (_, i) => i + 1));
  });

  it("closes a reader that falls too far behind; it can reconnect from its last id", async () => {
    const l = log();
    // No live interval: each event below leaves as a message of its own.
    const fanout = new EventFanout({ ...l.options, maxPendingBytes: 2_000, liveIntervalMs: 0 });
    const stream = fanout.open(0);
    const reader = stream.getReader();
    await reader.read(); // retry: header; the reader is now live and then stops reading
    await new Promise((r) => setTimeout(r, 0));
    // Each event on a task of its own (events of one task leave as one message): 200 messages.
    for (let i = 0; i < 200; i++) {
      fanout.publish(l.append());
      await new Promise((r) => setTimeout(r, 0));
    }
    await new Promise((r) => setTimeout(r, 0));
    expect(fanout.size).toBe(0);
    // What it had queued still drains, then the stream ends.
    let text = "";
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const last = Number([...text.matchAll(/^id: (\d+)$/gm)].at(-1)![1]);
    expect(last).toBeLessThan(200);
    expect(await readIds(new EventFanout(l.options).open(last), 200 - last)).toEqual(
      Array.from({ length: 200 - last }, (_, i) => last + i + 1),
    );
  });
});

/**
 * Reads a stream until it has seen `lastId` or `maxFrames` frames, whichever comes first: bounded
 * by count, not time, so a stream that repeats itself forever (an inclusive cursor) ends the read
 * at once instead of holding the isolate.
 */
async function readThrough(stream: ReadableStream<Uint8Array>, lastId: number, maxFrames: number): Promise<number[]> {
  const reader = stream.getReader();
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const ids: number[] = [];
  let frames = 0;
  try {
    while (frames < maxFrames && ids.at(-1) !== lastId) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const f of parser.push(decoder.decode(value, { stream: true }))) {
        frames++;
        if (f.id) ids.push(Number(f.id));
      }
    }
  } finally {
    await reader.cancel();
  }
  return ids;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const microtasks = async (n: number) => {
  for (let i = 0; i < n; i++) await Promise.resolve();
};

describe("fan-out: the live interval", () => {
  it("a batch after a quiet spell leaves on the next task; what comes within the interval after a send waits for its end and leaves as one message", async () => {
    const l = log();
    const sent: Uint8Array[] = [];
    let clock = 1_000;
    // An interval long enough that a loaded machine's timers cannot blur it; the clock is the test's.
    const fanout = new EventFanout({
      ...l.options,
      maxPendingBytes: 1_000_000,
      liveIntervalMs: 300,
      now: () => clock,
      onSend: (_ws, message) => void sent.push(message),
    });
    const reading = readIds(fanout.open(0), 4);
    await until(() => sent.length === 1); // the first pull: live at once on an empty log
    const idsOf = (message: Uint8Array) =>
      [...new TextDecoder().decode(message.subarray(1)).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    fanout.publish(l.append());
    await new Promise((r) => setTimeout(r, 0));
    expect(sent.map(idsOf).slice(1)).toEqual([[1]]);
    // 5 ms after that send: held for the interval's rest, the next event with it.
    clock += 5;
    fanout.publish(l.append());
    await new Promise((r) => setTimeout(r, 0));
    fanout.publish(l.append());
    await new Promise((r) => setTimeout(r, 20));
    expect(sent.length).toBe(2);
    await until(() => sent.length === 3);
    expect(idsOf(sent[2]!)).toEqual([2, 3]);
    // A quiet spell longer than the interval since that send: the next leaves on the next task.
    clock += 1_000;
    fanout.publish(l.append());
    await new Promise((r) => setTimeout(r, 0));
    expect(idsOf(sent[3]!)).toEqual([4]);
    expect(await reading).toEqual([1, 2, 3, 4]);
  });
});

describe("fan-out: the live interval and a stream that just joined", () => {
  it("the first batch after a stream joined the live set leaves on the next task, not at the interval's end", async () => {
    // A reconnecting viewer's first new delta: the batch before it left a moment ago (to the other
    // viewers, or to none), and the interval would hold the next one for its rest.
    const l = log();
    const sent: { ws: WebSocket; message: Uint8Array }[] = [];
    let clock = 1_000;
    const fanout = new EventFanout({
      ...l.options,
      maxPendingBytes: 1_000_000,
      liveIntervalMs: 300,
      now: () => clock,
      onSend: (ws, message) => void sent.push({ ws, message }),
    });
    const watching = readIds(fanout.open(0), 2);
    await until(() => sent.length === 1); // the watcher's first pull: live at once on an empty log
    fanout.publish(l.append());
    await until(() => sent.length === 2); // event 1 to the watcher: the interval starts
    clock += 5;
    const joining = readIds(fanout.open(1), 1);
    await until(() => sent.length === 3); // its first pull: live at once, nothing after its cursor
    fanout.publish(l.append());
    // Within the interval after the last send, but the new stream has had nothing live yet.
    await new Promise((r) => setTimeout(r, 20));
    expect(sent.length).toBe(5);
    expect(await joining).toEqual([2]);
    expect(await watching).toEqual([1, 2]);
  });
});

describe("fan-out: joining the live set", () => {
  it("events published one by one between the awaits of one task (a burst upstream sent in one chunk) leave as one message per socket, in order", async () => {
    const l = log();
    const sent: Uint8Array[] = [];
    const fanout = new EventFanout({
      ...l.options,
      maxPendingBytes: 1_000_000,
      onSend: (_ws, message) => void sent.push(message),
    });
    const reading = readIds(fanout.open(0), 50);
    await until(() => sent.length === 1); // the first pull: live at once on an empty log
    // As the upstream reader hands over a chunk's events: each after an await, none after a task.
    for (let i = 0; i < 50; i++) {
      fanout.publish(l.append());
      await Promise.resolve();
    }
    expect(await reading).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(sent.slice(1).map((m) => m[0])).toEqual([EVENTS]);
  });

  it("an append landing at any point of the last replay page reaches the reader exactly once", async () => {
    // The reader must join the live set only after an empty page, in the same synchronous step:
    // joining with its last page (or before it was sent) lets an event both be read from the log
    // and pushed live. The append is tried at every microtask of the catch-up, with a page size
    // that makes the final page short, exactly full, and the only one.
    for (const pageSize of [4, 5, 100]) {
      for (let delay = 0; delay <= 12; delay++) {
        const l = log();
        for (let i = 0; i < 10; i++) l.append();
        const fanout = new EventFanout({ ...l.options, pageSize });
        const watcher = fanout.open(10); // already live: receives appends by push
        const stream = fanout.open(0);
        const reading = readThrough(stream, 12, 40);
        const watching = readThrough(watcher, 12, 40);
        await microtasks(delay);
        fanout.publish(l.append()); // 11, concurrent with the catch-up
        await new Promise((r) => setTimeout(r, 0));
        fanout.publish(l.append()); // 12, once everything settled
        expect(await reading, `page size ${pageSize}, append after ${delay} microtasks`).toEqual(range(1, 12));
        expect(await watching).toEqual([11, 12]);
      }
    }
  });

  it("many readers joining while a burst is appended each see every event once, in order", async () => {
    const l = log();
    for (let i = 0; i < 30; i++) l.append();
    const fanout = new EventFanout({ ...l.options, pageSize: 7 });
    const readings: Array<{ cursor: number; ids: Promise<number[]> }> = [];
    for (let step = 0; step < 30; step++) {
      // Bursts of appends in one synchronous step, readers opening between and within them.
      if (step % 3 === 0) readings.push({ cursor: step, ids: readThrough(fanout.open(step), 90, 200) });
      for (let i = 0; i < 2; i++) fanout.publish(l.append());
      await microtasks(step % 5);
    }
    const total = l.rows.length;
    expect(total).toBe(90);
    for (const { cursor, ids } of readings)
      expect(await ids, `reader from ${cursor}`).toEqual(range(cursor + 1, total));
  });
});

describe("fan-out over the real store: the cursor is exclusive", () => {
  it("pages strictly after the cursor, so a caught-up reader goes live instead of replaying its last event", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`fanout-store-${Date.now()}`));
    await runInDurableObject(stub, async (_instance, state) => {
      const store = new SessionStore(state.storage.sql);
      const append = () => store.appendEvent({ turnId: "t", executionId: "e", type: "status", data: {}, now: 0 });
      for (let i = 0; i < 25; i++) append();
      expect(store.eventsAfter(10, 5).map((r) => r.seq)).toEqual([11, 12, 13, 14, 15]);
      expect(store.eventsAfter(25, 5)).toEqual([]);
      const fanout = new EventFanout({
        readPage: (after, limit) => store.eventsAfter(after, limit),
        lastSeq: () => store.lastSeq(),
        firstRetainedSeq: () => store.firstRetainedSeq(),
        pingIntervalMs: 60_000,
        maxPendingBytes: 1_000_000,
        pageSize: 10,
      });
      for (const cursor of [0, 9, 10, 24, 25]) {
        const last = store.lastSeq();
        const reading = readThrough(fanout.open(cursor), last + 1, 80);
        await new Promise((r) => setTimeout(r, 0));
        fanout.publish(append()); // a live event once the reader caught up
        // Bounded by frames: an inclusive cursor repeats the last event and fails here at once.
        expect(await reading, `cursor ${cursor}`).toEqual(range(cursor + 1, last + 1));
      }
    });
  });
});

describe("fan-out: cursors the log does not hold", () => {
  /** The head of a stream (its retry and any reset frame) and the ids it replays. */
  async function opening(fanout: EventFanout, cursor: number, lastId: number) {
    const reader = fanout.open(cursor).getReader();
    const parser = new SseParser();
    const frames = [];
    while (frames.filter((f) => f.id).at(-1)?.id !== String(lastId) && frames.length < 50) {
      const { value, done } = await reader.read();
      if (done) break;
      frames.push(...parser.push(new TextDecoder().decode(value)));
    }
    await reader.cancel();
    const reset = frames.find((f) => f.event === "stream.reset");
    return {
      retry: frames[0]?.retry,
      reset: reset && JSON.parse(reset.data!).data,
      ids: frames.filter((f) => f.id).map((f) => Number(f.id)),
    };
  }

  it("a cursor just before the oldest retained event replays without a reset; one further back or ahead of the log is reset", async () => {
    const l = log();
    for (let i = 0; i < 20; i++) l.append();
    // Events 1–10 were trimmed: the log holds 11–20.
    const fanout = new EventFanout({
      ...l.options,
      readPage: (after, limit) => l.rows.filter((r) => r.seq > after && r.seq > 10).slice(0, limit),
      firstRetainedSeq: () => 11,
    });
    expect(await opening(fanout, 10, 20)).toEqual({ retry: 2000, reset: undefined, ids: range(11, 20) });
    expect(await opening(fanout, 15, 20)).toEqual({ retry: 2000, reset: undefined, ids: range(16, 20) });
    expect(await opening(fanout, 9, 20)).toEqual({
      retry: 2000,
      reset: { reason: "cursor_trimmed", firstRetainedSeq: 11, lastSeq: 20 },
      ids: range(11, 20),
    });
    expect(await opening(fanout, 0, 20)).toMatchObject({ reset: { reason: "cursor_trimmed" }, ids: range(11, 20) });
    // The last event itself is a valid cursor (nothing to replay); one past it never existed.
    const atEnd = fanout.open(20).getReader();
    expect(new TextDecoder().decode((await atEnd.read()).value)).toBe("retry: 2000\n\n");
    await atEnd.cancel();
    expect(await opening(fanout, 21, 20)).toEqual({
      retry: 2000,
      reset: { reason: "cursor_ahead", firstRetainedSeq: 11, lastSeq: 20 },
      ids: range(11, 20),
    });
  });

  it("a cursor at a seq compaction removed is held: only one below what trimming removed is reset (docs/sse-protocol.md §13)", async () => {
    const l = log();
    for (let i = 0; i < 20; i++) l.append();
    // Trimming removed 1–4; compaction removed 5–10 (a run whose snapshot would be 10, say): the log holds 11–20.
    const fanout = new EventFanout({
      ...l.options,
      readPage: (after, limit) => l.rows.filter((r) => r.seq > after && r.seq > 10).slice(0, limit),
      firstRetainedSeq: () => 11,
      lowestHeldCursor: () => 4,
    });
    for (const cursor of [4, 5, 9])
      expect(await opening(fanout, cursor, 20)).toEqual({ retry: 2000, reset: undefined, ids: range(11, 20) });
    expect(await opening(fanout, 3, 20)).toEqual({
      retry: 2000,
      reset: { reason: "cursor_trimmed", firstRetainedSeq: 11, lastSeq: 20 },
      ids: range(11, 20),
    });
  });
});

describe("a socket's attachment: the subscription under its own key, read through its schema", () => {
  it("reads back what it wrote, whatever else the attachment carries beside it", () => {
    const state = { after: 41, live: true, started: true };
    expect(subscriptionOf(attachmentOf(state))).toEqual(state);
    expect(subscriptionOf(structuredClone(attachmentOf(newSubscription(0))))).toEqual({
      after: 0,
      live: false,
      started: false,
    });
    expect(subscriptionOf({ ...attachmentOf(state), other: { id: "x" } })).toEqual(state);
  });

  it("an attachment that does not hold a whole, well-formed subscription reads as none", () => {
    const state = { after: 3, live: false, started: false };
    for (const attachment of [
      null,
      undefined,
      "x",
      state, // a state not under its key
      { subscription: null },
      { subscription: { ...state, after: -1 } },
      { subscription: { ...state, after: 1.5 } },
      { subscription: { ...state, after: "3" } },
      { subscription: { ...state, after: Number.MAX_SAFE_INTEGER + 2 } },
      { subscription: { after: 3, live: false } },
      { subscription: { ...state, live: "yes" } },
      { subscription: { ...state, extra: 1 } },
    ]) {
      expect(subscriptionOf(attachment), JSON.stringify(attachment) ?? String(attachment)).toBeNull();
    }
  });

  it("the session object closes a subscription whose attachment it cannot read instead of leaving its stream waiting", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`attachment-${crypto.randomUUID()}`));
    const open = async () => {
      const res = await stub.fetch("https://session/subscribe?after=0", { headers: { upgrade: "websocket" } });
      expect(res.status).toBe(101);
      const ws = res.webSocket!;
      ws.binaryType = "arraybuffer";
      ws.accept();
      return ws;
    };
    const readable = await open();
    const first = new Promise<Uint8Array>((resolve) =>
      readable.addEventListener("message", (e) => resolve(new Uint8Array(e.data as ArrayBuffer)), { once: true }),
    );
    readable.send(PULL);
    expect([...(await first)]).toEqual([LIVE, ...new TextEncoder().encode("retry: 2000\n\n")]);

    const unreadable = await open();
    await runInDurableObject(stub, (_instance, state) => {
      const fresh = state.getWebSockets().filter((ws) => subscriptionOf(ws.deserializeAttachment())?.started === false);
      expect(fresh).toHaveLength(1);
      fresh[0]!.serializeAttachment({ after: 0, live: false, started: false }); // not under its key
    });
    const closed = new Promise<number>((resolve) => unreadable.addEventListener("close", (e) => resolve(e.code)));
    unreadable.send(PULL);
    expect(await closed).toBe(CLOSE_PROTOCOL);
    readable.close(1000);
  });
});

/** A log of part updates as the store writes them (appendEvent's envelope), turns and parts as given. */
function partLog() {
  const rows: EventRow[] = [];
  const append = (turnId: string, partId: string, delta: string) => {
    const seq = rows.length + 1;
    const envelope = JSON.stringify({
      seq,
      turnId,
      executionId: `exe-${turnId}`,
      type: "message.part.updated",
      data: { part: { id: partId, type: "text" }, delta },
      at: new Date(Date.UTC(2026, 11, 2) + seq * 20).toISOString(),
    });
    const row = { seq, type: "message.part.updated", envelope };
    rows.push(row);
    return row;
  };
  return { rows, append };
}

/** Reads a stream's events back with a reader's decoder until it has `lastId`; also its frames' event names. */
async function readEvents(
  stream: ReadableStream<Uint8Array>,
  lastId: number,
): Promise<{ envelopes: string[]; names: string[] }> {
  // The relay's pipe hands its bytes over in chunks of the reader's size: read as a browser's
  // connection would, in large reads, and decode across chunk boundaries.
  const reader = stream.getReader({ mode: "byob" });
  const parser = new SseParser();
  const decoder = frameDecoder();
  const text = new TextDecoder();
  const envelopes: string[] = [];
  const names: string[] = [];
  try {
    while (envelopes.length < 5_000) {
      const { value, done } = await reader.read(new Uint8Array(1024 * 1024));
      if (done) break;
      for (const f of parser.push(text.decode(value, { stream: true }))) {
        const event = decoder.decode(f);
        if (!event) continue;
        envelopes.push(JSON.stringify(event));
        names.push(f.event!);
      }
      if (envelopes.length && JSON.parse(envelopes.at(-1)!).seq >= lastId) break;
    }
  } finally {
    await reader.cancel();
  }
  return { envelopes, names };
}

describe("fan-out: lean frames", () => {
  it("a reader resuming at any cursor inside a part gets a full first frame and reads back exactly the log", async () => {
    const l = partLog();
    for (let i = 0; i < 12; i++) l.append("t1", i < 7 ? "p1" : "p2", `w${i} `);
    const fanout = new EventFanout({
      readPage: (after, limit) => l.rows.filter((r) => r.seq > after).slice(0, limit),
      lastSeq: () => l.rows.length,
      firstRetainedSeq: () => 1,
      pingIntervalMs: 60_000,
      maxPendingBytes: 1_000_000,
      pageSize: 5,
    });
    for (let cursor = 0; cursor < 12; cursor++) {
      const { envelopes, names } = await readEvents(fanout.open(cursor), 12);
      expect(envelopes, `cursor ${cursor}`).toEqual(l.rows.slice(cursor).map((r) => r.envelope));
      // Full at the response's start and at each page's (5 events), and at a new part (event 8); lean otherwise.
      const expected = l.rows
        .slice(cursor)
        .map((r, k) => (k % 5 === 0 || r.seq === 8 ? "message.part.updated" : DELTA_EVENT));
      expect(names, `cursor ${cursor}`).toEqual(expected);
    }
  });

  it("live, each batch is encoded once and sent as one message per socket; a reader whose replay ended elsewhere gets its first live frame full", async () => {
    const l = partLog();
    // Turn a on another branch streams; the branch reader's replay holds only turn b's events.
    l.append("b", "pb", "done ");
    for (let i = 0; i < 3; i++) l.append("a", "pa", `a${i} `);
    const sent: Array<{ ws: WebSocket; message: Uint8Array }> = [];
    // Branch 1's history: turn b's events only.
    const readPage = (after: number, limit: number, branch?: number) =>
      l.rows
        .filter((r) => r.seq > after && (branch === undefined || JSON.parse(r.envelope).turnId === "b"))
        .slice(0, limit);
    const fanout = new EventFanout({
      readPage,
      lastSeq: () => l.rows.length,
      firstRetainedSeq: () => 1,
      pingIntervalMs: 60_000,
      maxPendingBytes: 1_000_000,
      onSend: (ws, message) => sent.push({ ws, message }),
    });
    // Pushed live before the readers open: the live frames now continue event 4.
    fanout.publish(l.rows[3]!);
    await new Promise((r) => setTimeout(r, 0));
    const watcher = fanout.open(0);
    const branchReader = fanout.open(0, 1);
    const watching = readEvents(watcher, 7);
    const branchReading = readEvents(branchReader, 7);
    await new Promise((r) => setTimeout(r, 10));
    sent.length = 0;
    fanout.publishBatch([l.append("a", "pa", "a3 "), l.append("a", "pa", "a4 "), l.append("a", "pa", "a5 ")]);
    await new Promise((r) => setTimeout(r, 10));
    // One message per socket for the batch; the synced watcher's is the shared one.
    expect(sent.length).toBe(2);
    const kinds = sent.map((m) => m.message[0]);
    expect(kinds).toEqual([EVENTS, EVENTS]);
    const watched = await watching;
    const branch = await branchReading;
    expect(watched.envelopes).toEqual(l.rows.map((r) => r.envelope));
    expect(watched.names.slice(4)).toEqual([DELTA_EVENT, DELTA_EVENT, DELTA_EVENT]);
    // The branch reader never got events 2–4: its first live frame is full, the rest lean.
    expect(branch.envelopes).toEqual([l.rows[0]!, ...l.rows.slice(4)].map((r) => r.envelope));
    expect(branch.names).toEqual(["message.part.updated", "message.part.updated", DELTA_EVENT, DELTA_EVENT]);
  });

  it("a large live batch goes as several messages, none past the bound, and reads back exactly the log, lean frames continuing across them", async () => {
    const l = partLog();
    l.append("b", "pb", "done ");
    const sent: Array<{ ws: WebSocket; message: Uint8Array }> = [];
    const readPage = (after: number, limit: number, branch?: number) =>
      l.rows
        .filter((r) => r.seq > after && (branch === undefined || JSON.parse(r.envelope).turnId === "a"))
        .slice(0, limit);
    // The production slow-viewer bound (SSE_MAX_PENDING_BYTES, 4 MiB): the batch is 6 MB.
    const fanout = new EventFanout({
      readPage,
      lastSeq: () => l.rows.length,
      firstRetainedSeq: () => 1,
      pingIntervalMs: 60_000,
      maxPendingBytes: 4 * 1024 * 1024,
      onSend: (ws, message) => sent.push({ ws, message }),
    });
    fanout.publish(l.rows[0]!);
    await new Promise((r) => setTimeout(r, 0));
    // The watcher is synced; the branch reader's replay held nothing, so its first live frame goes full.
    const watching = readEvents(fanout.open(0), 601);
    const branchReading = readEvents(fanout.open(0, 1), 601);
    await new Promise((r) => setTimeout(r, 10));
    sent.length = 0;
    const rows: EventRow[] = [];
    for (let i = 0; i < 600; i++) rows.push(l.append("a", "pa", `${i} ${"w".repeat(10_000)}`));
    fanout.publishBatch(rows);
    const watched = await watching;
    const branch = await branchReading;
    expect(sent.length).toBeGreaterThan(2 * 20);
    for (const { message } of sent) {
      expect(message[0]).toBe(EVENTS);
      expect(message.byteLength - 1).toBeLessThanOrEqual(LIVE_MESSAGE_BYTES);
    }
    expect(watched.envelopes).toEqual(l.rows.map((r) => r.envelope));
    expect(watched.names.slice(2).every((n) => n === DELTA_EVENT)).toBe(true);
    expect(branch.envelopes).toEqual(rows.map((r) => r.envelope));
    expect(branch.names[0]).toBe("message.part.updated");
    expect(branch.names.slice(1).every((n) => n === DELTA_EVENT)).toBe(true);
  });
});

describe("fan-out: held updates", () => {
  it("a held update's row is encoded from the event it was built from, its envelope not parsed back; the same bytes as the row read from the log", () => {
    const owner = { turnId: "t1", executionId: "e1" };
    const part = { id: "p1", type: "text" };
    const built = [
      updateRow(owner, { seq: 1, atMs: 1_000, whole: { ...part, text: "one " } }),
      ...["two ", "three ", "four "].map((d, i) => updateRow(owner, { seq: i + 2, atMs: 1_010 + i, part, delta: d })),
    ];
    // The same rows as the log reads them back: only their JSON.
    const read = built.map((r) => ({ seq: r.seq, type: r.type, envelope: r.envelope }));
    const sentBy = (rows: EventRow[]): { bytes: string[]; parsed: number } => {
      const bytes: string[] = [];
      const state: Subscription = { ...newSubscription(0), live: true, started: true, synced: true };
      const hub = new SubscriptionHub<string>({
        sockets: () => ["ws"],
        load: () => ({ ...state }),
        save: () => undefined,
        send: (_ws, message) => void bytes.push(new TextDecoder().decode(message)),
        readPage: () => [],
        lastSeq: () => rows.length,
        firstRetainedSeq: () => 1,
      });
      const envelopes = new Set(rows.map((r) => r.envelope));
      const parse = vi.spyOn(JSON, "parse");
      try {
        hub.publishBatch(rows);
        hub.flush();
        return { bytes, parsed: parse.mock.calls.filter(([text]) => envelopes.has(text)).length };
      } finally {
        parse.mockRestore();
      }
    };
    const fromBuilt = sentBy(built);
    const fromRead = sentBy(read);
    expect(fromBuilt.parsed).toBe(0);
    expect(fromRead.parsed).toBe(4);
    expect(fromBuilt.bytes).toEqual(fromRead.bytes);
    expect(fromBuilt.bytes.join("")).toContain(DELTA_EVENT);
  });
});

/** A fan-out over a part log with direct streams (their quiet time; null: none offered), recording every message sent. */
function directFanout(
  l: ReturnType<typeof partLog>,
  options: { maxPendingBytes?: number; directQuietMs?: number | null } = {},
) {
  const quiet = options.directQuietMs === undefined ? 60_000 : options.directQuietMs;
  const sent: Array<{ ws: WebSocket; message: Uint8Array }> = [];
  const fanout = new EventFanout({
    readPage: (after, limit) => l.rows.filter((r) => r.seq > after).slice(0, limit),
    lastSeq: () => l.rows.length,
    firstRetainedSeq: () => (l.rows.length ? 1 : null),
    pingIntervalMs: 60_000,
    maxPendingBytes: options.maxPendingBytes ?? 1_000_000,
    liveIntervalMs: 0,
    ...(quiet === null ? {} : { directQuietMs: quiet }),
    onSend: (ws, message) => sent.push({ ws, message }),
  });
  return { fanout, sent };
}

describe("fan-out: direct streams", () => {
  const tick = () => new Promise((r) => setTimeout(r, 0));

  it("offered after a live batch, handed over with nothing replayed or skipped: the reader gets the log once, lean frames continuing across the switches, and no socket message while it is direct", async () => {
    const l = partLog();
    l.append("a", "pa", "start ");
    const { fanout, sent } = directFanout(l);
    const reading = readEvents(fanout.open(0), 61);
    await until(() => sent.some((m) => m.message[0] === LIVE));
    // Batches one task apart: the first goes on the socket with the offer; the relay opens the
    // stream meanwhile (batches keep coming on the socket until the hand-over).
    for (let i = 0; i < 20; i++) {
      fanout.publish(l.append("a", "pa", `${i} `));
      await tick();
    }
    await until(() => fanout.directs!.size === 1);
    const kindsAt = (from: number) => sent.slice(from).map((m) => m.message[0]);
    expect(kindsAt(0)).toContain(DIRECT);
    expect(kindsAt(0)).toContain(HANDOVER);
    // Direct: nothing more on the socket.
    const before = sent.length;
    for (let i = 20; i < 40; i++) {
      fanout.publish(l.append("a", "pa", `${i} `));
      await tick();
    }
    expect(sent.length).toBe(before);
    // Quiet: the stream ends, the events go on the socket again, and a stream is offered again.
    fanout.endDirect();
    expect(fanout.directs!.size).toBe(0);
    for (let i = 40; i < 60; i++) {
      fanout.publish(l.append("a", "pa", `${i} `));
      await tick();
    }
    expect(kindsAt(before)).toContain(EVENTS);
    expect(kindsAt(before)).toContain(DIRECT);
    const read = await reading;
    expect(read.envelopes).toEqual(l.rows.map((r) => r.envelope));
    // Full frames only at the start (the replay's, and this instance's first live one); lean deltas
    // all through after them, across both switches.
    expect(read.names.map((n, i) => (n === DELTA_EVENT ? "" : `${i}:${n}`)).filter(Boolean)).toEqual([
      "0:message.part.updated",
      "1:message.part.updated",
    ]);
  });

  it("a reader too far behind on its direct stream is broken off: its browser's stream ends (it reconnects from its last id)", async () => {
    const l = partLog();
    const { fanout, sent } = directFanout(l, { maxPendingBytes: 20_000 });
    const reader = fanout.open(0).getReader();
    await until(() => sent.some((m) => m.message[0] === LIVE));
    fanout.publish(l.append("a", "pa", "first "));
    await until(() => fanout.directs!.size === 1);
    // Never read: the stream's unread bytes pass the bound.
    for (let i = 0; i < 20 && fanout.directs!.size === 1; i++) {
      fanout.publish(l.append("a", "pa", "w".repeat(5_000)));
      await tick();
    }
    expect(fanout.directs!.size).toBe(0);
    let ended = false;
    for (let i = 0; i < 100 && !ended; i++) ended = (await reader.read()).done;
    expect(ended).toBe(true);
  });

  it("not offered when direct streams are off (SSE_DIRECT_QUIET_MS=0), nor to a subscription that did not ask for one", async () => {
    for (const quiet of [0, undefined]) {
      const l = partLog();
      const { fanout, sent } = directFanout(l, { directQuietMs: quiet ?? null });
      const reading = readEvents(fanout.open(0), 5);
      await until(() => sent.some((m) => m.message[0] === LIVE));
      for (let i = 0; i < 5; i++) {
        fanout.publish(l.append("a", "pa", `${i} `));
        await tick();
      }
      expect((await reading).envelopes).toEqual(l.rows.map((r) => r.envelope));
      expect(sent.map((m) => m.message[0])).not.toContain(DIRECT);
    }
  });
});

describe("direct streams: a turn's end", () => {
  it("ends them once the batch with the turn's last event is sent, offering none with it: the object need not stay awake the quiet time", async () => {
    const l = partLog();
    const { fanout, sent } = directFanout(l);
    const reading = readEvents(fanout.open(0), 12);
    await until(() => sent.some((m) => m.message[0] === LIVE));
    for (let i = 0; i < 10; i++) {
      fanout.publish(l.append("a", "pa", `${i} `));
      await new Promise((r) => setTimeout(r, 0));
    }
    await until(() => fanout.directs!.size === 1);
    // The turn's last events, then its end: sent on the direct stream, which then ends.
    fanout.publish(l.append("a", "pa", "last "));
    fanout.endDirectSoon();
    await until(() => fanout.directs!.size === 0);
    // Back on the socket, and no stream offered with the end: the next batch goes on the socket and offers one.
    const offers = () => sent.filter((m) => m.message[0] === DIRECT).length;
    expect(offers()).toBe(1);
    fanout.publish(l.append("a", "pa", "next "));
    expect((await reading).envelopes).toEqual(l.rows.map((r) => r.envelope));
    expect(offers()).toBe(2);
  });
});

describe("direct streams: the quiet time", () => {
  it("ends every stream once none was written for the quiet time, and not while they are written", async () => {
    let quiet = 0;
    const directs = new DirectStreams({ onQuiet: () => (quiet++, directs.endAll()), quietMs: () => 30 });
    const body = directs.start("a".repeat(32), 1_000_000).getReader();
    // Written more often than the quiet time: not ended.
    for (let i = 0; i < 10; i++) {
      expect(directs.write("a".repeat(32), new Uint8Array([65]))).toBe("written");
      await body.read();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(quiet).toBe(0);
    await until(() => directs.size === 0);
    expect(quiet).toBe(1);
    expect((await body.read()).done).toBe(true);
  });

  it("holds no timer once none is open: a pending timer would keep the object awake", () => {
    vi.useFakeTimers();
    try {
      const directs = new DirectStreams({ onQuiet: () => directs.endAll(), quietMs: () => 3000 });
      void directs.start("b".repeat(32), 1_000_000).cancel();
      expect(vi.getTimerCount()).toBe(1);
      directs.end("b".repeat(32));
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
