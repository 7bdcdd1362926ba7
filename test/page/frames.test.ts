/**
 * The event stream's frames (public/wire/frames.js, docs/sse-protocol.md §11): any log, cut into
 * responses and pages anywhere, encoded as the session object encodes it and decoded as a reader
 * decodes it, gives back every event byte for byte, and so every part's text; a one-word delta
 * that continues its part fits in 120 bytes of SSE; anything the lean form cannot say goes full.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DELTA_EVENT, encodeEvent, frameDecoder } from "../../public/wire/frames.js";
import { encodeSseFrame, SseParser } from "../../src/lib/sse";

type Row = { seq: number; type: string; envelope: string };

/** An envelope's text as the log writes it (src/session/store/store.ts appendEvent: this key order). */
function envelopeText(e: {
  seq: number;
  turnId: string | null;
  executionId: string | null;
  type: string;
  data: Record<string, unknown>;
  usage?: unknown;
  at: string;
}): string {
  return JSON.stringify({
    seq: e.seq,
    turnId: e.turnId,
    executionId: e.executionId,
    type: e.type,
    data: e.data,
    ...(e.usage ? { usage: e.usage, usageMode: "cumulative" } : {}),
    at: e.at,
  });
}

const START = Date.parse("2026-12-02T06:00:00.000Z");

/** One step of a made-up log: which turn and part, what it carries, how much later. */
const step = fc.record({
  // Mostly the part of the step before (a part streams as a run of deltas), now and then another.
  turn: fc.oneof({ arbitrary: fc.constant(-1), weight: 4 }, { arbitrary: fc.integer({ min: 0, max: 2 }), weight: 1 }),
  part: fc.oneof({ arbitrary: fc.constant(-1), weight: 4 }, { arbitrary: fc.integer({ min: 0, max: 2 }), weight: 1 }),
  kind: fc.oneof(
    { arbitrary: fc.constant("delta"), weight: 12 },
    { arbitrary: fc.constantFrom("whole", "other", "extra", "usage", "reasoning"), weight: 3 },
  ),
  text: fc.string({ maxLength: 12 }),
  later: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: -50, max: -1 })),
  time: fc.oneof({ arbitrary: fc.constant(false), weight: 7 }, { arbitrary: fc.constant(true), weight: 1 }),
});

/** A log built from steps, as the gateway would store it (the part's other fields vary with `kind`). */
function logOf(steps: Array<typeof step extends fc.Arbitrary<infer T> ? T : never>): Row[] {
  let at = START;
  let turn = 0;
  let partNo = 0;
  return steps.map((s, i) => {
    const seq = i + 1;
    at += s.later;
    if (s.turn >= 0) turn = s.turn;
    if (s.part >= 0) partNo = s.part;
    const turnId = `t${turn}`;
    const executionId = `exe_${turn}`;
    const id = `exe_${turn}:text-${partNo}`;
    const base = { seq, turnId, executionId, at: new Date(at).toISOString() };
    const type = s.kind === "other" ? "status" : "message.part.updated";
    const partType = s.kind === "reasoning" ? "reasoning" : "text";
    const part: Record<string, unknown> = { id, type: partType, ...(s.time ? { time: { start: 1 } } : {}) };
    const data =
      s.kind === "other"
        ? { status: s.text }
        : s.kind === "whole"
          ? { part: { ...part, text: s.text } }
          : s.kind === "extra"
            ? { part, delta: s.text, sessionID: "x" }
            : { part, delta: s.text };
    const envelope = envelopeText({ ...base, type, data, ...(s.kind === "usage" ? { usage: { input: 1 } } : {}) });
    return { seq, type, envelope };
  });
}

/**
 * Encodes rows as responses and pages: a response cut restarts the reader's decoder (a new
 * connection), a page cut restarts the encoder's context (a new replay page) but not the decoder.
 */
