import { env, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventLog, storeWrites } from "../event-log";
import { TAIL_MAX_DELTAS } from "./held-tail";
import { encodeChunk, expandChunk, updateRow } from "./log-chunks";
import type { EventRow } from "./records";
import { SessionStore } from "./store";

const PART = { id: "p1", type: "text" };

/** A store with a running turn `t` (execution `e`) whose part p1 was logged, and a log over it, in a Durable Object of its own. */
async function withLog(
  name: string,
  fn: (store: SessionStore, log: EventLog, published: EventRow[], state: DurableObjectState) => void,
): Promise<void> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`tail-${name}-${crypto.randomUUID()}`));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new SessionStore(state.storage.sql);
    const published: EventRow[] = [];
    const log = new EventLog({
      transaction: (f) => state.storage.transactionSync(f),
      publish: (row) => void published.push(row),
      ...storeWrites(() => store),
    });
    store.insertPendingTurn({ turnId: "t", requestDigest: "d", request: { message: "hi" }, executionId: "e", now: 0 });
    log.commit((l) =>
      l.append({
        turnId: "t",
        executionId: "e",
        upstreamId: "1",
        type: "message.part.updated",
        data: { part: { ...PART, text: "a" } },
        now: 0,
      }),
    );
    fn(store, log, published, state);
  });
}

function hold(store: SessionStore, upstreamId: number, delta: string, now = 1000 + upstreamId): EventRow | null {
  return store.holdUpdate({
    kind: "delta",
    turnId: "t",
    executionId: "e",
    part: PART,
    delta,
    upstreamId: String(upstreamId),
    now,
  });
}

/** The log as a reader replaying from `after` gets it, page by page. */
function replay(store: SessionStore, after: number, pageSize = 3): EventRow[] {
  const out: EventRow[] = [];
  for (;;) {
    const page = store.eventsAfter(out.at(-1)?.seq ?? after, pageSize);
    out.push(...page);
    if (page.length < pageSize) return out;
  }
}

describe("chunk rows", () => {
  it("read back as the rows the log would have stored for each update alone, key for key", () => {
    const owner = { turnId: "t", executionId: "e" };
    const tool = { id: "tool-1", type: "tool", state: { status: "running" } };
    const held = [
      { seq: 6, atMs: 990, whole: { ...PART, text: "zero " } },
      { seq: 7, atMs: 1_000, part: PART, delta: "one " },
      { seq: 8, atMs: 1_040, part: PART, delta: "two " },
      { seq: 9, atMs: 1_039, whole: tool },
      { seq: 10, atMs: 1_050, part: PART, delta: 'é"\n' },
      { seq: 11, atMs: 1_060, part: { ...PART, time: { start: 1 } }, delta: "three" },
    ];
    const rows = held.map((h) => updateRow(owner, h));
    expect(expandChunk(encodeChunk(owner, held))).toEqual(rows);
    // Any run of consecutive updates, from any of them.
    for (let from = 0; from < held.length; from++)
      expect(expandChunk(encodeChunk(owner, held.slice(from)))).toEqual(rows.slice(from));
    expect(JSON.parse(rows[1]!.envelope)).toEqual({
      seq: 7,
      turnId: "t",
      executionId: "e",
      type: "message.part.updated",
      data: { part: PART, delta: "one " },
      at: new Date(1_000).toISOString(),
    });
    expect(JSON.parse(rows[3]!.envelope).data).toEqual({ part: tool });
    // A delta names its part once, where it differs from the update's before it.
    expect(encodeChunk(owner, held).length).toBeLessThan(rows.reduce((n, r) => n + r.envelope.length, 0) / 2);
    expect(() => encodeChunk(owner, [held[0]!, held[2]!])).toThrow(/consecutive/);
  });
});

