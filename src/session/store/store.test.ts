import { env, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventLog, storeWrites } from "../event-log";
import { migrateSessionSchema } from "./schema";
import { SessionStore } from "./store";

/** A fresh store with one turn `t` of execution `e`, in a Durable Object of its own. */
async function withStore(name: string, fn: (store: SessionStore) => void): Promise<void> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`store-${name}-${crypto.randomUUID()}`));
  await runInDurableObject(stub, (_instance, state) => {
    const store = new SessionStore(state.storage.sql);
    store.insertPendingTurn({ turnId: "t", requestDigest: "d", request: { message: "hi" }, executionId: "e", now: 0 });
    fn(store);
  });
}

/** Logs a frame as the reader does once it was admitted: under its upstream id. */
function logFrame(store: SessionStore, upstreamId: string): void {
  store.appendEvent({ turnId: "t", executionId: "e", upstreamId, type: "message.part.updated", data: {}, now: 0 });
}

describe("upstream de-duplication: one rule, SessionStore.admitUpstream", () => {
  it("numeric ids come in order: one at or below the newest logged id is a repeat", async () => {
    await withStore("numeric", (store) => {
      expect(store.admitUpstream("t", "e", "5")).toBe(true);
      logFrame(store, "5");
      expect(store.admitUpstream("t", "e", "5")).toBe(false);
      expect(store.admitUpstream("t", "e", "4")).toBe(false);
      expect(store.admitUpstream("t", "e", "6")).toBe(true);
      // Compared as numbers, not as text ("10" sorts before "6" as text).
      logFrame(store, "6");
      expect(store.admitUpstream("t", "e", "10")).toBe(true);
      // A numeric frame costs no row of its own: the log is its cursor.
      const before = store.rowsWritten;
      expect(store.admitUpstream("t", "e", "11")).toBe(true);
      expect(store.rowsWritten).toBe(before);
    });
  });

  it("other ids are remembered one by one, per execution, the newest being the turn's cursor", async () => {
    await withStore("opaque", (store) => {
      expect(store.admitUpstream("t", "e", "evt-b")).toBe(true);
      expect(store.admitUpstream("t", "e", "evt-a")).toBe(true);
      expect(store.cursorOf("t", "e")).toBe("evt-a");
      expect(store.admitUpstream("t", "e", "evt-b")).toBe(false);
      expect(store.admitUpstream("t", "e", "evt-a")).toBe(false);
      expect(store.cursorOf("t", "e")).toBe("evt-a");
      // Another execution's frames are not repeats of these.
      expect(store.admitUpstream("t", "e2", "evt-b")).toBe(true);
      // Once the run's stream is over its keys are forgotten.
      store.forgetSeen("e");
      expect(store.admitUpstream("t", "e", "evt-b")).toBe(true);
    });
  });

  it("a stopped reader's held cursor and seen ids are let go from memory, and read back from storage on next use", async () => {
    await withStore("release", (store) => {
      expect(store.admitUpstream("t", "e", "evt-a")).toBe(true);
      expect(store.admitUpstream("t", "e", "evt-b")).toBe(true);
      store.settleAdmissions();
      // Storage changed behind the store's back: what memory holds still answers.
      // biome-ignore lint/complexity/useLiteralKeys: the store's handle is private; a test reaches it by name
      store["sql"].exec("UPDATE turns SET upstream_cursor = 'evt-z' WHERE turn_id = 't'");
      expect(store.cursorOf("t", "e")).toBe("evt-b");
      store.releaseHeld("e");
      // Let go: storage answers (the cursor), and the seen ids it holds are repeats still.
      expect(store.cursorOf("t", "e")).toBe("evt-z");
      expect(store.admitUpstream("t", "e", "evt-a")).toBe(false);
      expect(store.admitUpstream("t", "e", "evt-c")).toBe(true);
    });
  });

  it("a child task's update is admitted once per sourceEventId, whatever upstream id carried it, and stays known from storage", async () => {
    await withStore("child", (store) => {
      expect(store.admitUpstream("t", "e", "4")).toBe(true);
      expect(store.admitChildUpdate("t", "e", "c1#1")).toBe(true);
      // A copy in a frame of its own: a new upstream id, the same update.
      expect(store.admitUpstream("t", "e", "9")).toBe(true);
      expect(store.admitChildUpdate("t", "e", "c1#1")).toBe(false);
      expect(store.admitChildUpdate("t", "e", "c1#2")).toBe(true);
      // An upstream id that spells the same text is not one of these keys (an SSE id has no line break).
      expect(store.admitUpstream("t", "e", "child-task:c1#3")).toBe(true);
      expect(store.admitChildUpdate("t", "e", "c1#3")).toBe(true);
      store.settleAdmissions();
      // A new instance (memory let go) reads them back: a copy after a restart is a copy still.
      store.releaseHeld("e");
      expect(store.admitChildUpdate("t", "e", "c1#1")).toBe(false);
      expect(store.admitChildUpdate("t", "e", "c1#2")).toBe(false);
      // Once the run's stream is over they are forgotten with its other keys.
      store.forgetSeen("e");
      expect(store.admitChildUpdate("t", "e", "c1#1")).toBe(true);
    });
  });

  it("a new frame is progress (the reader is no longer lost); a repeat is not", async () => {
    await withStore("lost", (store) => {
      logFrame(store, "3");
      store.markLost("t", 1_000);
      expect(store.admitUpstream("t", "e", "3")).toBe(false);
      expect(store.turn("t")!.lostAt).toBe(1_000);
      expect(store.admitUpstream("t", "e", "4")).toBe(true);
      expect(store.turn("t")!.lostAt).toBeNull();
      store.markLost("t", 2_000);
      expect(store.admitUpstream("t", "e", "evt-x")).toBe(true);
      expect(store.turn("t")!.lostAt).toBeNull();
      store.markLost("t", 3_000);
      expect(store.admitUpstream("t", "e", "evt-x")).toBe(false);
      expect(store.turn("t")!.lostAt).toBe(3_000);
    });
  });
});

