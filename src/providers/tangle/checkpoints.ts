/**
 * The workspace's checkpoints over the Sandbox's snapshots (docs/sandbox-wire.md §10): a snapshot
 * taken under an idempotency key, two states compared, a restore in place, a release. What the
 * session is told follows seed 000's rule: an answer without its explicit outcome (a snapshot
 * without `idempotency`, a restore without `outcome`, a delete answered 204) is `unknown`, as is a
 * call nothing answered; a route the deployment does not have (404 without a code, 501) is
 * `unavailable`. The snapshot path and `tags` are [wire]; the key and its outcome [sdk]; the
 * compare, restore and delete routes [ours], in ./routes.ts.
 */
import { z } from "zod";
import type {
  CheckpointRelease,
  CheckpointTaken,
  RestoreOutcome,
  WorkspaceCheckpoints,
  WorkspaceDiff,
} from "../checkpoints";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import { sandboxRoutes as routes } from "./routes";

const Snapshot = z.looseObject({
  snapshotId: z.string().min(1),
  createdAt: z.union([z.string(), z.number()]).optional(),
  sizeBytes: z.number().nonnegative().optional(),
  idempotency: z.looseObject({ outcome: z.string() }).optional(),
});
const SnapshotAnswer = z.union([z.looseObject({ data: Snapshot }).transform((v) => v.data), Snapshot]);

const FileChange = z.looseObject({
  path: z.string().min(1),
  status: z.enum(["added", "modified", "deleted", "renamed"]),
  from: z.string().optional(),
  sizeBefore: z.number().nonnegative().optional(),
  sizeAfter: z.number().nonnegative().optional(),
  binary: z.boolean().optional(),
  diff: z.string().optional(),
});
const Diff = z.looseObject({ files: z.array(FileChange), truncated: z.boolean().optional() });
const DiffAnswer = z.union([z.looseObject({ data: Diff }).transform((v) => v.data), Diff]);

const Outcome = z.looseObject({ outcome: z.string().optional(), restoredAt: z.string().optional() });
const OutcomeAnswer = z.union([z.looseObject({ data: Outcome }).transform((v) => v.data), Outcome]);

/**
 * Whether a failure says the route itself is missing (an older deployment), not a thing it names: a
 * 501, or a 404 without a code or with the generic one an unknown route answers (`NOT_FOUND`).
 */
function routeMissing(err: ProviderError): boolean {
  const code = err.options.wireCode?.toUpperCase();
  return err.status === 501 || (err.status === 404 && (code === undefined || code === "NOT_FOUND"));
}

function wireCode(err: ProviderError): string | undefined {
  return err.options.wireCode?.toUpperCase();
}

function isoOf(value: string | number | undefined): string {
  if (value === undefined) return new Date().toISOString();
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString();
}

