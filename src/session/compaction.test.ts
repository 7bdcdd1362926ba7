import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeEvent, frameDecoder } from "../../public/wire/frames.js";
import { applyPartUpdate } from "../../public/wire/part-text.js";
import { applyRuns, planCompaction } from "./compaction";
import type { EventEnvelope } from "./store/records";
import { turnParts } from "./transcript";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** An envelope as the log writes it (the keys in the log's order). */
function env(
  seq: number,
  type: string,
  data: Record<string, unknown>,
  turnId: string | null = "t",
  executionId: string | null = "e",
): EventEnvelope {
  return { seq, turnId, executionId, type, data, at: new Date(T0 + seq * 7).toISOString() };
}
const delta = (seq: number, id: string, d: string, type = "text") =>
  env(seq, "message.part.updated", { part: { id, type, messageID: "m" }, delta: d });
const whole = (seq: number, id: string, text: string, type = "text") =>
  env(seq, "message.part.updated", { part: { id, type, messageID: "m", text } });

describe("planCompaction: a finished turn's part updates, one event per run", () => {
  it("replaces a run of one part's deltas by the part's whole text at the run's last seq and at", () => {
    const events = [
      env(1, "turn.accepted", {}),
      whole(2, "p", "Hel"),
      delta(3, "p", "lo"),
      delta(4, "p", " world"),
      env(5, "turn.completed", { turnId: "t", status: "completed" }),
    ];
    const plan = planCompaction(events);
    expect(plan).toEqual([{ fromSeq: 2, toSeq: 4, envelope: { ...whole(4, "p", "Hello world"), at: events[3]!.at } }]);
    expect(applyRuns(events, plan).map((e) => e.seq)).toEqual([1, 4, 5]);
  });

  it("a run ends at another event of the turn, or at another event of the log between two of the turn's", () => {
    const events = [
      whole(1, "p", "a"),
      delta(2, "p", "b"),
      env(3, "message.part.updated", { part: { id: "tool1", type: "tool", state: { status: "running" } } }),
      delta(4, "p", "c"),
      delta(5, "p", "d"),
      delta(7, "p", "e"),
      delta(8, "p", "f"),
    ];
    // seq 6 is another turn's event (a queued turn's, say): it sits between 5 and 7.
    const plan = planCompaction(events, [6]);
    expect(plan.map((r) => [r.fromSeq, r.toSeq, (r.envelope.data.part as { text: string }).text])).toEqual([
      [1, 2, "ab"],
      [4, 5, "abcd"],
      [7, 8, "abcdef"],
    ]);
  });

  it("parts interleaved are separate runs; a run of one is left alone; tool parts are not compacted", () => {
    const events = [
      delta(1, "p", "x"),
      delta(2, "r", "think", "reasoning"),
      delta(3, "r", "ing", "reasoning"),
      delta(4, "p", "y"),
    ];
    expect(
      planCompaction(events).map((r) => [r.fromSeq, r.toSeq, (r.envelope.data.part as { text: string }).text]),
    ).toEqual([[2, 3, "thinking"]]);
    const tools = [1, 2, 3].map((s) =>
      env(s, "message.part.updated", { part: { id: "tool1", type: "tool", state: { status: "running", n: s } } }),
    );
    expect(planCompaction(tools)).toEqual([]);
  });

  it("keeps the part's fields, later ones winning, and never a delta", () => {
    const events = [
      env(1, "message.part.updated", { part: { id: "p", type: "text", time: { start: 1 } }, delta: "a" }),
      env(2, "message.part.updated", {
        part: { id: "p", type: "text", time: { start: 1, end: 2 }, metadata: { x: 1 } },
        delta: "b",
      }),
    ];
    expect(planCompaction(events)[0]!.envelope.data).toEqual({
      part: { id: "p", type: "text", time: { start: 1, end: 2 }, metadata: { x: 1 }, text: "ab" },
    });
  });

  it("an update carrying usage or other data is not folded", () => {
    const withUsage = {
      ...delta(2, "p", "b"),
      usage: { inputTokens: 1, outputTokens: 1 },
      usageMode: "cumulative" as const,
    };
    expect(planCompaction([delta(1, "p", "a"), withUsage, delta(3, "p", "c")])).toEqual([]);
    expect(
      planCompaction([
        delta(1, "p", "a"),
        env(2, "message.part.updated", { part: { id: "p", type: "text" }, delta: "b", extra: 1 }),
        delta(3, "p", "c"),
      ]),
    ).toEqual([]);
  });

  it("the terminal event stops repeating the answer when it is the message's text", () => {
    const done = env(5, "turn.completed", { turnId: "t", status: "completed", result: { text: "one\n\ntwo" } });
    const events = [
      env(1, "turn.accepted", {}),
      delta(2, "p", "one"),
      env(3, "status", {}),
      delta(4, "q", "two"),
      done,
    ];
    expect(planCompaction(events)).toEqual([
      { fromSeq: 5, toSeq: 5, envelope: env(5, "turn.completed", { turnId: "t", status: "completed" }) },
    ]);
    // A result that says something else (more, less, other) stays.
    for (const text of ["one\n\ntwo!", "two", ""]) {
      expect(
        planCompaction([
          ...events.slice(0, 4),
          env(5, "turn.completed", { turnId: "t", status: "completed", result: { text } }),
        ]),
      ).toEqual([]);
    }
  });

  it("the relayed upstream result frame stops repeating it too (its finalText)", () => {
    const relayed = env(5, "result", { finalText: "one", status: "success", sessionId: "s" });
    const events = [env(1, "turn.accepted", {}), delta(2, "p", "o"), delta(3, "p", "ne"), relayed];
    expect(planCompaction(events).at(-1)).toEqual({
      fromSeq: 5,
      toSeq: 5,
      envelope: env(5, "result", { status: "success", sessionId: "s" }),
    });
    expect(
      planCompaction([
        env(1, "turn.accepted", {}),
        delta(2, "p", "one"),
        env(5, "result", { finalText: "other", status: "success" }),
      ]),
    ).toEqual([]);
  });

  it("is idempotent: a compacted turn plans nothing", () => {
    const events = [
      env(1, "turn.accepted", {}),
      whole(2, "p", "a"),
      delta(3, "p", "b"),
      delta(4, "p", "c"),
      env(5, "turn.completed", { turnId: "t", status: "completed", result: { text: "abc" } }),
    ];
    const once = applyRuns(events, planCompaction(events));
    expect(once).toHaveLength(3);
    expect(planCompaction(once)).toEqual([]);
  });
});

// ------------------------------------------------------------------ the property

type Op =
  | { kind: "delta"; part: number; text: string }
  | { kind: "whole"; part: number; text: string }
  | { kind: "other" }
  | { kind: "foreign" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("delta" as const),
      part: fc.integer({ min: 0, max: 2 }),
      text: fc.string({ maxLength: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("whole" as const),
      part: fc.integer({ min: 0, max: 2 }),
      text: fc.string({ maxLength: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "other" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "foreign" as const }) },
);

const PART_TYPES = ["text", "reasoning", "text"];

/** A log: turn t's events (a foreign op is another turn's event between them), its end, then turn u's. */
function buildLog(ops: Op[], after: Op[], withResult: boolean): EventEnvelope[] {
  const log: EventEnvelope[] = [];
  let seq = 0;
  const push = (e: (s: number) => EventEnvelope) => log.push(e(++seq));
  const emit = (op: Op, turnId: string) => {
    if (op.kind === "foreign") push((s) => env(s, "turn.queued", { turnId: "q" }, "q", null));
    else if (op.kind === "other")
      push((s) => env(s, "status", { status: "busy" }, turnId, turnId === "t" ? "e" : "e2"));
    else {
      const part = { id: `${turnId}-p${op.part}`, type: PART_TYPES[op.part]!, messageID: "m" };
      const exe = turnId === "t" ? "e" : "e2";
      push((s) =>
        env(
          s,
          "message.part.updated",
          op.kind === "delta" ? { part, delta: op.text } : { part: { ...part, text: op.text } },
          turnId,
          exe,
        ),
      );
    }
  };
  push((s) => env(s, "turn.accepted", { turnId: "t" }));
  for (const op of ops) emit(op, "t");
  const texts = turnParts({ events: log.filter((e) => e.turnId === "t"), interactions: [] }).flatMap((p) =>
    p.type === "text" && p.text ? [p.text] : [],
  );
  push((s) =>
    env(s, "turn.completed", {
      turnId: "t",
      status: "completed",
      ...(withResult ? { result: { text: texts.join("\n\n") } } : {}),
    }),
  );
  for (const op of after) emit(op, "u");
  return log;
}

/** Compacts one turn of the log as the store does: its events, the seqs of the others in its span. */
function compactT(log: EventEnvelope[], turnId = "t"): EventEnvelope[] {
  const events = log.filter((e) => e.turnId === turnId);
  if (events.length === 0) return log;
  const first = events[0]!.seq;
  const last = events.at(-1)!.seq;
  const others = log.filter((e) => e.turnId !== turnId && e.seq >= first && e.seq <= last).map((e) => e.seq);
  const plan = planCompaction(events, others);
  const kept = applyRuns(log, plan);
  return kept;
}

/** What a reader holds: each part's text, from applying events in order. */
function apply(
  held: Map<string, string | undefined>,
  events: Iterable<EventEnvelope>,
): Map<string, string | undefined> {
  const out = new Map(held);
  for (const e of events) {
    if (e.type !== "message.part.updated") continue;
    const part = e.data.part as Record<string, unknown>;
    const id = part.id as string;
    out.set(
      id,
      applyPartUpdate(out.get(id), { part, ...(typeof e.data.delta === "string" ? { delta: e.data.delta } : {}) }),
    );
  }
  return out;
}

/** The replay after `cursor` as a reader gets it: encoded as the server does, decoded with public/wire/frames.js. */
function replay(log: EventEnvelope[], cursor: number): EventEnvelope[] {
  const decoder = frameDecoder();
  let context = null;
  const out: EventEnvelope[] = [];
  for (const e of log.filter((x) => x.seq > cursor)) {
    const encoded = encodeEvent(context, { seq: e.seq, type: e.type, envelope: JSON.stringify(e) });
    context = encoded.context;
    const decoded = decoder.decode(encoded.frame);
    if (decoded) out.push(decoded as EventEnvelope);
  }
  return out;
}

const textOf = (log: EventEnvelope[], turnId: string) =>
  turnParts({ events: log.filter((e) => e.turnId === turnId), interactions: [] }).map((p) => [
    p.id,
    (p as { text?: string }).text,
  ]);

describe("property: a cursor anywhere, before or after compaction, rebuilds the transcript's text", () => {
  it("any part updates and other events, any cursor: the text held at the cursor plus the compacted log's replay after it is the transcript's", () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 40 }),
        fc.array(opArb, { maxLength: 10 }),
        fc.boolean(),
        fc.nat(),
        fc.boolean(),
        fc.boolean(),
        (ops, after, withResult, pick, heldFromCompacted, alsoU) => {
          const log = buildLog(ops, after, withResult);
          // Compaction at t's end, and (any later point) at u's too.
          const compacted = alsoU ? compactT(compactT(log), "u") : compactT(log);
          // The transcript, from the whole log as it was streamed: what a reader from the start holds.
          const truth = apply(new Map(), log);
          // Compaction keeps the transcript's parts and text (GET …/messages rebuilds from the log).
          expect(textOf(compacted, "t")).toEqual(textOf(log, "t"));
          expect(textOf(compacted, "u")).toEqual(textOf(log, "u"));
          expect(apply(new Map(), compacted)).toEqual(truth);
          // A cursor: any seq (of the log a reader followed live, or one the compacted log still holds).
          const seqs = [0, ...(heldFromCompacted ? compacted : log).map((e) => e.seq)];
          const cursor = seqs[pick % seqs.length]!;
          const source = heldFromCompacted ? compacted : log;
          const held = apply(
            new Map(),
            source.filter((e) => e.seq <= cursor),
          );
          const rebuilt = apply(held, replay(compacted, cursor));
          expect(rebuilt).toEqual(truth);
          // Idempotent: compacting again changes nothing.
          expect(compactT(compacted)).toEqual(compacted);
        },
      ),
      { numRuns: 400 },
    );
  });
});
