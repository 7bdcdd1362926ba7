/**
 * §2 the control plane: a sandbox created (a repeated idempotency key answers the same one; its
 * files the seeded project, or a snapshot's copy with `fromSnapshot`, §10), listed, read, resumed,
 * stopped and deleted (its files with it; its snapshots stay), and the account's usage [ours]. The
 * lifecycle behind these answers is ./sandboxes.ts; the files ./workspace.ts.
 */

import type { Hono } from "hono";
import { API_PATHS, type ApiKit, jsonBody } from "./api-common";
import { catalogAnswer } from "./catalog";
import { snapshotOwner } from "./store-files";
import type { SandboxRow } from "./store-schema";
import { type AccountUsageView, CreateSandboxBody } from "./wire";

export function registerControlPlaneRoutes(app: Hono, api: ApiKit): void {
  const { store, sandboxes, runner, workspace, terminals, variants, fail, invalid, notFound, view } = api;

  app.post(API_PATHS.sandboxes, async (c) => {
    const parsed = CreateSandboxBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, "VALIDATION_ERROR", parsed.error);
    const key = parsed.data.idempotencyKey;
    if (key) {
      // A repeated key answers the same sandbox: 200 (this call created nothing), or 201 like a fresh one (variant).
      const existing = store.sandboxIdByIdempotencyKey(key);
      const row = existing ? sandboxes.get(existing) : undefined;
      if (row) {
        store.count("sandboxes.replayed");
        return c.json(view(row), variants().createReplay === "201" ? 201 : 200);
      }
    }
    // §10 a workspace fork: the new sandbox's files are a copy of the snapshot's.
    const { fromSnapshot, fromSandboxId } = parsed.data;
    if ((fromSnapshot || fromSandboxId) && variants().workspace === "missing")
      return fail(c, 400, "VALIDATION_ERROR", "fromSnapshot and fromSandboxId are not served here");
    if (fromSandboxId && !fromSnapshot) return fail(c, 400, "VALIDATION_ERROR", "fromSandboxId needs fromSnapshot");
    const snapshot = fromSnapshot ? store.snapshots.snapshot(fromSnapshot) : undefined;
    if (fromSnapshot && !snapshot) return fail(c, 404, "SNAPSHOT_NOT_FOUND", `no snapshot ${fromSnapshot}`);
    if (snapshot && fromSandboxId && snapshot.sandbox_id !== fromSandboxId)
      return fail(c, 400, "VALIDATION_ERROR", `snapshot ${snapshot.id} is not of sandbox ${fromSandboxId}`);
    const row = sandboxes.create(parsed.data);
    if (snapshot) {
      store.files.copy(snapshotOwner(snapshot.id), row.id);
      store.count("sandboxes.forked");
    } else workspace.seed(row.id);
    store.count("sandboxes.created");
    return c.json(view(row), 201);
  });

  app.get(API_PATHS.sandboxes, (c) => {
    const status = c.req.query("status");
    const limit = Math.min(Number(c.req.query("limit") ?? 100) || 100, 1000);
    const offset = Number(c.req.query("offset") ?? 0) || 0;
    const rows = store
      .sandboxIds(limit, offset)
      .map((id) => sandboxes.get(id))
      .filter((r): r is SandboxRow => !!r && (!status || r.status === status));
    return c.json({ sandboxes: rows.map(view) });
  });

  app.get(API_PATHS.sandbox, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    return row ? c.json(view(row)) : notFound(c);
  });

  app.post(API_PATHS.resume, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    if (row.status === "stopped") {
      sandboxes.resume(row);
      store.count("sandboxes.resumed");
    } else if (row.status !== "running" && row.status !== "provisioning") {
      return fail(c, 409, "INVALID_STATE", `cannot resume a ${row.status} sandbox`);
    }
    return c.json(view(sandboxes.get(row.id)!));
  });

  app.post(API_PATHS.stop, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    sandboxes.stop(row);
    runner.sandboxStopped(row.id);
    terminals.sandboxEnded(row.id);
    return c.json(view(sandboxes.get(row.id)!));
  });

  app.delete(API_PATHS.sandbox, (c) => {
    const row = sandboxes.get(c.req.param("id"));
    if (!row) return notFound(c);
    store.deleteSandbox(row.id);
    store.files.drop(row.id);
    terminals.sandboxEnded(row.id);
    for (const exe of store.runningExecutions(row.id)) runner.finish(exe, "cancelled", { error: "sandbox deleted" });
    runner.schedule();
    store.count("sandboxes.deleted");
    return c.json({ success: true });
  });

  // §2 the backend catalog [ours] (./catalog.ts); variant `catalog` picks its shape, or none.
  app.get(API_PATHS.backends, (c) => {
    const shape = variants().catalog;
    if (shape === "missing") return fail(c, 404, "NOT_FOUND", "no route GET /v1/backends");
    return c.json(catalogAnswer(shape) as object);
  });

  // §2 the account's usage [ours] (the SDK's `client.usage()`); variant `accountUsage: "missing"` serves none.
  app.get(API_PATHS.accountUsage, (c) => {
    if (variants().accountUsage === "missing") return fail(c, 404, "NOT_FOUND", "no route GET /v1/account/usage");
    const usage: AccountUsageView = { activeSandboxes: store.runningSandboxCount() };
    return c.json(usage);
  });
}