describe("the held tail", () => {
  it("deltas are readable at once, under the next seqs, and stored by the next commit in one row written", async () => {
    await withLog("basic", (store, log) => {
      const rows = [hold(store, 2, "b"), hold(store, 3, "c"), hold(store, 4, "d")];
      expect(rows.map((r) => r!.seq)).toEqual([2, 3, 4]);
      expect(store.lastSeq()).toBe(4);
      // Readers see them before they are stored.
      expect(replay(store, 0).map((r) => r.seq)).toEqual([1, 2, 3, 4]);
      expect(store.eventsOfTurn("t").map((e) => e.data.delta ?? null)).toEqual([null, "b", "c", "d"]);
      const before = store.rowsWritten;
      log.commit(() => undefined);
      expect(store.rowsWritten - before).toBe(1);
      expect(store.holdsTail()).toBe(false);
      expect(store.logSize()).toMatchObject({ events: 4, rows: 2 });
      // Read back from storage: the same rows, byte for byte.
      expect(replay(store, 0).slice(1)).toEqual(rows);
      // The run's cursor is the newest stored row's upstream id.
      store.releaseHeld("e");
      expect(store.cursorOf("t", "e")).toBe("4");
    });
  });

  it("a part streamed without interruption grows one chunk row in place: one row written per commit", async () => {
    await withLog("grow", (store, log) => {
      const rows: EventRow[] = [];
      let id = 2;
      for (let commit = 0; commit < 5; commit++) {
        for (let i = 0; i < 4; i++) rows.push(hold(store, id, `w${id} `)!), id++;
        const before = store.rowsWritten;
        log.commit(() => undefined);
        expect(store.rowsWritten - before).toBe(1);
      }
      expect(store.logSize()).toMatchObject({ events: 21, rows: 2 });
      // A cursor anywhere in the chunk gets exactly the deltas after it.
      for (const cursor of [1, 2, 9, 20, 21]) expect(replay(store, cursor)).toEqual(rows.filter((r) => r.seq > cursor));
    });
  });

  it("a part that starts in the tail (its whole update first) is one row for its whole life", async () => {
    await withLog("whole", (store, log) => {
      const first = store.holdUpdate({
        kind: "whole",
        turnId: "t",
        executionId: "e",
        part: { id: "p2", type: "text", text: "Hello" },
        upstreamId: "2",
        now: 5,
      })!;
      expect(JSON.parse(first.envelope).data).toEqual({ part: { id: "p2", type: "text", text: "Hello" } });
      const rows = [first];
      let id = 3;
      for (let commit = 0; commit < 3; commit++) {
        for (let i = 0; i < 5; i++)
          rows.push(
            store.holdUpdate({
              kind: "delta",
              turnId: "t",
              executionId: "e",
              part: { id: "p2", type: "text" },
              delta: ` w${id}`,
              upstreamId: String(id),
              now: 5 + id,
            })!,
          ),
            id++;
        log.commit(() => undefined);
      }
      // The first row (part p1's) and one chunk for all of p2.
      expect(store.logSize()).toMatchObject({ events: 17, rows: 2 });
      for (const cursor of [1, 2, 3, 10, 17]) expect(replay(store, cursor)).toEqual(rows.filter((r) => r.seq > cursor));
      // Another part's updates join the same tail (one execution's updates, in order).
      store.holdUpdate({
        kind: "delta",
        turnId: "t",
        executionId: "e",
        part: { id: "p2", type: "text" },
        delta: "!",
        upstreamId: "99",
        now: 99,
      });
      expect(
        store.holdUpdate({
          kind: "whole",
          turnId: "t",
          executionId: "e",
          part: { id: "tool", type: "tool", state: {} },
          upstreamId: "100",
          now: 100,
        }),
      ).not.toBeNull();
      log.commit(() => undefined);
      expect(store.logSize()).toMatchObject({ events: 19, rows: 2 });
    });
  });

  it("another event stores the tail before itself, so the log's order is the order viewers saw", async () => {
    await withLog("order", (store, log, published) => {
      hold(store, 2, "b");
      hold(store, 3, "c");
      log.commit((l) =>
        l.append({
          turnId: "t",
          executionId: "e",
          upstreamId: "4",
          type: "status",
          data: { status: "processing" },
          now: 5,
        }),
      );
      expect(published.at(-1)!.seq).toBe(4);
      hold(store, 5, "e");
      log.commit(() => undefined);
      expect(replay(store, 0).map((r) => `${r.seq}:${r.type}`)).toEqual([
        "1:message.part.updated",
        "2:message.part.updated",
        "3:message.part.updated",
        "4:status",
        "5:message.part.updated",
      ]);
      // Not grown across the status event: a chunk of its own.
      expect(store.logSize()).toMatchObject({ events: 5, rows: 4 });
    });
  });

  it("a trim that cuts through a chunk row keeps it whole: its events are held, the cursor below them too", async () => {
    await withLog("trim", (store, log) => {
      const rows: EventRow[] = [];
      for (let id = 2; id <= 11; id++) rows.push(hold(store, id, `w${id} `)!);
      log.commit(() => undefined);
      expect(store.trimEvents(5)).toBe(1);
      expect(store.firstRetainedSeq()).toBe(2);
      expect(store.lowestHeldCursor()).toBe(1);
      expect(replay(store, 1)).toEqual(rows);
    });
  });

  it("a commit that rolls back keeps the tail held, and the next one stores it", async () => {
    await withLog("rollback", (store, log) => {
      hold(store, 2, "b");
      expect(() =>
        log.commit(() => {
          store.settleAdmissions();
          throw new Error("the commit failed");
        }),
      ).toThrow();
      expect(store.holdsTail()).toBe(true);
      expect(replay(store, 0).map((r) => r.seq)).toEqual([1, 2]);
      expect(hold(store, 3, "c")!.seq).toBe(3);
      log.commit(() => undefined);
      expect(store.holdsTail()).toBe(false);
      expect(store.eventsOfTurn("t").map((e) => e.data.delta ?? null)).toEqual([null, "b", "c"]);
    });
  });

  it("takes at most TAIL_MAX_DELTAS of one execution: a full tail or another execution's update asks for a commit first", async () => {
    await withLog("bounds", (store, log) => {
      for (let i = 0; i < TAIL_MAX_DELTAS; i++) expect(hold(store, 2 + i, "x")).not.toBeNull();
      expect(hold(store, 2 + TAIL_MAX_DELTAS, "x")).toBeNull();
      log.commit(() => undefined);
      expect(hold(store, 2 + TAIL_MAX_DELTAS, "x")).not.toBeNull();
      expect(
        store.holdUpdate({
          kind: "delta",
          turnId: "t",
          executionId: "e2",
          part: { id: "p2", type: "text" },
          delta: "y",
          upstreamId: "99",
          now: 0,
        }),
      ).toBeNull();
    });
  });

  it("a new instance on a running turn gives no seq a predecessor may have published unstored", async () => {
    await withLog("restart", (store, log, _published, state) => {
      store.markRunning(
        "t",
        {
          runId: "e",
          provider: "p",
          environmentId: "env",
          sessionId: "s",
          executionId: "e",
          requestDigest: `sha256:${"0".repeat(64)}`,
        },
        1,
        0,
      );
      hold(store, 2, "b");
      hold(store, 3, "c");
      // The instance dies here: its tail was published, never stored.
      const next = new SessionStore(state.storage.sql);
      expect(next.lastSeq()).toBe(1 + TAIL_MAX_DELTAS);
      // A cursor a viewer got from the lost tail is not ahead of the log (no stream.reset).
      expect(next.lastSeq()).toBeGreaterThanOrEqual(3);
      // The run's cursor is what was stored: upstream sends the lost frames again.
      expect(next.cursorOf("t", "e")).toBe("1");
      // It too publishes held updates and dies before storing any: the one after it skips past
      // its floor as well, not just past the stored seqs.
      const held = next.holdUpdate({
        kind: "whole",
        turnId: "t",
        executionId: "e",
        part: { ...PART, text: "a b" },
        upstreamId: "2",
        now: 9,
      })!;
      expect(held.seq).toBe(2 + TAIL_MAX_DELTAS);
      for (let i = 0; i < TAIL_MAX_DELTAS - 1; i++)
        expect(
          next.holdUpdate({
            kind: "delta",
            turnId: "t",
            executionId: "e",
            part: PART,
            delta: "x",
            upstreamId: String(3 + i),
            now: 10,
          }),
        ).not.toBeNull();
      const published = next.lastSeq();
      const third = new SessionStore(state.storage.sql);
      expect(third.lastSeq()).toBeGreaterThanOrEqual(published);
      void log;
    });
  });

  it("property: any deltas, commits and cursors: a replay from any cursor is exactly the log's events after it", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(fc.constant("delta" as const), fc.constant("commit" as const), fc.constant("event" as const)),
          { minLength: 1, maxLength: 80 },
        ),
        fc.nat(),
        fc.integer({ min: 1, max: 7 }),
        async (steps, cursorPick, pageSize) => {
          await withLog("property", (store, log) => {
            const expected: Array<{ seq: number; delta: string | null; type: string }> = [
              { seq: 1, delta: null, type: "message.part.updated" },
            ];
            let id = 2;
            for (const step of steps) {
              if (step === "delta") {
                let row = hold(store, id, `w${id} `);
                if (!row) {
                  log.commit(() => undefined);
                  row = hold(store, id, `w${id} `)!;
                }
                expected.push({ seq: row.seq, delta: `w${id} `, type: "message.part.updated" });
              } else if (step === "commit") {
                log.commit(() => undefined);
              } else {
                const row = log.commit((l) =>
                  l.append({ turnId: "t", executionId: "e", upstreamId: String(id), type: "status", data: {}, now: 0 }),
                );
                expected.push({ seq: row.seq, delta: null, type: "status" });
              }
              id++;
            }
            const cursor = cursorPick % (expected.length + 1);
            const got = replay(store, cursor, pageSize).map((r) => ({
              seq: r.seq,
              delta: (JSON.parse(r.envelope) as { data: { delta?: string } }).data.delta ?? null,
              type: r.type,
            }));
            expect(got).toEqual(expected.filter((e) => e.seq > cursor));
            log.commit(() => undefined);
            const stored = replay(store, cursor, pageSize).map((r) => ({
              seq: r.seq,
              delta: (JSON.parse(r.envelope) as { data: { delta?: string } }).data.delta ?? null,
              type: r.type,
            }));
            expect(stored).toEqual(got);
            expect(store.logSize().events).toBe(expected.length);
            expect(store.firstRetainedSeq()).toBe(1);
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});