function wire(rows: Row[], cuts: Set<number>, pages: Set<number>): string[] {
  const responses: string[] = [];
  let text = "";
  let context = null;
  for (const row of rows) {
    if (cuts.has(row.seq) && text) {
      responses.push(text);
      text = "";
      context = null;
    }
    if (pages.has(row.seq)) context = null;
    // A ping between any two frames changes nothing (pages happen to be where they fall).
    if (pages.has(row.seq + 1)) text += ": ping\n\n";
    const encoded = encodeEvent(context, row);
    text += encodeSseFrame(encoded.frame);
    context = encoded.context;
  }
  if (text) responses.push(text);
  return responses;
}

function read(responses: string[]): string[] {
  const out: string[] = [];
  for (const response of responses) {
    const decoder = frameDecoder();
    // Read in pieces of any size, as a network delivers them.
    const parser = new SseParser();
    for (let i = 0; i < response.length; i += 7)
      for (const frame of parser.push(response.slice(i, i + 7))) {
        const event = decoder.decode(frame);
        if (event) out.push(JSON.stringify(event));
      }
  }
  return out;
}

/** Every part's text by docs/sse-protocol.md §1.6: whole text replaces, a delta appends. */
function texts(envelopes: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const text of envelopes) {
    const e = JSON.parse(text);
    if (e.type !== "message.part.updated") continue;
    const part = e.data.part;
    if (typeof part.text === "string") out[part.id] = part.text;
    else if (typeof e.data.delta === "string") out[part.id] = (out[part.id] ?? "") + e.data.delta;
  }
  return out;
}