describe("ingest batches: held in memory, written with the batch", () => {
  it("a frame costs one statement's row: the cursor, seq, status and lost marker are not read or written per frame", async () => {
    await withStore("one-row", (store) => {
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
        0,
        0,
      );
      for (let i = 1; i <= 3; i++) if (store.admitUpstream("t", "e", String(i))) logFrame(store, String(i));
      const before = store.rowsWritten;
      for (let i = 4; i <= 13; i++) {
        expect(store.turnStatus("t")).toBe("running");
        if (store.admitUpstream("t", "e", String(i))) logFrame(store, String(i));
      }
      expect(store.rowsWritten - before).toBe(10);
      expect(store.lastSeq()).toBe(13);
      expect(store.cursorOf("t", "e")).toBe("13");
    });
  });

  it("property: any split of a frame sequence into commits, with failed commits replayed and new instances between them, stores the same log as one by one", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`store-batches-${crypto.randomUUID()}`));
    await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      let run = 0;
      // Upstream ids: numbers mostly rising (repeats and stale ones among them), or opaque ids repeated.
      const numeric = fc
        .array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 40 })
        .map((ns) => ns.map((n, i) => String(n + i)));
      const opaque = fc.array(fc.constantFrom("a", "b", "c", "d", "e", "f", "g"), { minLength: 1, maxLength: 20 });
      const step = fc.record({ size: fc.integer({ min: 1, max: 6 }), fails: fc.boolean(), restart: fc.boolean() });
      fc.assert(
        fc.property(fc.oneof(numeric, opaque), fc.array(step, { minLength: 1, maxLength: 20 }), (frames, steps) => {
          run++;
          const apply = (store: SessionStore, log: EventLog, executionId: string, batch: string[], fail = false) =>
            log.commit((l) => {
              for (const id of batch) {
                if (store.admitUpstream(`t-${executionId}`, executionId, id))
                  l.append({
                    turnId: `t-${executionId}`,
                    executionId,
                    upstreamId: id,
                    type: "message.part.updated",
                    data: {},
                    now: 0,
                  });
              }
              if (fail) throw new Error("the commit failed");
            });
          const open = () => {
            const store = new SessionStore(sql);
            const log = new EventLog({
              transaction: (fn) => state.storage.transactionSync(fn),
              publish: () => undefined,
              ...storeWrites(() => store),
            });
            return { store, log };
          };
          const logged = (executionId: string) =>
            sql
              .exec<{ upstream_id: string; seq: number }>(
                "SELECT upstream_id, seq FROM events WHERE execution_id = ? ORDER BY seq",
                executionId,
              )
              .toArray();

          // One by one, one instance.
          const one = `one-${run}`;
          let ref = open();
          ref.store.insertPendingTurn({
            turnId: `t-${one}`,
            requestDigest: "d",
            request: { message: "m" },
            executionId: one,
            now: 0,
          });
          for (const id of frames) apply(ref.store, ref.log, one, [id]);

          // In batches of any size; a failed batch is read again from where the store stands, and
          // an instance may be replaced between commits (eviction, crash) reading what storage holds.
          const many = `many-${run}`;
          ref = open();
          ref.store.insertPendingTurn({
            turnId: `t-${many}`,
            requestDigest: "d",
            request: { message: "m" },
            executionId: many,
            now: 0,
          });
          let at = 0;
          for (let i = 0; at < frames.length; i++) {
            const { size, fails, restart } = steps[i % steps.length]!;
            const batch = frames.slice(at, at + size);
            if (fails) expect(() => apply(ref.store, ref.log, many, batch, true)).toThrow("the commit failed");
            if (restart) ref = open();
            apply(ref.store, ref.log, many, batch);
            at += size;
          }
          const a = logged(one);
          const b = logged(many);
          expect(b.map((r) => r.upstream_id)).toEqual(a.map((r) => r.upstream_id));
          // Seqs strictly increase by one within each commit's run and never repeat.
          expect(new Set(b.map((r) => r.seq)).size).toBe(b.length);
          expect(ref.store.lastSeq()).toBe(sql.exec<{ n: number }>("SELECT MAX(seq) AS n FROM events").one().n);
          expect(ref.store.cursorOf(`t-${many}`, many)).toBe(open().store.cursorOf(`t-${many}`, many));
        }),
        { numRuns: 60 },
      );
    });
  });
});

