import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { EventLog, storeWrites } from "./event-log";
import { SessionStore } from "./store/store";
import { turnParts, withAnswer } from "./transcript";
import { compactTurn, TurnEnd, type TurnEndDeps } from "./turn-end";

async function withStore(name: string, fn: (store: SessionStore, state: DurableObjectState) => void): Promise<void> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`compaction-${name}-${crypto.randomUUID()}`));
  await runInDurableObject(stub, (_instance, state) => fn(new SessionStore(state.storage.sql), state));
}

function turnWithDeltas(store: SessionStore, turnId: string, words: number): void {
  store.insertPendingTurn({
    turnId,
    requestDigest: `d-${turnId}`,
    request: { message: "hi" },
    executionId: `e-${turnId}`,
    now: 0,
  });
  const base = { turnId, executionId: `e-${turnId}`, now: 1 };
  store.appendEvent({ ...base, type: "turn.accepted", data: { turnId } });
  for (let i = 0; i < words; i++) {
    store.appendEvent({
      ...base,
      upstreamId: String(i + 1),
      type: "message.part.updated",
      data: {
        part: { id: `${turnId}-p`, type: "text", ...(i === 0 ? { text: "w0 " } : {}) },
        ...(i > 0 ? { delta: `w${i} ` } : {}),
      },
    });
  }
}

