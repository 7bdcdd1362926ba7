import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { SessionStore } from "./session-store";

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

describe("queued turns in storage (schema 10)", () => {
  it("a schema-9 database gains the queue table, its turns kept; queued turns keep their order, their send's digest through an edit, and why they ended", async () => {
    await withStore("queue", (store) => {
      // As a database written before schema 10: no queue table, version 9.
      const sql = (store as unknown as { sql: Pick<SqlStorage, "exec"> }).sql;
      sql.exec("DROP TABLE queued_turns");
      sql.exec("UPDATE schema_version SET version = 9");
      const reopened = new SessionStore(sql as SqlStorage);
      expect(reopened.turn("t")?.request.message).toBe("hi");
      expect(sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version).toBe(10);

      reopened.insertQueuedTurn({ turnId: "q1", requestDigest: "d1", request: { message: "one" }, executionId: "e1", now: 1 });
      reopened.insertQueuedTurn({ turnId: "q2", requestDigest: "d2", request: { message: "two", model: "m" }, executionId: "e2", now: 2 });
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