describe("queued turns in storage (schema 10)", () => {
  it("a schema-9 database gains the queue table, its turns kept; queued turns keep their order, their send's digest through an edit, and why they ended", async () => {
    await withStore("queue", (store) => {
      // As a database written before schema 10: no queue table, version 9.
      const sql = (store as unknown as { sql: Pick<SqlStorage, "exec"> }).sql;
      sql.exec("DROP TABLE queued_turns");
      sql.exec("UPDATE schema_version SET version = 9");
      const reopened = new SessionStore(sql as SqlStorage);
      expect(reopened.turn("t")?.request.message).toBe("hi");
      expect(sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version).toBe(15);

      reopened.insertQueuedTurn({
        turnId: "q1",
        requestDigest: "d1",
        request: { message: "one" },
        executionId: "e1",
        now: 1,
      });
      reopened.insertQueuedTurn({
        turnId: "q2",
        requestDigest: "d2",
        request: { message: "two", model: "m" },
        executionId: "e2",
        now: 2,
      });
      reopened.setQueuedRequest("q2", { message: "two, edited", model: "m" }, 3);
      expect(reopened.waitingTurns().map((q) => [q.turnId, q.request.message, q.requestDigest])).toEqual([
        ["q1", "one", "d1"],
        ["q2", "two, edited", "d2"],
      ]);
      reopened.setQueuedState("q1", "removed", 4, { code: "removed", message: "removed" });
      expect(reopened.waitingTurns().map((q) => q.turnId)).toEqual(["q2"]);
      expect(reopened.queuedTurn("q1")).toMatchObject({ state: "removed", error: { code: "removed" }, updatedAt: 4 });
      reopened.setQueuedState("q2", "starting", 5);
      expect(reopened.waitingTurns().map((q) => q.state)).toEqual(["starting"]);
      reopened.setQueuedState("q2", "started", 6);
      expect(reopened.waitingTurns()).toEqual([]);
    });
  });
});