describe("the event stream's frames", () => {
  it("any log, cut into responses and pages anywhere, reads back as the same events and the same text", () => {
    let lean = 0;
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 60 }),
        fc.array(fc.integer({ min: 1, max: 60 })),
        fc.array(fc.integer({ min: 1, max: 60 })),
        (steps, cutAt, pageAt) => {
          const rows = logOf(steps);
          const responses = wire(rows, new Set(cutAt), new Set(pageAt));
          lean += responses.join("").split(`event: ${DELTA_EVENT}\n`).length - 1;
          const back = read(responses);
          expect(back).toEqual(rows.map((r) => r.envelope));
          expect(texts(back)).toEqual(texts(rows.map((r) => r.envelope)));
        },
      ),
      { numRuns: 300 },
    );
    // The runs went through lean frames, not only full ones.
    expect(lean).toBeGreaterThan(300);
  });

  it("a run of deltas of one part goes lean after its first frame, and the first frame of each response is full", () => {
    const rows = logOf(
      Array.from({ length: 6 }, () => ({ turn: -1, part: -1, kind: "delta", text: "word ", later: 20, time: false })),
    );
    const [first, second] = wire(rows, new Set([4]), new Set());
    const events = (text: string) => new SseParser().push(text).map((f) => f.event);
    expect(events(first!)).toEqual(["message.part.updated", DELTA_EVENT, DELTA_EVENT]);
    expect(events(second!)).toEqual(["message.part.updated", DELTA_EVENT, DELTA_EVENT]);
    expect(new SseParser().push(first!)[1]).toMatchObject({ id: "2", data: '{"d":"word ","t":20}' });
  });

  it("a one-word delta's frame, SSE framing included, is at most 120 bytes", () => {
    // Ids as long as the Sandbox's and the emulator's, a seq of 15 digits (the cursor's bound).
    const seq = 999_999_999_999_998;
    const turnId = "turn_2b9c0a6e-5f1d-4c8e-9a3b-7d2e1f0c4b5a";
    const executionId = "exe_4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a99";
    const part = { id: `${executionId}:text-2`, type: "text" };
    const previous = {
      seq,
      type: "message.part.updated",
      envelope: envelopeText({
        seq,
        turnId,
        executionId,
        type: "message.part.updated",
        data: { part, delta: "The " },
        at: "2026-12-02T06:00:00.000Z",
      }),
    };
    const row = {
      seq: seq + 1,
      type: "message.part.updated",
      envelope: envelopeText({
        seq: seq + 1,
        turnId,
        executionId,
        type: "message.part.updated",
        data: { part, delta: "answer " },
        at: "2026-12-02T06:00:00.020Z",
      }),
    };
    const first = encodeEvent(null, previous);
    const lean = encodeSseFrame(encodeEvent(first.context, row).frame);
    expect(lean).toBe(`id: ${seq + 1}\nevent: ${DELTA_EVENT}\ndata: {"d":"answer ","t":20}\n\n`);
    expect(new TextEncoder().encode(lean).byteLength).toBeLessThanOrEqual(120);
    // The full frame it replaces is more than twice that.
    expect(new TextEncoder().encode(encodeSseFrame(encodeEvent(null, row).frame)).byteLength).toBeGreaterThan(240);
  });

  it("goes full for what the lean form cannot say: another part, turn or execution, other fields, usage, a time that is not the log's", () => {
    const at = "2026-12-02T06:00:00.000Z";
    const prev = {
      seq: 1,
      turnId: "t",
      executionId: "e",
      type: "message.part.updated",
      data: { part: { id: "p", type: "text" }, delta: "a" },
      at,
    };
    const context = encodeEvent(null, { seq: 1, type: prev.type, envelope: envelopeText(prev) }).context;
    const next = (change: Record<string, unknown>) => {
      const e = { ...prev, seq: 2, data: { part: { id: "p", type: "text" }, delta: "b" }, ...change };
      return encodeEvent(context, { seq: 2, type: e.type, envelope: JSON.stringify(e) }).frame.event;
    };
    expect(next({})).toBe(DELTA_EVENT);
    expect(next({ data: { part: { id: "q", type: "text" }, delta: "b" } })).toBe("message.part.updated");
    expect(next({ data: { part: { id: "p", type: "reasoning" }, delta: "b" } })).toBe("message.part.updated");
    expect(next({ data: { part: { id: "p", type: "text", text: "ab" }, delta: "b" } })).toBe("message.part.updated");
    expect(next({ data: { part: { id: "p", type: "text" }, delta: "b", extra: 1 } })).toBe("message.part.updated");
    expect(next({ turnId: "u" })).toBe("message.part.updated");
    expect(next({ executionId: null })).toBe("message.part.updated");
    expect(next({ usage: { input: 1 } })).toBe("message.part.updated");
    expect(next({ at: "2026-12-02T06:00:00Z" })).toBe("message.part.updated");
    // A whole-text update is never lean; after it, a delta continues the part less its text.
    const whole = encodeEvent(context, {
      seq: 2,
      type: prev.type,
      envelope: envelopeText({ ...prev, seq: 2, data: { part: { id: "p", type: "text", text: "xy" } } }),
    });
    expect(whole.frame.event).toBe("message.part.updated");
    expect(
      encodeEvent(whole.context, {
        seq: 3,
        type: prev.type,
        envelope: envelopeText({ ...prev, seq: 3, data: { part: { id: "p", type: "text" }, delta: "z" } }),
      }).frame.event,
    ).toBe(DELTA_EVENT);
  });

  it("a reader refuses a delta frame with nothing to continue: at a response's start, after a reset, after another event", () => {
    const delta = { id: "5", event: DELTA_EVENT, data: '{"d":"x"}' };
    expect(() => frameDecoder().decode(delta)).toThrow(/continues no part update/);
    const d = frameDecoder();
    d.decode({
      id: "4",
      event: "message.part.updated",
      data: envelopeText({
        seq: 4,
        turnId: "t",
        executionId: "e",
        type: "message.part.updated",
        data: { part: { id: "p", type: "text" }, delta: "a" },
        at: "2026-12-02T06:00:00.000Z",
      }),
    });
    expect(d.decode(delta)).toMatchObject({ seq: 5, data: { part: { id: "p" }, delta: "x" } });
    expect(d.decode({ event: "stream.reset", data: "{}" })).toBeNull();
    expect(() => d.decode({ id: "6", event: DELTA_EVENT, data: '{"d":"y"}' })).toThrow();
    const s = frameDecoder();
    s.decode({
      id: "1",
      event: "status",
      data: envelopeText({
        seq: 1,
        turnId: "t",
        executionId: "e",
        type: "status",
        data: {},
        at: "2026-12-02T06:00:00.000Z",
      }),
    });
    expect(() => s.decode({ id: "2", event: DELTA_EVENT, data: '{"d":"y"}' })).toThrow();
    expect(() => frameDecoder().decode({ id: "2", event: DELTA_EVENT, data: '{"d":1}' })).toThrow();
  });
});
