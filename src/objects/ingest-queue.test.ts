import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IngestQueue } from "./ingest-queue";

/** A queue whose durability the test releases by hand. */
function manual(apply: (batch: number[]) => number = (b) => b.length) {
  const pending: Array<() => void> = [];
  const batches: number[][] = [];
  const queue = new IngestQueue<number>({
    apply: (batch) => {
      batches.push([...batch]);
      return apply(batch);
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
    expect(batches).toEqual([[1], [2, 3]]);
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

  it("property: whenever durability comes, every event is applied once, in order, and settled means all applied", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.constant("push" as const), fc.constant("durable" as const)), { maxLength: 60 }), async (steps) => {
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
      }),
      { numRuns: 200 },
    );
  });
});
