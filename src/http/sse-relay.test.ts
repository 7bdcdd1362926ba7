/**
 * The Worker's relay passes the object's bytes through: what it writes to the browser's pipe is a
 * view of the message it got (the same memory: nothing decoded, nothing encoded), a frame split
 * across two messages arrives whole, a page is pulled only while there is room, the ping starts once
 * live, the slow-viewer bound counts the bytes unread before a message (one large message passes),
 * and a message that is not this wire (text) ends the stream. The pipe (the runtime's own, read by
 * the runtime) counts what the browser has not read yet and says when the browser went away.
 */
import { describe, expect, it } from "vitest";
import type { BytePipe } from "../lib/byte-pipe";
import {
  CLOSE_DELETED,
  CLOSE_KNOWN,
  DIRECT,
  EVENTS,
  HANDOVER,
  LIVE,
  PAGE,
  PULL,
  wireMessage,
} from "../lib/subscription-wire";
import { type RelaySocket, relayOnceKnown, relayStream, type WaitSocket } from "./sse-relay";

/** A socket the test plays the object on: it sees the relay's sends and delivers the test's messages. */
function fakeSocket() {
  const listeners: Record<string, Array<(event: { data: unknown }) => void>> = {};
  const socket = {
    binaryType: "blob" as "blob" | "arraybuffer",
    sent: [] as string[],
    closed: undefined as { code?: number; reason?: string } | undefined,
    send(message: string) {
      this.sent.push(message);
    },
    close(code?: number, reason?: string) {
      this.closed = { code, reason };
    },
    addEventListener(type: string, listener: (event: { data: unknown }) => void) {
      (listeners[type] ??= []).push(listener);
    },
    /** Delivers a message as the runtime would with binaryType "arraybuffer": the message's own buffer. */
    deliver(data: unknown) {
      for (const l of listeners.message ?? []) l({ data });
    },
  };
  return socket satisfies RelaySocket;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const tick = () => new Promise((r) => setTimeout(r, 0));

/** Reads `length` bytes (the pipe hands them over in chunks of its own size) as text. */
async function readBytes(reader: ReadableStreamDefaultReader<Uint8Array>, length: number): Promise<string> {
  const got: Uint8Array[] = [];
  let n = 0;
  while (n < length) {
    const { done, value } = await reader.read();
    if (done) break;
    got.push(value);
    n += value.byteLength;
  }
  const all = new Uint8Array(n);
  let at = 0;
  for (const g of got) {
    all.set(g, at);
    at += g.byteLength;
  }
  return text(all);
}

/** A pipe that records what it was given (the chunks themselves) and never fills up. */
function recordingPipe(): BytePipe & { chunks: Uint8Array[] } {
  const chunks: Uint8Array[] = [];
  return {
    chunks,
    readable: new ReadableStream(),
    write: (b) => void chunks.push(b),
    close: () => {},
    abort: () => {},
    pipeFrom: () => Promise.resolve(false),
    unread: () => 0,
    below: () => Promise.resolve(),
    gone: new Promise(() => {}),
  };
}

describe("the Worker's relay", () => {
  it("writes each message's SSE bytes to the pipe as a view of the message itself", async () => {
    const socket = fakeSocket();
    const pipe = recordingPipe();
    relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 }, pipe);
    await tick();
    expect(socket.binaryType).toBe("arraybuffer");
    expect(socket.sent).toEqual([PULL]);
    const page = wireMessage(LIVE, "retry: 2000\n\nid: 1\nevent: x\ndata: {}\n\n");
    socket.deliver(page.buffer);
    // The same memory as the message, one byte in: passed through, not copied or re-encoded.
    expect(pipe.chunks).toHaveLength(1);
    expect(pipe.chunks[0]!.buffer).toBe(page.buffer);
    expect(pipe.chunks[0]!.byteOffset).toBe(1);
    expect(text(pipe.chunks[0]!)).toBe("retry: 2000\n\nid: 1\nevent: x\ndata: {}\n\n");
  });

  it("pulls the next page only while less than the high-water mark is unread, and not once live", async () => {
    const socket = fakeSocket();
    const reader = relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 }).getReader();
    await tick();
    expect(socket.sent).toEqual([PULL]);
    // A small page: room for more, so the next is asked for at once.
    const small = "retry: 2000\n\nid: 1\nevent: x\ndata: {}\n\n";
    socket.deliver(wireMessage(PAGE, small).buffer);
    await tick();
    expect(socket.sent).toEqual([PULL, PULL]);
    // A page of 100 KB, unread: no pull until the browser has read it.
    const big = `id: 2\nevent: x\ndata: ${"y".repeat(100_000)}\n\n`;
    socket.deliver(wireMessage(PAGE, big).buffer);
    await tick();
    await tick();
    expect(socket.sent).toEqual([PULL, PULL]);
    expect(await readBytes(reader, small.length + big.length)).toBe(small + big);
    await tick();
    expect(socket.sent).toEqual([PULL, PULL, PULL]);
    socket.deliver(wireMessage(LIVE, "id: 3\nevent: x\ndata: {}\n\n").buffer);
    expect(await readBytes(reader, 24)).toBe("id: 3\nevent: x\ndata: {}\n\n");
    // Live: no more pulls; pushed events are written as they come.
    socket.deliver(wireMessage(EVENTS, 'id: 4\nevent: message.part.delta\ndata: {"d":"a"}\n\n').buffer);
    expect(await readBytes(reader, 47)).toBe('id: 4\nevent: message.part.delta\ndata: {"d":"a"}\n\n');
    await tick();
    expect(socket.sent).toEqual([PULL, PULL, PULL]);
    await reader.cancel();
    // The browser went away: found at the next write (an event, or the ping), and the socket closed.
    socket.deliver(wireMessage(EVENTS, "id: 5\nevent: x\ndata: {}\n\n").buffer);
    await tick();
    expect(socket.closed).toEqual({ code: 1000, reason: "viewer left" });
  });

  it("a frame split across two messages reaches the browser whole, byte for byte", async () => {
    const socket = fakeSocket();
    const reader = relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 }).getReader();
    const first = reader.read();
    await tick();
    socket.deliver(wireMessage(LIVE, "retry: 2000\n\n").buffer);
    await first;
    const frame = 'id: 9\nevent: message.part.delta\ndata: {"d":"héllo ✓"}\n\n';
    const bytes = new TextEncoder().encode(frame);
    // Cut inside a multi-byte character: the relay never decodes, so nothing is mangled.
    const cut = bytes.indexOf(0xc3) + 1;
    for (const piece of [bytes.subarray(0, cut), bytes.subarray(cut)]) {
      const message = new Uint8Array(piece.byteLength + 1);
      message[0] = EVENTS;
      message.set(piece, 1);
      socket.deliver(message.buffer);
    }
    const got: number[] = [];
    while (got.length < bytes.byteLength) got.push(...(await reader.read()).value!);
    expect(new TextDecoder().decode(new Uint8Array(got))).toBe(frame);
    await reader.cancel();
  });

  it("pings once live, at the interval", async () => {
    const socket = fakeSocket();
    const reader = relayStream({ socket }, { pingIntervalMs: 20, maxPendingBytes: 1_000_000 }).getReader();
    const first = reader.read();
    await tick();
    socket.deliver(wireMessage(LIVE, "retry: 2000\n\n").buffer);
    expect(text((await first).value!)).toBe("retry: 2000\n\n");
    expect(text((await reader.read()).value!)).toBe(": ping\n\n");
    await reader.cancel();
  });

  it("closes a viewer whose unread bytes pass the bound, counting the bytes passed through", async () => {
    const socket = fakeSocket();
    const stream = relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000 });
    const reader = stream.getReader();
    const first = reader.read();
    await tick();
    socket.deliver(wireMessage(LIVE, "retry: 2000\n\n").buffer);
    await first;
    await tick();
    // 100-byte frames, unread: the eleventh puts 1,100 bytes in the queue, past the bound, and the
    // twelfth, arriving with the viewer that far behind, closes it (it is not written).
    const frame = `id: 1\nevent: x\ndata: ${"y".repeat(100 - 23)}\n\n`;
    expect(new TextEncoder().encode(frame).byteLength).toBe(100);
    let sent = 0;
    while (!socket.closed && sent < 2_000) {
      socket.deliver(wireMessage(EVENTS, frame).buffer);
      sent++;
    }
    expect(socket.closed).toEqual({ code: 1000, reason: "viewer too far behind" });
    expect(sent).toBe(12);
    let drained = 0;
    for (let r = await reader.read(); !r.done; r = await reader.read()) drained += r.value.byteLength;
    expect(drained).toBe(1_100);
  });

  it("one message larger than the bound reaches a viewer that keeps up: the bound counts what is unread before it", async () => {
    const socket = fakeSocket();
    const reader = relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000 }).getReader();
    const first = reader.read();
    await tick();
    socket.deliver(wireMessage(LIVE, "retry: 2000\n\n").buffer);
    await first;
    // No read pending when it arrives: 5,000 bytes in one message, five times the bound.
    const frame = `id: 1\nevent: x\ndata: ${"y".repeat(5_000 - 23)}\n\n`;
    socket.deliver(wireMessage(EVENTS, frame).buffer);
    expect(socket.closed).toBeUndefined();
    expect(await readBytes(reader, 5_000)).toBe(frame);
    await tick();
    // Read: the next one is written too.
    socket.deliver(wireMessage(EVENTS, frame).buffer);
    expect(socket.closed).toBeUndefined();
    expect(await readBytes(reader, 5_000)).toBe(frame);
    await reader.cancel();
  });

  it("ends the stream on a message that is not this wire: text, or an unknown kind", async () => {
    for (const message of [
      "Eid: 1\n\n",
      wireMessage(EVENTS, "").buffer.slice(0, 0),
      new Uint8Array([0x58, 0x0a]).buffer,
    ]) {
      const socket = fakeSocket();
      const reader = relayStream({ socket }, { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 }).getReader();
      const first = reader.read();
      await tick();
      socket.deliver(message);
      expect(await first).toEqual({ done: true, value: undefined });
      expect(socket.closed).toEqual({ code: 1002, reason: "unknown message" });
    }
  });
});

