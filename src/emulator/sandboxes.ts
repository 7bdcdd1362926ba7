/**
 * The sandbox lifecycle by the clock (docs/sandbox-wire.md §2): a new or resumed sandbox is
 * `provisioning` until its provisioning time has passed, then ends in `running` (or the status a
 * `provisionOutcome` fault names); its filesystem turns `ready` at once, or after a
 * `readinessLagMs` fault's lag. Reading a sandbox advances it. With the variant `readiness:
 * "unknown-value"`, the first answers that would show a ready filesystem show `"warming"` instead.
 */
import type { EmulatorStore, SandboxRow } from "./store";
import { effectiveVariants, readinessShown } from "./variants";
import type { CreateSandboxBody, SandboxView } from "./wire";

export class Sandboxes {
  constructor(
    private readonly store: EmulatorStore,
    /** The configured provisioning time (ms). */
    private readonly provisionMs: () => number,
  ) {}

  /** A sandbox that is not deleted, advanced to now; undefined when there is none. */
  get(id: string): SandboxRow | undefined {
    const row = this.store.sandbox(id);
    if (!row || row.status === "deleted") return undefined;
    const now = Date.now();
    if ((row.status === "provisioning" || row.status === "pending") && row.ready_at !== null && now >= row.ready_at) {
      const faults = this.store.faults();
      const outcome = faults.provisionOutcome ?? "running";
      const lag = faults.readinessLagMs ?? 0;
      row.status = outcome;
      row.error = outcome === "running" ? null : `scripted provisioning outcome: ${outcome}`;
      row.readiness = outcome === "running" && lag === 0 ? "ready" : "transitioning";
      row.ready_at = outcome === "running" && lag > 0 ? now + lag : null;
      this.store.updateSandbox(id, { status: row.status, readiness: row.readiness, readyAt: row.ready_at, error: row.error });
    } else if (row.status === "running" && row.readiness === "transitioning" && row.ready_at !== null && now >= row.ready_at) {
      row.readiness = "ready";
      row.ready_at = null;
      this.store.updateSandbox(id, { status: row.status, readiness: row.readiness, readyAt: null, error: row.error });
    }
    return row;
  }

  /** Creates a sandbox, provisioning from now. */
  create(body: CreateSandboxBody): SandboxRow {
    const id = `sbx_${crypto.randomUUID().replaceAll("-", "")}`;
    const now = Date.now();
    this.store.insertSandbox({ id, idempotencyKey: body.idempotencyKey ?? null, body, readyAt: now + this.provisionMs(), createdAt: now });
    return this.get(id)!;
  }

  /** A stopped sandbox provisions again from now. */
  resume(row: SandboxRow): void {
    this.store.updateSandbox(row.id, { status: "provisioning", readiness: "transitioning", readyAt: Date.now() + this.provisionMs(), error: row.error });
    this.store.setWarmingPolls(row.id, 0);
  }

  stop(row: SandboxRow): void {
    this.store.updateSandbox(row.id, { status: "stopped", readiness: "transitioning", readyAt: row.ready_at, error: row.error });
  }

  /** §2 sandbox object (an answer showing it counts as a poll of the `readiness` variant). */
  view(row: SandboxRow): SandboxView {
    const body = JSON.parse(row.body) as { name?: string; metadata?: Record<string, unknown> };
    const readiness = readinessShown(effectiveVariants(this.store.variants()), row.readiness, row.warming_polls);
    if (readiness.counted) this.store.setWarmingPolls(row.id, row.warming_polls + 1);
    return {
      id: row.id,
      ...(body.name !== undefined ? { name: body.name } : {}),
      status: row.status as SandboxView["status"],
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      createdAt: new Date(row.created_at).toISOString(),
      filesystemIncarnationReadiness: readiness.shown as SandboxView["filesystemIncarnationReadiness"],
      ...(row.error ? { error: row.error } : {}),
    };
  }
}
