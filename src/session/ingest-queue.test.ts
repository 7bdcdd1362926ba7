import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_QUEUED_BYTES, IngestQueue } from "./ingest-queue";

/** A queue whose durability the test releases by hand. */
function manual(apply: (batch: number[]) => number = (b) => b.length) {
  const pending: Array<() => void> = [];
  const batches: number[][] = [];
  const queue = new IngestQueue<number>({
    apply: (batch) => {
      batches.push([...batch]);
      return { admitted: apply(batch), committed: true };
    },
    durable: () => new Promise<void>((resolve) => pending.push(resolve)),
    maxQueued: 3,
  });
  const release = async () => {
    pending.shift()?.();
    // Let the queue's loop run on.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { queue, batches, pending, release };
}

describe("the ingest queue", () => {
  it("commits the first event at once, and what arrives during a commit's durability together in the next", async () => {
    const { queue, batches, release } = manual();
    queue.push(1);
    expect(batches).toEqual([[1]]);
    queue.push(2);
    queue.push(3);
    expect(batches).toEqual([[1]]);
    await release();
    expect(batches).toEqual([[1], [2, 3]]);
    let settled = false;
    void queue.settled().then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    await release();
    expect(settled).toBe(true);
    expect(queue.admitted).toBe(3);
    expect(queue.commits).toBe(2);
  });

  it("says when the reader should wait: too many events behind the commit in flight", async () => {
    const { queue, release } = manual();
    queue.push(1);
    for (const n of [2, 3]) queue.push(n);
    expect(queue.backlogged()).toBe(false);
    queue.push(4);
    expect(queue.backlogged()).toBe(true);
    await release();
    expect(queue.backlogged()).toBe(false);
  });

  it("a batch that fails drops the queue and hands its failure to the reader once", async () => {
    const { queue, batches, release } = manual((batch) => {
      if (batch.includes(3)) throw new Error("rolled back");
      return batch.length;
    });
    queue.push(1);
    queue.push(2);
    queue.push(3);
    await release();
    // Rolled back whole, then applied in halves: 2 commits, 3 fails alone.
    expect(batches).toEqual([[1], [2, 3], [2], [3]]);
    // What committed before the failing event is made durable before the reader hears of it.
    expect(queue.admitted).toBe(2);
    await release();
    expect(() => queue.push(4)).toThrow("rolled back");
    // Handed over once: the reader reconnects and pushes again.
    queue.push(2);
    expect(batches.at(-1)).toEqual([2]);
    await release();
    await expect(queue.settled()).resolves.toBeUndefined();
  });

  it("a waiting reader learns of a failed batch", async () => {
    const { queue, release } = manual(() => {
      throw new Error("rolled back");
    });
    queue.push(1);
    await expect(queue.settled()).rejects.toThrow("rolled back");
    await release();
  });

  it("closed: what is queued is dropped and nothing more is applied", async () => {
    const { queue, batches, release } = manual();
    queue.push(1);
    queue.push(2);
    queue.close();
    queue.push(3);
    await release();
    expect(batches).toEqual([[1]]);
    await expect(queue.settled()).resolves.toBeUndefined();
  });

  it("a failed batch is applied again in halves: the events before the failing one commit, none after it", async () => {
    const { queue, batches, release } = manual((batch) => {
      if (batch.includes(50)) throw new Error("bad frame");
      return batch.length;
    });
    queue.push(1);
    // 2..60 arrive while the first commit becomes durable (a reader past its backlog bound).
    for (let id = 2; id <= 60; id++) queue.push(id);
    let failed: unknown;
    void queue.settled().catch((err) => (failed = err));
    await release();
    const committed = batches.filter((b) => !b.includes(50)).flat();
    expect(committed).toEqual(Array.from({ length: 49 }, (_, i) => i + 1));
    expect(queue.admitted).toBe(49);
    // The failing event was tried alone, and nothing after it was applied.
    expect(batches.at(-1)).toEqual([50]);
    expect(
      batches
        .filter((b) => !b.includes(50))
        .flat()
        .filter((id) => id > 50),
    ).toEqual([]);
    // Few attempts: about two per halving, not one per event.
    expect(batches.length).toBeLessThanOrEqual(2 + 2 * Math.ceil(Math.log2(59)));
    await release();
    expect(String(failed)).toContain("bad frame");
  });

  it("the backlog is bounded by bytes too: large frames make the reader wait, and all are applied once released, in order", async () => {
    const MiB = 1024 * 1024;
    const text = "x".repeat(MiB);
    const pending: Array<() => void> = [];
    const applied: number[] = [];
    const queue = new IngestQueue<{ id: number; text: string }>({
      apply: (batch) => {
        for (const e of batch) applied.push(e.id);
        return { admitted: batch.length, committed: true };
      },
      durable: () => new Promise<void>((resolve) => pending.push(resolve)),
      sizeOf: (e) => e.text.length,
    });
    // A reader: pushes while the queue is not backlogged, else waits for the commit in flight.
    let next = 1;
    let maxQueued = 0;
    let sawBacklog = false;
    const reader = (async () => {
      while (next <= 40) {
        queue.push({ id: next++, text });
        maxQueued = Math.max(maxQueued, queue.queuedBytes());
        if (queue.backlogged()) {
          sawBacklog = true;
          await queue.settled();
        }
      }
      await queue.settled();
    })();
    for (let i = 0; i < 10; i++) await Promise.resolve();
    // Held by the first commit's durability: the reader waits, the queue at the bound.
    expect(sawBacklog).toBe(true);
    expect(queue.backlogged()).toBe(true);
    expect(queue.queuedBytes()).toBeLessThanOrEqual(DEFAULT_MAX_QUEUED_BYTES);
    expect(next - 1).toBeLessThan(40);
    while (next <= 40 || pending.length > 0) {
      pending.shift()?.();
      for (let i = 0; i < 10; i++) await Promise.resolve();
    }
    await reader;
    expect(maxQueued).toBeLessThanOrEqual(DEFAULT_MAX_QUEUED_BYTES);
    expect(applied).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it("a frame larger than the byte bound still goes, alone", async () => {
    const pending: Array<() => void> = [];
    const batches: number[][] = [];
    const queue = new IngestQueue<{ id: number; size: number }>({
      apply: (batch) => (batches.push(batch.map((e) => e.id)), { admitted: batch.length, committed: true }),
      durable: () => new Promise<void>((resolve) => pending.push(resolve)),
      sizeOf: (e) => e.size,
      maxQueuedBytes: 100,
    });
    queue.push({ id: 1, size: 10 });
    queue.push({ id: 2, size: 500 });
    expect(queue.backlogged()).toBe(true);
    const done = queue.settled();
    while (pending.length > 0) {
      pending.shift()!();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    }
    await done;
    expect(batches).toEqual([[1], [2]]);
    expect(queue.queuedBytes()).toBe(0);
  });

  it("property: whenever durability comes, every event is applied once, in order, and settled means all applied", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constant("push" as const), fc.constant("durable" as const)), { maxLength: 60 }),
        async (steps) => {
          const { queue, batches, pending, release } = manual();
          let next = 0;
          for (const step of steps) {
            if (step === "push") queue.push(next++);
            else await release();
          }
          const done = queue.settled();
          while (pending.length > 0) await release();
          await done;
          expect(batches.flat()).toEqual(Array.from({ length: next }, (_, i) => i));
          expect(batches.every((b) => b.length > 0)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a batch that committed nothing (deltas the store holds) is not waited on: the next event is applied at once", async () => {
    const pending: Array<() => void> = [];
    const batches: number[][] = [];
    const queue = new IngestQueue<number>({
      apply: (batch) => (batches.push([...batch]), { admitted: batch.length, committed: batch[0]! % 2 === 0 }),
      durable: () => new Promise<void>((resolve) => pending.push(resolve)),
    });
    queue.push(1);
    await Promise.resolve();
    queue.push(3);
    await Promise.resolve();
    expect(batches).toEqual([[1], [3]]);
    expect(pending).toHaveLength(0);
    expect(queue.commits).toBe(0);
    queue.push(4);
    queue.push(5);
    expect(batches).toEqual([[1], [3], [4]]);
    expect(pending).toHaveLength(1);
    pending.shift()!();
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(batches).toEqual([[1], [3], [4], [5]]);
    expect(queue.commits).toBe(1);
    await queue.settled();
  });
});