/** An answer's body as text, or "" (a 204 has none). */
async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export class TangleCheckpoints implements WorkspaceCheckpoints {
  constructor(private readonly client: HttpTransport) {}

  async take(environmentId: string, request: { key: string; tags: string[] }): Promise<CheckpointTaken> {
    try {
      const answer = await this.client.json(
        routes.snapshot(environmentId),
        SnapshotAnswer,
        // Retried: the key makes a repeat the same snapshot.
        { body: { tags: request.tags, idempotencyKey: request.key }, retry: true },
        "take a checkpoint",
      );
      const outcome = answer.idempotency?.outcome;
      if (outcome !== "created" && outcome !== "replayed")
        return {
          status: "unknown",
          message: "the snapshot was answered without saying it was taken under this key (no idempotency outcome)",
        };
      return {
        status: outcome,
        snapshotId: answer.snapshotId,
        createdAt: isoOf(answer.createdAt),
        ...(answer.sizeBytes !== undefined ? { sizeBytes: answer.sizeBytes } : {}),
      };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      if (routeMissing(err))
        return { status: "unavailable", message: `this deployment takes no snapshots (${err.status})` };
      if (wireCode(err) === "IDEMPOTENCY_CONFLICT")
        return { status: "conflict", message: "the checkpoint's key was used for another snapshot" };
      // A refusal before anything was done (not running, bad request, a failure the service names).
      if (err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429)
        return { status: "failed", message: err.message };
      if (err.code === "invalid_response") return { status: "unknown", message: err.message };
      if (wireCode(err) === "SNAPSHOT_FAILED") return { status: "failed", message: err.message };
      return { status: "unknown", message: err.message };
    }
  }

  async diff(environmentId: string, from: string, to: string | "live", maxBytes: number): Promise<WorkspaceDiff> {
    try {
      const answer = await this.client.json(
        routes.snapshotDiff(environmentId, from),
        DiffAnswer,
        { query: { to, maxBytes: String(maxBytes) }, retry: true },
        "compare checkpoints",
      );
      return {
        status: "ok",
        files: answer.files.map((f) => ({
          path: f.path,
          status: f.status,
          ...(f.from !== undefined ? { from: f.from } : {}),
          ...(f.sizeBefore !== undefined ? { sizeBefore: f.sizeBefore } : {}),
          ...(f.sizeAfter !== undefined ? { sizeAfter: f.sizeAfter } : {}),
          binary: f.binary === true,
          ...(f.diff !== undefined && f.binary !== true ? { diff: f.diff } : {}),
        })),
        truncated: answer.truncated === true,
      };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      if (routeMissing(err))
        return { status: "unavailable", message: `this deployment cannot compare checkpoints (${err.status})` };
      return { status: "failed", message: err.message };
    }
  }

  async restore(environmentId: string, snapshotId: string, operationId: string): Promise<RestoreOutcome> {
    let response: Response;
    try {
      response = await this.client.send(
        routes.snapshotRestore(environmentId, snapshotId),
        { body: { operationId }, retry: true },
        "restore a checkpoint",
      );
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      const code = wireCode(err);
      if (code === "SANDBOX_BUSY" || code === "SESSION_BUSY")
        return { status: "busy", message: "a run is in flight in the environment" };
      if (code === "SNAPSHOT_NOT_FOUND") return { status: "not_found", message: "the checkpoint is gone" };
      if (code === "IDEMPOTENCY_CONFLICT")
        return { status: "conflict", message: "the operation id was used for another restore" };
      if (routeMissing(err))
        return { status: "unavailable", message: `this deployment cannot restore in place (${err.status})` };
      if (err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429)
        return { status: "unknown", message: `the restore was refused without a known reason: ${err.message}` };
      return { status: "unknown", message: err.message };
    }
    const parsed = OutcomeAnswer.safeParse(await bodyOf(response));
    const outcome = parsed.success ? parsed.data.outcome : undefined;
    if (outcome !== "restored" && outcome !== "replayed")
      return { status: "unknown", message: "the restore was answered without an outcome" };
    const restoredAt = parsed.success ? parsed.data.restoredAt : undefined;
    return { status: outcome, ...(restoredAt ? { restoredAt } : {}) };
  }

  async release(environmentId: string, snapshotId: string): Promise<CheckpointRelease> {
    let response: Response;
    try {
      response = await this.client.send(
        routes.snapshotDelete(environmentId, snapshotId),
        { retry: true },
        "release a checkpoint",
      );
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      // A snapshot the service no longer has, or a sandbox gone with its snapshots: released.
      const code = wireCode(err);
      if (err.status === 404 && (code === "SNAPSHOT_NOT_FOUND" || code === "SANDBOX_NOT_FOUND"))
        return "already_absent";
      return "unknown";
    }
    const parsed = OutcomeAnswer.safeParse(await bodyOf(response));
    const outcome = parsed.success ? parsed.data.outcome : undefined;
    return outcome === "deleted" || outcome === "already_absent" ? outcome : "unknown";
  }
}