describe("the relay's direct streams", () => {
  const options = { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 };
  /** A direct stream the test writes as the object would (a JavaScript stream: see byte-pipe.test.ts). */
  function directStream() {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
    return { stream, controller };
  }
  const frame = (id: number) => `id: ${id}\nevent: x\ndata: {}\n\n`;

  it("opens the stream offered (D) and, from the hand-over (H), writes it; the socket's messages after H follow it once it ends, in order", async () => {
    const socket = fakeSocket();
    const direct = directStream();
    const opened: string[] = [];
    const reader = relayStream(
      { socket, openDirect: async (id) => (opened.push(id), direct.stream) },
      options,
    ).getReader();
    await tick();
    socket.deliver(wireMessage(LIVE, frame(1)).buffer);
    socket.deliver(wireMessage(DIRECT, "abc").buffer);
    await tick();
    expect(opened).toEqual(["abc"]);
    // Until the hand-over, the socket's events are written as they come.
    socket.deliver(wireMessage(EVENTS, frame(2)).buffer);
    socket.deliver(wireMessage(HANDOVER, "").buffer);
    // After it: the direct stream's bytes, and the socket's messages wait until it ends.
    socket.deliver(wireMessage(EVENTS, frame(5)).buffer);
    const enc = new TextEncoder();
    direct.controller.enqueue(enc.encode(frame(3)));
    direct.controller.enqueue(enc.encode(frame(4)));
    const expected = [1, 2, 3, 4].map(frame).join("");
    expect(await readBytes(reader, expected.length)).toBe(expected);
    direct.controller.close();
    expect(await readBytes(reader, frame(5).length)).toBe(frame(5));
    expect(socket.closed).toBeUndefined();
  });

  it("a direct stream that breaks off (the object's bound for this viewer, an eviction) ends the browser's stream", async () => {
    const socket = fakeSocket();
    const direct = directStream();
    const reader = relayStream({ socket, openDirect: async () => direct.stream }, options).getReader();
    await tick();
    socket.deliver(wireMessage(LIVE, frame(1)).buffer);
    socket.deliver(wireMessage(DIRECT, "abc").buffer);
    socket.deliver(wireMessage(HANDOVER, "").buffer);
    expect(await readBytes(reader, frame(1).length)).toBe(frame(1));
    direct.controller.error(new Error("broken off"));
    expect((await reader.read()).done).toBe(true);
    expect(socket.closed?.code).toBe(1000);
  });

  it("an offer before live, a hand-over without an offer, or an offer to a relay that cannot open one is not this wire", async () => {
    const cases = [
      { live: false, messages: [wireMessage(DIRECT, "abc")], openDirect: true },
      { live: true, messages: [wireMessage(HANDOVER, "")], openDirect: true },
      { live: true, messages: [wireMessage(DIRECT, "abc")], openDirect: false },
    ];
    for (const c of cases) {
      const socket = fakeSocket();
      const direct = directStream();
      const reader = relayStream(
        { socket, ...(c.openDirect ? { openDirect: async () => direct.stream } : {}) },
        options,
      ).getReader();
      await tick();
      if (c.live) {
        socket.deliver(wireMessage(LIVE, frame(1)).buffer);
        await readBytes(reader, frame(1).length);
      }
      for (const m of c.messages) socket.deliver(m.buffer);
      expect((await reader.read()).done).toBe(true);
      expect(socket.closed).toEqual({ code: 1002, reason: "unknown message" });
    }
  });
});