describe("a turn's record in rows written (schema 11)", () => {
  it("a turn costs two rows to insert and one to start; a meta value written again unchanged costs none; a schema-10 database keeps its turns", async () => {
    await withStore("turn-rows", (store) => {
      const ref = {
        runId: "e2",
        provider: "p",
        environmentId: "env",
        sessionId: "s",
        executionId: "e2",
        requestDigest: `sha256:${"0".repeat(64)}`,
      };
      let before = store.rowsWritten;
      store.insertPendingTurn({
        turnId: "t2",
        requestDigest: "d2",
        request: { message: "two" },
        executionId: "e2",
        now: 1,
      });
      expect(store.rowsWritten - before).toBe(2);
      before = store.rowsWritten;
      store.markRunning("t2", ref, 0, 2);
      expect(store.rowsWritten - before).toBe(1);
      store.setMeta("environmentId", "env");
      before = store.rowsWritten;
      store.setMeta("environmentId", "env");
      expect(store.rowsWritten - before).toBe(0);
      store.setMeta("environmentId", "env-2");
      expect(store.rowsWritten - before).toBe(1);
      expect(store.getMeta("environmentId")).toBe("env-2");

      // As written before schema 11: the turns table with its UNIQUE columns.
      const sql = (store as unknown as { sql: Pick<SqlStorage, "exec"> }).sql;
      sql.exec(`CREATE TABLE turns_old AS SELECT * FROM turns; DROP TABLE turns;
        CREATE TABLE turns (turn_id TEXT PRIMARY KEY, ordinal INTEGER NOT NULL UNIQUE, request_digest TEXT NOT NULL, request TEXT NOT NULL, execution_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, control_ref TEXT, upstream_cursor TEXT, result_text TEXT, error TEXT, usage TEXT, accepted_seq INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, completed_at INTEGER, cancel_reason TEXT, lost_at INTEGER, parts TEXT, parent_turn_id TEXT, branch INTEGER NOT NULL DEFAULT 0);
        INSERT INTO turns SELECT turn_id, ordinal, request_digest, request, execution_id, status, control_ref, upstream_cursor, result_text, error, usage, accepted_seq, created_at, updated_at, completed_at, cancel_reason, lost_at, parts, parent_turn_id, branch FROM turns_old; DROP TABLE turns_old;
        UPDATE schema_version SET version = 10;`);
      const reopened = new SessionStore(sql as SqlStorage);
      expect(reopened.turns().map((t) => [t.turnId, t.ordinal, t.status, t.parentTurnId])).toEqual([
        ["t", 1, "pending", null],
        ["t2", 2, "running", "t"],
      ]);
      expect(sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version).toBe(15);
      before = reopened.rowsWritten;
      reopened.insertPendingTurn({
        turnId: "t3",
        requestDigest: "d3",
        request: { message: "three" },
        executionId: "e3",
        now: 3,
      });
      expect(reopened.rowsWritten - before).toBe(2);
    });
  });
});

