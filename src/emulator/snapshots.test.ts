/**
 * The emulator's snapshots (docs/sandbox-wire.md §10), read over `fetch`: taken under an
 * idempotency key bound to its tags, listed, compared (with the live files or another snapshot),
 * restored in place under an operation id, deleted with an explicit outcome, forked into a new
 * sandbox (`fromSnapshot`), kept after their sandbox is deleted; the fault `snapshotFails`.
 */
import { describe, expect, it } from "vitest";
import { dispatch, type Emu, fastSandbox, fileText, json, readRaw, runtime } from "./test-support";

const writeFile = (emu: Emu, id: string, path: string, content: string) =>
  emu.control(`/_emulator/sandboxes/${id}/files`, { path, content });

async function snapshot(emu: Emu, id: string, body: Record<string, unknown> = {}): Promise<any> {
  const res = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, body);
  expect(res.status).toBe(201);
  return json(res);
}

/** Waits until a sandbox created by `create` runs. */
async function running(emu: Emu, id: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const sb = await json(await emu.api("GET", `/v1/sandboxes/${id}`));
    if (sb.status === "running" && sb.filesystemIncarnationReadiness === "ready") return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("not running");
}

describe("the emulator's snapshots", () => {
  it("takes a snapshot of the whole tree under an idempotency key: the same tags replay (200), others conflict (409)", async () => {
    const { emu, id } = await fastSandbox("snap-take");
    const first = await snapshot(emu, id, { tags: ["turn-1"], idempotencyKey: "k1" });
    expect(first).toMatchObject({ tags: ["turn-1"], idempotency: { outcome: "created" } });
    expect(first.snapshotId).toMatch(/^snap_/);
    // The seeded files' sizes: README 51, logo 300, and the rest.
    const sizes = await Promise.all(
      ["README.md", "package.json", "src/server.ts", "src/http.ts", "assets/logo.png"].map(
        async (p) => (await json(await emu.api("GET", runtime(id, `/fs/stat/home/agent/${p}`)))).data.size as number,
      ),
    );
    expect(first.sizeBytes).toBe(sizes.reduce((a, b) => a + b, 0));
    expect(first.idempotency.requestDigest).toMatch(/^[0-9a-f]{64}$/);

    const again = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { tags: ["turn-1"], idempotencyKey: "k1" });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual({ ...first, idempotency: { ...first.idempotency, outcome: "replayed" } });
    const conflict = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { tags: ["other"], idempotencyKey: "k1" });
    expect(conflict.status).toBe(409);
    expect((await json(conflict)).error).toMatchObject({
      code: "IDEMPOTENCY_CONFLICT",
      existingRequestDigest: first.idempotency.requestDigest,
    });
    const bare = await snapshot(emu, id);
    expect(bare.idempotency).toBeUndefined();
    expect(bare.tags).toEqual([]);
    const bad = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { tags: ["no spaces"] });
    expect(bad.status).toBe(400);

    const listed = await json(await emu.api("GET", `/v1/sandboxes/${id}/snapshots`));
    expect(listed.snapshots.map((s: any) => s.snapshotId)).toEqual([first.snapshotId, bare.snapshotId]);
    expect(listed.snapshots[0]).toEqual({
      snapshotId: first.snapshotId,
      createdAt: first.createdAt,
      sizeBytes: first.sizeBytes,
      tags: ["turn-1"],
    });
    await emu.control(`/_emulator/sandboxes/${id}/status`, { status: "stopped" });
    expect((await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, {})).status).toBe(409);
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({
      "snapshots.created": 2,
      "snapshots.replayed": 1,
      "requests.snapshots.create": 6,
      "requests.snapshots.list": 1,
    });
  });

  it("compares a snapshot with the live files or another snapshot: added, modified, deleted, renamed, binary, bounded", async () => {
    const { emu, id } = await fastSandbox("snap-diff");
    const before = await snapshot(emu, id);
    await readRaw(
      await dispatch(emu, id, {
        message: "go [edits] [rename:package.json:pkg.json] [binary:assets/logo.png:64] [delete:src/http.ts]",
        executionId: "exe-d1",
        turnId: "t1",
      }),
    );
    const res = await emu.api("GET", `/v1/sandboxes/${id}/snapshots/${before.snapshotId}/diff?to=live`);
    expect(res.status).toBe(200);
    const diff = await json(res);
    expect(diff).toMatchObject({ from: before.snapshotId, to: "live", truncated: false });
    expect(diff.files.map((f: any) => [f.path, f.status, f.binary])).toEqual([
      ["README.md", "modified", false],
      ["assets/logo.png", "modified", true],
      ["pkg.json", "renamed", false],
      ["src/greeting.ts", "added", false],
      ["src/http.ts", "deleted", false],
      ["src/server.ts", "modified", false],
    ]);
    const server = diff.files.find((f: any) => f.path === "src/server.ts");
    expect(server.diff).toContain('-serve((request) => new Response("ok"));');
    expect(server.diff).toContain('+import { greet } from "./greeting";');
    expect(diff.files.find((f: any) => f.path === "pkg.json").from).toBe("package.json");
    expect(diff.files.find((f: any) => f.path === "assets/logo.png")).toMatchObject({ sizeBefore: 300, sizeAfter: 64 });
    expect(diff.files.find((f: any) => f.path === "assets/logo.png").diff).toBeUndefined();

    const after = await snapshot(emu, id);
    const between = await json(
      await emu.api("GET", `/v1/sandboxes/${id}/snapshots/${before.snapshotId}/diff?to=${after.snapshotId}`),
    );
    expect(between.files).toEqual(diff.files);
    const small = await json(
      await emu.api("GET", `/v1/sandboxes/${id}/snapshots/${before.snapshotId}/diff?maxBytes=200`),
    );
    expect(small.truncated).toBe(true);
    expect(small.files.filter((f: any) => f.diff !== undefined).length).toBeLessThan(4);
    expect((await emu.api("GET", `/v1/sandboxes/${id}/snapshots/snap_nope/diff`)).status).toBe(404);
    expect(
      (await json(await emu.api("GET", `/v1/sandboxes/${id}/snapshots/${before.snapshotId}/diff?to=snap_nope`))).error
        .code,
    ).toBe("SNAPSHOT_NOT_FOUND");
    expect((await emu.api("GET", `/v1/sandboxes/${id}/snapshots/${before.snapshotId}/diff?maxBytes=-1`)).status).toBe(
      400,
    );
  });

  it("restores a snapshot in place under an operation id: replayed, 409 for another snapshot, 409 SANDBOX_BUSY while a run is in flight", async () => {
    const { emu, id } = await fastSandbox("snap-restore");
    const clean = await snapshot(emu, id);
    await writeFile(emu, id, "README.md", "changed\n");
    await writeFile(emu, id, "extra.txt", "new\n");
    const changed = await snapshot(emu, id);
    const restore = (sid: string, operationId: string) =>
      emu.api("POST", `/v1/sandboxes/${id}/snapshots/${sid}/restore`, { operationId });

    const done = await restore(clean.snapshotId, "op-1");
    expect(done.status).toBe(200);
    const body = await json(done);
    expect(body).toMatchObject({ snapshotId: clean.snapshotId, outcome: "restored" });
    expect(await fileText(emu, id, "README.md")).toBe("# Demo project\n\nA small service with a test suite.\n");
    expect(await fileText(emu, id, "extra.txt")).toBeNull();

    // Changed again, the same operation is answered, not redone.
    await writeFile(emu, id, "README.md", "changed again\n");
    const replay = await json(await restore(clean.snapshotId, "op-1"));
    expect(replay).toEqual({ ...body, outcome: "replayed" });
    expect(await fileText(emu, id, "README.md")).toBe("changed again\n");
    const conflict = await restore(changed.snapshotId, "op-1");
    expect(conflict.status).toBe(409);
    expect((await json(conflict)).error.code).toBe("IDEMPOTENCY_CONFLICT");
    expect((await restore("snap_nope", "op-2")).status).toBe(404);
    expect((await emu.api("POST", `/v1/sandboxes/${id}/snapshots/${clean.snapshotId}/restore`, {})).status).toBe(400);

    // A run held in flight: the sandbox is busy.
    const stream = await dispatch(emu, id, { message: "wait [hold]", executionId: "exe-r1", turnId: "t1" });
    const deadline = Date.now() + 5_000;
    while (!(await json(await emu.control("/_emulator/executions/exe-r1/hold"))).held) {
      if (Date.now() > deadline) throw new Error("not held");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const busy = await restore(changed.snapshotId, "op-3");
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("SANDBOX_BUSY");
    expect((await emu.control("/_emulator/executions/exe-r1/release", {})).status).toBe(200);
    await readRaw(stream);
    expect((await restore(changed.snapshotId, "op-3")).status).toBe(200);
    expect(await fileText(emu, id, "extra.txt")).toBe("new\n");
    expect((await json(await emu.control("/_emulator/counters"))).counters).toMatchObject({
      "snapshots.restored": 2,
      "snapshots.restoreReplayed": 1,
    });
  });

  it("deletes a snapshot with its outcome (deleted, then already_absent); a sandbox's snapshots outlive it and seed forks", async () => {
    const { emu, id } = await fastSandbox("snap-fork");
    await writeFile(emu, id, "notes.md", "from the parent\n");
    const snap = await snapshot(emu, id, { tags: ["checkpoint"] });
    const doomed = await snapshot(emu, id);
    const del = await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${doomed.snapshotId}`);
    expect(await json(del)).toEqual({ snapshotId: doomed.snapshotId, outcome: "deleted" });
    expect(await json(await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${doomed.snapshotId}`))).toEqual({
      snapshotId: doomed.snapshotId,
      outcome: "already_absent",
    });

    expect((await emu.api("DELETE", `/v1/sandboxes/${id}`)).status).toBe(200);
    const kept = await json(await emu.api("GET", `/v1/sandboxes/${id}/snapshots`));
    expect(kept.snapshots.map((s: any) => s.snapshotId)).toEqual([snap.snapshotId]);

    const metadata = { fork: "branch-2" };
    const created = await emu.api("POST", "/v1/sandboxes", {
      fromSnapshot: snap.snapshotId,
      fromSandboxId: id,
      metadata,
      idempotencyKey: "fork-1",
    });
    expect(created.status).toBe(201);
    const fork = await json(created);
    expect(fork.metadata).toEqual(metadata);
    await running(emu, fork.id);
    expect(await fileText(emu, fork.id, "notes.md")).toBe("from the parent\n");
    expect(await fileText(emu, fork.id, "README.md")).toContain("# Demo project");
    // The fork's files are its own.
    await writeFile(emu, fork.id, "notes.md", "the fork's\n");
    const second = await json(await emu.api("POST", "/v1/sandboxes", { fromSnapshot: snap.snapshotId }));
    expect(await fileText(emu, second.id, "notes.md")).toBe("from the parent\n");
    const replay = await emu.api("POST", "/v1/sandboxes", { fromSnapshot: snap.snapshotId, idempotencyKey: "fork-1" });
    expect(replay.status).toBe(200);
    expect((await json(replay)).id).toBe(fork.id);

    const unknown = await emu.api("POST", "/v1/sandboxes", { fromSnapshot: "snap_nope" });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe("SNAPSHOT_NOT_FOUND");
    expect(
      (await emu.api("POST", "/v1/sandboxes", { fromSnapshot: snap.snapshotId, fromSandboxId: "sbx_other" })).status,
    ).toBe(400);
    expect((await emu.api("POST", "/v1/sandboxes", { fromSandboxId: id })).status).toBe(400);
    // A snapshot live sandboxes were made from is in use: they are deleted first.
    const inUse = await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${snap.snapshotId}`);
    expect(inUse.status).toBe(409);
    expect((await json(inUse)).error).toMatchObject({ code: "SNAPSHOT_IN_USE" });
    expect((await emu.api("DELETE", `/v1/sandboxes/${fork.id}`)).status).toBe(200);
    expect((await emu.api("DELETE", `/v1/sandboxes/${second.id}`)).status).toBe(200);
    const freed = await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${snap.snapshotId}`);
    expect(await json(freed)).toEqual({ snapshotId: snap.snapshotId, outcome: "deleted" });
    expect((await json(await emu.control("/_emulator/counters"))).counters).toMatchObject({
      "sandboxes.forked": 2,
      "snapshots.deleted": 2,
    });
  });

  it("fault snapshotFails: the next N snapshots answer 500 SNAPSHOT_FAILED and take nothing; the one after is taken", async () => {
    const { emu, id } = await fastSandbox("snap-fails");
    expect((await emu.control("/_emulator/faults", { frameDelayMs: 0, snapshotFails: 2 })).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const res = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { idempotencyKey: "k" });
      expect(res.status).toBe(500);
      expect((await json(res)).error.code).toBe("SNAPSHOT_FAILED");
    }
    expect((await json(await emu.api("GET", `/v1/sandboxes/${id}/snapshots`))).snapshots).toEqual([]);
    const taken = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { idempotencyKey: "k" });
    expect(taken.status).toBe(201);
    expect((await json(taken)).idempotency.outcome).toBe("created");
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({ frameDelayMs: 0 });
  });
});
