/**
 * The sandbox lifecycle by the clock (docs/sandbox-wire.md §2): a new or resumed sandbox is
 * `provisioning` until its provisioning time has passed, then ends in `running` (or the status a
 * `provisionOutcome` fault names); its filesystem turns `ready` at once, or after a
 * `readinessLagMs` fault's lag. Reading a sandbox advances it. With the variant `readiness:
 * "unknown-value"`, the first answers that would show a ready filesystem show `"warming"` instead.
 *
 * The limits of its create are kept by the same clock: a sandbox older than `maxLifetimeSeconds`
 * is `expired` (its runs die with it), and a running one with no run in flight, unused for
 * `idleTimeoutSeconds` (no runtime call, resume or run's end), is `stopped`. Each sandbox's
 * clock can be moved ahead (`POST /_emulator/sandboxes/:id/clock`: its times move back, as if that
 * much time had passed), so a test sees an idle stop or an expiry without waiting for it.
 */
import type { EmulatorStore } from "./store";
import type { SandboxRow } from "./store-schema";
import { effectiveVariants, readinessShown } from "./variants";
import type { CreateSandboxBody, SandboxView } from "./wire";

/** What a sandbox is given when its create asks for no resources [ours]. */
const DEFAULT_RESOURCES = { cpuCores: 2, memoryMB: 4096, diskGB: 10 };

type Limits = Pick<CreateSandboxBody, "idleTimeoutSeconds" | "maxLifetimeSeconds" | "resources">;

export class Sandboxes {
  constructor(
    private readonly store: EmulatorStore,
    /** The configured provisioning time (ms). */
    private readonly provisionMs: () => number,
    /** A sandbox ended by its limits (expired, or stopped idle): its runs are the runner's to end. */
    private readonly ended: (id: string, status: "stopped" | "expired") => void = () => undefined,
  ) {}

  /** The create's limits. */
  private limits(row: SandboxRow): Limits {
    return JSON.parse(row.body) as Limits;
  }

  /** When the sandbox expires (ms), null without a lifetime. */
  private expiresAt(row: SandboxRow): number | null {
    const { maxLifetimeSeconds } = this.limits(row);
    return maxLifetimeSeconds === undefined ? null : row.created_at + maxLifetimeSeconds * 1000;
  }

  /** The last use of the sandbox: a runtime call, a resume, its create, or a run's end. */
  private lastActivity(row: SandboxRow): number {
    return Math.max(row.last_activity_at ?? row.created_at, this.store.lastRunEndedAt(row.id) ?? 0);
  }

  /** Applies the lifetime and the idle timeout now. */
  private enforceLimits(row: SandboxRow): void {
    const now = Date.now();
    const expiresAt = this.expiresAt(row);
    if (expiresAt !== null && now >= expiresAt && row.status !== "expired" && row.status !== "failed") {
      row.status = "expired";
      this.store.setSandboxStatus(row.id, "expired");
      this.store.count("sandboxes.expired");
      this.ended(row.id, "expired");
      return;
    }
    const { idleTimeoutSeconds } = this.limits(row);
    if (row.status !== "running" || idleTimeoutSeconds === undefined || this.store.runningExecutions(row.id).length > 0)
      return;
    if (now - this.lastActivity(row) >= idleTimeoutSeconds * 1000) {
      this.stop(row);
      row.status = "stopped";
      this.store.count("sandboxes.idleStopped");
      this.ended(row.id, "stopped");
    }
  }

  /** The sandbox was used now (a runtime call). */
  touch(row: SandboxRow): void {
    this.store.touchSandbox(row.id, Date.now());
  }

  /** A sandbox that is not deleted, advanced to now; undefined when there is none. */
  get(id: string): SandboxRow | undefined {
    const row = this.store.sandbox(id);
    if (!row || row.status === "deleted") return undefined;
    this.advance(row);
    this.enforceLimits(row);
    return row;
  }