describe("when a turn was sent and when it started (schema 13)", () => {
  it("a turn started from the queue keeps its send as createdAt; a schema-12 database's queued turns get theirs back, the others unchanged", async () => {
    await withStore("started-at", (store) => {
      store.insertQueuedTurn({
        turnId: "q",
        requestDigest: "dq",
        request: { message: "queued" },
        executionId: "eq",
        now: 10,
      });
      store.insertPendingTurn({
        turnId: "q",
        requestDigest: "dq",
        request: { message: "queued" },
        executionId: "eq",
        now: 50,
        sentAt: 10,
      });
      store.insertPendingTurn({
        turnId: "t2",
        requestDigest: "d2",
        request: { message: "two" },
        executionId: "e2",
        now: 60,
      });
      expect([store.turn("q")!.createdAt, store.turn("q")!.startedAt]).toEqual([10, 50]);
      expect([store.turn("t2")!.createdAt, store.turn("t2")!.startedAt]).toEqual([60, 60]);

      // As a schema-12 database wrote them: no started_at, a queued turn's start as its created_at.
      const sql = (store as unknown as { sql: Pick<SqlStorage, "exec"> }).sql;
      sql.exec(
        "ALTER TABLE turns DROP COLUMN started_at; UPDATE turns SET created_at = 50 WHERE turn_id = 'q'; UPDATE schema_version SET version = 12;",
      );
      const reopened = new SessionStore(sql as SqlStorage);
      expect(["t", "q", "t2"].map((id) => [reopened.turn(id)!.createdAt, reopened.turn(id)!.startedAt])).toEqual([
        [0, 0],
        [10, 50],
        [60, 60],
      ]);
    });
  });
});

/** A database's schema as SQLite describes it: each table's columns, its indexes and whether it has rowids. */
function schemaOf(sql: SqlStorage): Record<string, unknown> {
  const tables = sql
    .exec<{ name: string; sql: string }>(
      "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
    )
    .toArray();
  return Object.fromEntries(
    tables.map((t) => [
      t.name,
      {
        withoutRowid: /WITHOUT ROWID\s*$/i.test(t.sql),
        columns: sql.exec(`PRAGMA table_xinfo("${t.name}")`).toArray(),
        indexes: sql
          .exec<{ name: string; unique: number; origin: string; partial: number }>(`PRAGMA index_list("${t.name}")`)
          .toArray()
          .map((i) => ({
            unique: i.unique,
            origin: i.origin,
            partial: i.partial,
            // An index the table's constraints made is named by SQLite after the table's name when it was made.
            name: i.origin === "c" ? i.name : i.origin,
            columns: sql
              .exec<{ name: string }>(`PRAGMA index_info("${i.name}")`)
              .toArray()
              .map((c) => c.name),
          }))
          .sort((a, b) => `${a.name}${a.columns}`.localeCompare(`${b.name}${b.columns}`)),
      },
    ]),
  );
}

describe("a new conversation's schema", () => {
  it("is written at once, and is the schema every migration step builds: the same tables, columns, indexes and version", async () => {
    const built = async (fresh: boolean) =>
      runInDurableObject(
        env.SESSIONS.get(env.SESSIONS.idFromName(`schema-${fresh}-${crypto.randomUUID()}`)),
        (_instance, state) => {
          let statements = 0;
          const sql = state.storage.sql;
          migrateSessionSchema(
            {
              exec: <T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]) => {
                statements++;
                return sql.exec<T>(query, ...bindings);
              },
            },
            { fresh },
          );
          return {
            statements,
            schema: schemaOf(sql),
            version: sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version,
          };
        },
      );
    const stepwise = await built(false);
    const fresh = await built(true);
    expect(Object.keys(stepwise.schema)).toContain("turns");
    expect(fresh.schema).toEqual(stepwise.schema);
    expect(fresh.version).toBe(stepwise.version);
    // One statement list and its version, not every step's statements.
    expect(fresh.statements).toBeLessThanOrEqual(3);
    expect(stepwise.statements).toBeGreaterThan(20);
  });
});