/** A socket the test plays the user's object on while a stream waits for a conversation. */
function fakeWaitSocket() {
  const listeners: Record<string, Array<(event: { code: number }) => void>> = {};
  return {
    closed: undefined as { code?: number; reason?: string } | undefined,
    close(code?: number, reason?: string) {
      this.closed ??= { code, reason };
    },
    addEventListener(type: string, listener: (event: { code: number }) => void) {
      (listeners[type] ??= []).push(listener);
    },
    /** The object closes it with `code` (CLOSE_KNOWN: the conversation exists). */
    fire(type: "close" | "error", code = 1006) {
      for (const l of listeners[type] ?? []) l({ code });
    },
  } satisfies WaitSocket & Record<string, unknown>;
}

const HEAD = "retry: 2000\n\n";
const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
};

describe("the relay of a conversation that does not exist yet", () => {
  it("writes the head and pings while it waits, asking nothing again, and follows the log from its start once the object says it exists", async () => {
    const socket = fakeSocket();
    const waiting = fakeWaitSocket();
    let waits = 0;
    const opened: number[] = [];
    const reader = relayOnceKnown(
      async () => (waits++, waiting),
      async (after) => {
        opened.push(after);
        return { socket };
      },
      7,
      { pingIntervalMs: 20, maxPendingBytes: 1_000_000 },
    ).getReader();
    const reset = `event: stream.reset\ndata: ${JSON.stringify({ type: "stream.reset", data: { reason: "cursor_ahead", firstRetainedSeq: null, lastSeq: 0 } })}\n\n`;
    expect(await readBytes(reader, HEAD.length + reset.length)).toBe(HEAD + reset);
    // Not known yet: pings at the interval, one wait (no asking again per interval), and no socket.
    expect(await readBytes(reader, 3 * 8)).toBe(": ping\n\n".repeat(3));
    expect({ waits, opened }).toEqual({ waits: 1, opened: [] });
    waiting.fire("close", CLOSE_KNOWN);
    // The log is opened from its start at once, and its bytes follow in this stream.
    await until(() => socket.sent.length > 0);
    expect(opened).toEqual([0]);
    expect(socket.sent).toEqual([PULL]);
    expect(waiting.closed).toEqual({ code: 1000, reason: "closed" });
    socket.deliver(wireMessage(LIVE, "id: 1\nevent: x\ndata: {}\n\n").buffer);
    let got = "";
    while (!got.includes("data: {}\n\n")) got += await readBytes(reader, 1);
    expect(got.replaceAll(": ping\n\n", "")).toBe("id: 1\nevent: x\ndata: {}\n\n");
    await reader.cancel();
  });

  it("follows at once when the object has the conversation already", async () => {
    const socket = fakeSocket();
    const opened: number[] = [];
    const reader = relayOnceKnown(
      async () => "known",
      async (after) => (opened.push(after), { socket }),
      0,
      { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 },
    ).getReader();
    expect(await readBytes(reader, HEAD.length)).toBe(HEAD);
    await until(() => socket.sent.length > 0);
    expect(opened).toEqual([0]);
    await reader.cancel();
  });

  it("a wait that is lost (the object went away, or could not be asked) is opened again; one the account's deletion ends ends the stream", async () => {
    const sockets = [fakeWaitSocket(), fakeWaitSocket()];
    let waits = 0;
    let opened = 0;
    const reader = relayOnceKnown(
      async () => {
        waits++;
        if (waits === 1) throw new Error("the user's object could not be reached");
        return sockets[waits - 2]!;
      },
      async () => (opened++, { socket: fakeSocket() }),
      0,
      { pingIntervalMs: 60_000, maxPendingBytes: 1_000_000 },
    ).getReader();
    expect(await readBytes(reader, HEAD.length)).toBe(HEAD);
    await until(() => waits === 2);
    sockets[0]!.fire("close", 1006);
    await until(() => waits === 3);
    sockets[1]!.fire("close", CLOSE_DELETED);
    expect(await reader.read()).toEqual({ done: true, value: undefined });
    expect(opened).toBe(0);
  });

  it("a browser that leaves while it waits closes its wait and opens no socket, though the conversation exists later", async () => {
    let opened = 0;
    const waiting = fakeWaitSocket();
    const reader = relayOnceKnown(
      async () => waiting,
      async () => (opened++, { socket: fakeSocket() }),
      0,
      { pingIntervalMs: 20, maxPendingBytes: 1_000_000 },
    ).getReader();
    expect(await readBytes(reader, HEAD.length)).toBe(HEAD);
    await reader.cancel();
    // Found at the next ping's write.
    await until(() => waiting.closed !== undefined);
    expect(waiting.closed).toEqual({ code: 1000, reason: "viewer left" });
    waiting.fire("close", CLOSE_KNOWN);
    await new Promise((r) => setTimeout(r, 50));
    expect(opened).toBe(0);
  });
});