describe("compacting a finished turn in the store", () => {
  it("replaces the run by one row at its last seq (each row of it rewritten once: the last updated, the rest deleted), keeps the upstream cursor, keeps the answer once, and does it once", async () => {
    await withStore("once", (store) => {
      turnWithDeltas(store, "t", 50);
      const answer = Array.from({ length: 50 }, (_, i) => `w${i} `).join("");
      store.finishTurn("t", { status: "completed", resultText: answer, now: 2 });
      store.appendEvent({
        turnId: "t",
        executionId: "e-t",
        type: "turn.completed",
        data: { turnId: "t", status: "completed", result: { text: answer } },
        now: 2,
      });
      const before = store.rowsWritten;
      compactTurn(store, "t");
      // The run's 50 rows: 49 deleted, the last rewritten; the terminal event rewritten in place; the turn's row marked.
      expect(store.rowsWritten - before).toBe(52);
      const events = store.eventsOfTurn("t");
      expect(events.map((e) => e.seq)).toEqual([1, 51, 52]);
      expect(events[1]!.data).toEqual({ part: { id: "t-p", type: "text", text: answer } });
      expect(events[2]!.data).toEqual({ turnId: "t", status: "completed" });
      expect(store.cursorOf("t", "e-t")).toBe("50");
      expect(store.lastSeq()).toBe(52);
      // The answer is the message's text: the turn's row holds no copy of it, and reads it back from the parts.
      expect(store.turn("t")!).toMatchObject({ resultText: null, answerInParts: true });
      expect(withAnswer(store, store.turn("t")!).resultText).toBe(answer);
      expect(
        JSON.stringify((store as unknown as { sql: SqlStorage }).sql.exec("SELECT * FROM turns").toArray()),
      ).not.toContain("w49");
      const again = store.rowsWritten;
      compactTurn(store, "t");
      expect(store.rowsWritten).toBe(again);
    });
  });

  it("a part held in chunk rows costs one row written per chunk row to compact, and reads back as the part's whole text", async () => {
    await withStore("chunks", (store, state) => {
      store.insertPendingTurn({
        turnId: "t",
        requestDigest: "d",
        request: { message: "hi" },
        executionId: "e",
        now: 0,
      });
      const log = new EventLog({
        transaction: (fn) => state.storage.transactionSync(fn),
        publish: () => undefined,
        ...storeWrites(() => store),
      });
      log.commit((l) =>
        l.append({ turnId: "t", executionId: "e", type: "turn.accepted", data: { turnId: "t" }, now: 0 }),
      );
      let text = "";
      // 100 words: a tool's update between them splits the part's updates into two runs, each over chunk rows.
      for (let i = 0; i < 100; i++) {
        const word = `w${i} `;
        text += word;
        const update =
          i === 0
            ? { kind: "whole" as const, part: { id: "p", type: "text", text } }
            : { kind: "delta" as const, part: { id: "p", type: "text" }, delta: word };
        if (!store.holdUpdate({ turnId: "t", executionId: "e", upstreamId: String(i + 1), now: 1, ...update })) {
          log.commit(() => undefined);
          store.holdUpdate({ turnId: "t", executionId: "e", upstreamId: String(i + 1), now: 1, ...update });
        }
        if (i === 49)
          store.holdUpdate({
            kind: "whole",
            turnId: "t",
            executionId: "e",
            part: { id: "tool", type: "tool", state: { status: "completed" } },
            upstreamId: "1000",
            now: 1,
          });
      }
      store.finishTurn("t", { status: "completed", resultText: text, now: 2 });
      log.commit((l) =>
        l.append({
          turnId: "t",
          executionId: "e",
          type: "turn.completed",
          data: { turnId: "t", status: "completed", result: { text } },
          now: 2,
        }),
      );
      const rows = store.logSize().rows;
      const before = store.rowsWritten;
      const chunks = new Set(
        state.storage.sql
          .exec<{ envelope: string }>("SELECT envelope FROM events WHERE type = 'message.part.deltas'")
          .toArray()
          .map((r) => r.envelope),
      );
      expect(chunks.size).toBeGreaterThan(0);
      const parse = vi.spyOn(JSON, "parse");
      try {
        compactTurn(store, "t");
        // Each chunk row read (parsed and checked) once: for the turn's events and for their compaction.
        const parsed = parse.mock.calls.filter(([text]) => chunks.has(text)).map(([text]) => text);
        expect(parsed.length).toBe(chunks.size);
        expect(new Set(parsed).size).toBe(chunks.size);
      } finally {
        parse.mockRestore();
      }
      // Each row holding an event of a run is rewritten (or goes) once; the end rewritten in place; the turn's row marked.
      expect(store.rowsWritten - before).toBe(rows - 2 + 1 + 1);
      const events = store.eventsOfTurn("t");
      expect(events.map((e) => e.type)).toEqual([
        "turn.accepted",
        "message.part.updated",
        "message.part.updated",
        "message.part.updated",
        "turn.completed",
      ]);
      expect(events[3]!.data).toEqual({ part: { id: "p", type: "text", text } });
      expect(events[2]!.data).toEqual({ part: { id: "tool", type: "tool", state: { status: "completed" } } });
    });
  });

  it("an end rewritten less its copy of the answer keeps every other field byte for byte", async () => {
    await withStore("faithful", (store) => {
      turnWithDeltas(store, "t", 3);
      store.finishTurn("t", { status: "completed", resultText: "w0 w1 w2 ", now: 2 });
      // The receipt's usage in the order the provider gave it (not the schema's order).
      const usage = { outputTokens: 2, inputTokens: 5, totalTokens: 7 } as unknown as {
        inputTokens: number;
        outputTokens: number;
      };
      const result = store.appendEvent({
        turnId: "t",
        executionId: "e-t",
        type: "result",
        data: { finalText: "w0 w1 w2 ", status: "success" },
        usage,
        usageMode: "cumulative",
        now: 2,
      });
      compactTurn(store, "t");
      const kept = store.storedEvent(result.seq)!;
      const { finalText: _dropped, ...data } = (JSON.parse(result.envelope) as { data: Record<string, unknown> }).data;
      expect(JSON.stringify(kept)).toBe(JSON.stringify({ ...JSON.parse(result.envelope), data }));
    });
  });

  it("a turn a crash left uncompacted (ended, its row not marked) is compacted by the next start's compactEnded, and marked", async () => {
    await withStore("pending", (store, state) => {
      turnWithDeltas(store, "t", 20);
      turnWithDeltas(store, "u", 20);
      // Both ended; the commit that compacts them never ran.
      store.finishTurn("t", { status: "completed", now: 2 });
      store.finishTurn("u", { status: "failed", error: { code: "turn_timeout", message: "x" }, now: 3 });
      expect(store.endedUncompacted()).toEqual(["t", "u"]);
      const published: unknown[] = [];
      const log = new EventLog({
        transaction: (fn) => state.storage.transactionSync(fn),
        publish: (row) => published.push(row),
        ...storeWrites(() => store),
      });
      // Only the store and the log are needed to compact (the rest is the turn's end itself).
      const end = new TurnEnd({ store: () => store, log } as unknown as TurnEndDeps);
      end.compactEnded();
      expect(store.eventsOfTurn("t")).toHaveLength(2);
      expect(store.eventsOfTurn("u")).toHaveLength(2);
      expect(store.endedUncompacted()).toEqual([]);
      // 20 rows each (19 deleted, the last rewritten), and each turn's row marked.
      expect(store.compactionRowsWritten).toBe(42);
      // Viewers are sent nothing: they hold the turns already.
      expect(published).toEqual([]);
      const rows = store.rowsWritten;
      end.compactEnded();
      expect(store.rowsWritten).toBe(rows);
    });
  });

  it("keeps a result that is not the message's text, and no result where there was none", async () => {
    await withStore("other-result", (store) => {
      turnWithDeltas(store, "t", 3);
      store.finishTurn("t", { status: "completed", resultText: "a summary, not the message", now: 2 });
      compactTurn(store, "t");
      expect(store.turn("t")!).toMatchObject({ resultText: "a summary, not the message", answerInParts: false });
      expect(store.endedUncompacted()).toEqual([]);
      // A failed turn that streamed text has no result: none is made up from its parts.
      turnWithDeltas(store, "u", 3);
      store.finishTurn("u", { status: "failed", error: { code: "turn_timeout", message: "x" }, now: 3 });
      compactTurn(store, "u");
      expect(withAnswer(store, store.turn("u")!)).toMatchObject({ resultText: null, answerInParts: false });
    });
  });

  it("an answer held in the parts reads back after the log was trimmed into its turn (from the parts kept on it)", async () => {
    await withStore("trimmed-answer", (store) => {
      turnWithDeltas(store, "t", 10);
      const answer = Array.from({ length: 10 }, (_, i) => `w${i} `).join("");
      store.finishTurn("t", { status: "completed", resultText: answer, now: 2 });
      compactTurn(store, "t");
      store.keepParts("t", turnParts({ events: store.eventsOfTurn("t"), interactions: [] }));
      store.trimEvents(store.lastSeq());
      expect(store.eventsOfTurn("t")).toEqual([]);
      expect(withAnswer(store, store.turn("t")!).resultText).toBe(answer);
      // A turn trimmed before its compaction: its result goes to the parts kept on it all the same.
      turnWithDeltas(store, "u", 4);
      store.finishTurn("u", { status: "completed", resultText: "w0 w1 w2 w3 ", now: 3 });
      store.keepParts("u", turnParts({ events: store.eventsOfTurn("u"), interactions: [] }));
      store.trimEvents(store.lastSeq());
      compactTurn(store, "u");
      expect(store.turn("u")!).toMatchObject({ resultText: null, answerInParts: true });
      expect(withAnswer(store, store.turn("u")!).resultText).toBe("w0 w1 w2 w3 ");
    });
  });

  it("a schema-11 database: turns it ended are compacted, those its meta mark held are compacted at start, and the mark goes", async () => {
    await withStore("schema-11", (store) => {
      turnWithDeltas(store, "t", 3);
      store.finishTurn("t", { status: "completed", resultText: "w0 w1 w2 ", now: 2 });
      turnWithDeltas(store, "u", 3);
      store.finishTurn("u", { status: "completed", resultText: "u's", now: 3 });
      const sql = (store as unknown as { sql: SqlStorage }).sql;
      // As schema 11 stored them: no mark on the row; the turns still to compact in meta.
      sql.exec(`CREATE TABLE turns_old AS SELECT * FROM turns; DROP TABLE turns;
        CREATE TABLE turns AS SELECT turn_id, ordinal, request_digest, request, execution_id, status, control_ref, upstream_cursor, result_text, error, usage, accepted_seq, created_at, updated_at, completed_at, cancel_reason, lost_at, parts, parent_turn_id, branch FROM turns_old; DROP TABLE turns_old;
        INSERT INTO meta (key, value) VALUES ('compactPending', '["u"]');
        UPDATE schema_version SET version = 11;`);
      const reopened = new SessionStore(sql);
      expect(reopened.endedUncompacted()).toEqual(["u"]);
      expect(reopened.turn("t")!).toMatchObject({ resultText: "w0 w1 w2 ", answerInParts: false });
      expect(sql.exec("SELECT key FROM meta WHERE key = 'compactPending'").toArray()).toEqual([]);
    });
  });

  it("leaves a running turn and a turn the trim cut into as they are", async () => {
    await withStore("skip", (store) => {
      turnWithDeltas(store, "t", 5);
      compactTurn(store, "t");
      expect(store.eventsOfTurn("t")).toHaveLength(6);
      store.finishTurn("t", { status: "completed", now: 2 });
      store.keepParts("t", []);
      compactTurn(store, "t");
      expect(store.eventsOfTurn("t")).toHaveLength(6);
    });
  });

  it("a cursor inside a compacted run is held; one below what trimming removed is not", async () => {
    await withStore("cursor", (store) => {
      turnWithDeltas(store, "t", 10);
      store.finishTurn("t", { status: "completed", now: 2 });
      compactTurn(store, "t");
      expect(store.eventsOfTurn("t").map((e) => e.seq)).toEqual([1, 11]);
      store.trimEvents(1);
      // The oldest retained event is 11; cursors 1..10 are held (compacted, not trimmed).
      expect(store.firstRetainedSeq()).toBe(11);
      expect(store.lowestHeldCursor()).toBe(1);
    });
  });
});
