/**
 * §10 the workspace's snapshots, on the control plane (docs/sandbox-wire.md): take one (its
 * `idempotencyKey` bound to a digest of its tags: the same again replays, other tags 409), list
 * them, delete one (`deleted` or `already_absent`), compare two states (a snapshot with another or
 * with the live files: workspace-diff.ts), restore one in place (by `operationId`: the same again
 * replays, for another snapshot 409; refused while a run is in flight). A snapshot is the
 * account's: it outlives its sandbox (the newer SDK's reading), and diff and restore take any
 * snapshot by id (a fork's parent's too). Variants `workspace`, `snapshotIdempotency`,
 * `snapshotDelete`, `restore`; fault `snapshotFails`. A create `fromSnapshot` is the control plane's
 * (api-control-plane.ts).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { API_PATHS, type ApiKit, apiNotFound, jsonBody } from "./api-common";
import { snapshotOwner } from "./store-files";
import type { SnapshotRow } from "./store-snapshots";
import { diffTrees } from "./workspace-diff";

const Tag = z
  .string()
  .regex(/^[A-Za-z0-9._-]+$/, "a tag is letters, digits, '.', '_' and '-'")
  .max(128);
const SnapshotBody = z.strictObject({
  tags: z.array(Tag).max(32).optional(),
  idempotencyKey: z.string().min(1).max(256).optional(),
});
const RestoreBody = z.strictObject({ operationId: z.string().min(1).max(256) });
const DiffQuery = z.strictObject({
  to: z.string().min(1).default("live"),
  maxBytes: z.coerce
    .number()
    .int()
    .positive()
    .max(10 * 1024 * 1024)
    .default(256 * 1024),
});

async function digest(material: unknown): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(JSON.stringify(material)));
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

const view = (row: SnapshotRow) => ({
  snapshotId: row.id,
  createdAt: new Date(row.created_at).toISOString(),
  sizeBytes: row.size_bytes,
  tags: JSON.parse(row.tags) as string[],
});

export function registerSnapshotRoutes(app: Hono, api: ApiKit): void {
  const { store, variants, fail, invalid, runningSandbox } = api;
  const snapshots = store.snapshots;

  /** 404 as an unknown route without the workspace's routes; else the sandbox (deleted ones too), or its 404. */
  const known = (c: Context): string | Response => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const row = store.sandbox(c.req.param("id") ?? "");
    return row ? row.id : api.notFound(c);
  };
  const noSnapshot = (c: Context, id: string) => fail(c, 404, "SNAPSHOT_NOT_FOUND", `no snapshot ${id}`);
  /** The files of a tree by path. */
  const tree = (owner: string) =>
    new Map(store.files.entries(owner).map((e) => [e.path, store.files.read(owner, e.path)!] as const));

  app.post(API_PATHS.snapshot, async (c) => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = SnapshotBody.safeParse(await jsonBody(c, {}));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const faults = store.faults();
    if (faults.snapshotFails) {
      store.setFaults({ ...faults, snapshotFails: faults.snapshotFails > 1 ? faults.snapshotFails - 1 : undefined });
      store.count("faults.injected");
      return fail(c, 500, "SNAPSHOT_FAILED", "the snapshot failed (injected)");
    }
    const tags = parsed.data.tags ?? [];
    const key = parsed.data.idempotencyKey ?? null;
    const requestDigest = key ? await digest({ tags }) : null;
    const echoed = variants().snapshotIdempotency === "echoed";
    if (key) {
      const existing = snapshots.byKey(sb.id, key);
      if (existing && existing.request_digest !== requestDigest)
        return fail(c, 409, "IDEMPOTENCY_CONFLICT", `idempotencyKey ${key} was used with other tags`, {
          existingRequestDigest: existing.request_digest,
        });
      if (existing) {
        store.count("snapshots.replayed");
        const idempotency = { outcome: "replayed", requestDigest };
        return c.json({ ...view(existing), ...(echoed ? { idempotency } : {}) }, 200);
      }
    }
    const row = snapshots.take({
      id: `snap_${crypto.randomUUID().replaceAll("-", "")}`,
      sandboxId: sb.id,
      createdAt: Date.now(),
      tags,
      idempotencyKey: key,
      requestDigest,
    });
    store.count("snapshots.created");
    const idempotency = { outcome: "created", requestDigest };
    return c.json({ ...view(row), ...(key && echoed ? { idempotency } : {}) }, 201);
  });

  app.get(API_PATHS.snapshots, (c) => {
    const id = known(c);
    if (id instanceof Response) return id;
    return c.json({ snapshots: snapshots.list(id).map(view) });
  });

  app.delete(API_PATHS.snapshotOne, (c) => {
    const id = known(c);
    if (id instanceof Response) return id;
    const snapshotId = c.req.param("sid");
    // A snapshot live sandboxes were created from is in use: they go first (seed 000's dependency order).
    const children = store.childrenOfSnapshot(snapshotId);
    if (children.length > 0)
      return fail(c, 409, "SNAPSHOT_IN_USE", `sandboxes created from it still live: ${children.join(", ")}`, {
        children,
      });
    const had = snapshots.remove(snapshotId);
    if (had) store.count("snapshots.deleted");
    if (variants().snapshotDelete === "no-content") return c.body(null, 204);
    return c.json({ snapshotId, outcome: had ? "deleted" : "already_absent" });
  });

  app.get(API_PATHS.snapshotDiff, (c) => {
    const id = known(c);
    if (id instanceof Response) return id;
    const query = DiffQuery.safeParse(c.req.query());
    if (!query.success) return invalid(c, "VALIDATION_ERROR", query.error);
    const from = snapshots.snapshot(c.req.param("sid"));
    if (!from) return noSnapshot(c, c.req.param("sid"));
    const { to, maxBytes } = query.data;
    let after: Map<string, Uint8Array>;
    if (to === "live") {
      const sb = runningSandbox(c);
      if (sb instanceof Response) return sb;
      after = tree(sb.id);
    } else {
      if (!snapshots.snapshot(to)) return noSnapshot(c, to);
      after = tree(snapshotOwner(to));
    }
    const { files, truncated } = diffTrees(tree(snapshotOwner(from.id)), after, maxBytes);
    return c.json({ from: from.id, to, files, truncated });
  });

  app.post(API_PATHS.snapshotRestore, async (c) => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const parsed = RestoreBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const snapshotId = c.req.param("sid");
    const { operationId } = parsed.data;
    const answer = (outcome: "restored" | "replayed", at: number) =>
      variants().restore === "no-outcome"
        ? c.json({})
        : c.json({ snapshotId, outcome, restoredAt: new Date(at).toISOString() });
    const done = snapshots.restore(operationId);
    if (done) {
      if (done.snapshot_id !== snapshotId || done.sandbox_id !== sb.id)
        return fail(c, 409, "IDEMPOTENCY_CONFLICT", `operationId ${operationId} restored another snapshot or sandbox`);
      store.count("snapshots.restoreReplayed");
      return answer("replayed", done.restored_at);
    }
    if (!snapshots.snapshot(snapshotId)) return noSnapshot(c, snapshotId);
    if (store.runningExecutions(sb.id).length > 0)
      return fail(c, 409, "SANDBOX_BUSY", "a run is in flight in this sandbox");
    const row = snapshots.restoreInto(operationId, sb.id, snapshotId, Date.now());
    store.count("snapshots.restored");
    return answer("restored", row.restored_at);
  });
}