  /** Provisioning and readiness by the clock. */
  private advance(row: SandboxRow): void {
    const id = row.id;
    const now = Date.now();
    if ((row.status === "provisioning" || row.status === "pending") && row.ready_at !== null && now >= row.ready_at) {
      const faults = this.store.faults();
      const outcome = faults.provisionOutcome ?? "running";
      const lag = faults.readinessLagMs ?? 0;
      row.status = outcome;
      row.error = outcome === "running" ? null : `scripted provisioning outcome: ${outcome}`;
      row.readiness = outcome === "running" && lag === 0 ? "ready" : "transitioning";
      row.ready_at = outcome === "running" && lag > 0 ? now + lag : null;
      this.store.updateSandbox(id, {
        status: row.status,
        readiness: row.readiness,
        readyAt: row.ready_at,
        error: row.error,
      });
      if (outcome === "running") {
        row.started_at = now;
        this.store.setSandboxStartedAt(id, now);
      }
    } else if (
      row.status === "running" &&
      row.readiness === "transitioning" &&
      row.ready_at !== null &&
      now >= row.ready_at
    ) {
      row.readiness = "ready";
      row.ready_at = null;
      this.store.updateSandbox(id, { status: row.status, readiness: row.readiness, readyAt: null, error: row.error });
    }
  }

  /** Creates a sandbox, provisioning from now. */
  create(body: CreateSandboxBody): SandboxRow {
    const id = `sbx_${crypto.randomUUID().replaceAll("-", "")}`;
    const now = Date.now();
    this.store.insertSandbox({
      id,
      idempotencyKey: body.idempotencyKey ?? null,
      body,
      readyAt: now + this.provisionMs(),
      createdAt: now,
    });
    return this.get(id)!;
  }

  /** A stopped sandbox provisions again from now. */
  resume(row: SandboxRow): void {
    this.store.updateSandbox(row.id, {
      status: "provisioning",
      readiness: "transitioning",
      readyAt: Date.now() + this.provisionMs(),
      error: row.error,
    });
    this.store.setWarmingPolls(row.id, 0);
    this.store.touchSandbox(row.id, Date.now());
  }

  stop(row: SandboxRow): void {
    this.store.updateSandbox(row.id, {
      status: "stopped",
      readiness: "transitioning",
      readyAt: row.ready_at,
      error: row.error,
    });
  }

  /** §2 sandbox object (an answer showing it counts as a poll of the `readiness` variant). */
  view(row: SandboxRow): SandboxView {
    const body = JSON.parse(row.body) as { name?: string; metadata?: Record<string, unknown> } & Limits;
    const readiness = readinessShown(effectiveVariants(this.store.variants()), row.readiness, row.warming_polls);
    if (readiness.counted) this.store.setWarmingPolls(row.id, row.warming_polls + 1);
    return {
      id: row.id,
      ...(body.name !== undefined ? { name: body.name } : {}),
      status: row.status as SandboxView["status"],
      ...(body.metadata !== undefined ? { metadata: body.metadata } : {}),
      createdAt: new Date(row.created_at).toISOString(),
      ...this.lifecycle(row, body),
      filesystemIncarnationReadiness: readiness.shown as SandboxView["filesystemIncarnationReadiness"],
      ...(row.error ? { error: row.error } : {}),
    };
  }

  /**
   * §2 lifecycle fields: `startedAt`, `lastActivityAt`, `expiresAt` [wire]; the create's limits
   * and the resources given [ours], left out under variant `sandboxLifecycle: "wire-only"`.
   */
  private lifecycle(row: SandboxRow, body: Limits): Partial<SandboxView> {
    const iso = (ms: number) => new Date(ms).toISOString();
    const expiresAt = this.expiresAt(row);
    const wire = {
      ...(row.started_at !== null ? { startedAt: iso(row.started_at) } : {}),
      lastActivityAt: iso(this.lastActivity(row)),
      ...(expiresAt !== null ? { expiresAt: iso(expiresAt) } : {}),
    };
    if (effectiveVariants(this.store.variants()).sandboxLifecycle === "wire-only") return wire;
    return {
      ...wire,
      ...(body.idleTimeoutSeconds !== undefined ? { idleTimeoutSeconds: body.idleTimeoutSeconds } : {}),
      ...(body.maxLifetimeSeconds !== undefined ? { maxLifetimeSeconds: body.maxLifetimeSeconds } : {}),
      resources: { ...DEFAULT_RESOURCES, ...body.resources },
    };
  }
}
