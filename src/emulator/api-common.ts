/**
 * What the Sandbox API's routes share: the route table, the error answers in the error-body
 * variant in force, and the check every runtime route makes first (its sandbox is running, and
 * this call is its use). The middleware and the order the routes are registered in are
 * ./sandbox-api.ts.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import type { Runner } from "./runner";
import type { Sandboxes } from "./sandboxes";
import type { EmulatorStore } from "./store";
import type { SandboxRow } from "./store-schema";
import type { StreamHub } from "./streams";
import type { Terminals } from "./terminals";
import type { Interactives } from "./tui";
import { effectiveVariants, errorBody, type Variants } from "./variants";
import type { SandboxView } from "./wire";
import type { Workspace } from "./workspace";

export interface SandboxApiDeps {
  store: EmulatorStore;
  sandboxes: Sandboxes;
  runner: Runner;
  streams: StreamHub;
  workspace: Workspace;
  terminals: Terminals;
  interactives: Interactives;
}

/**
 * The route table: every path the emulator serves of the Sandbox API, in one place. Each group's
 * handlers are in one file: §2 ./api-control-plane.ts; §3 the capability document
 * ./api-capabilities.ts, a run (start, attach, replay, interrupt, result) ./api-runs.ts, the
 * sessions (list, state, fork, delete) ./api-sessions.ts, the asks (interactions and plan
 * decisions) ./api-interactions.ts; the workspace's files (after `/runtime`) ./api-files.ts and its
 * snapshots ./api-snapshots.ts (§10); the terminal (§12) ./api-terminals.ts.
 */
export const API_PATHS = {
  sandboxes: "/v1/sandboxes",
  sandbox: "/v1/sandboxes/:id",
  resume: "/v1/sandboxes/:id/resume",
  stop: "/v1/sandboxes/:id/stop",
  accountUsage: "/v1/account/usage",
  backends: "/v1/backends",
  capabilities: "/v1/sandboxes/:id/runtime/capabilities",
  runStream: "/v1/sandboxes/:id/runtime/agents/run/stream",
  sessions: "/v1/sandboxes/:id/runtime/agents/sessions",
  session: "/v1/sandboxes/:id/runtime/agents/sessions/:sid",
  abort: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/abort",
  fork: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/fork",
  interactions: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/interactions",
  planApprove: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/plan/approve",
  planReject: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/plan/reject",
  completedTurn: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/turns/:turnId",
  executionResult: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/executions/:eid/result",
  fsList: "/v1/sandboxes/:id/runtime/fs/list/*",
  fsStat: "/v1/sandboxes/:id/runtime/fs/stat/*",
  fsDownload: "/v1/sandboxes/:id/runtime/fs/download/*",
  fsDownloadDir: "/v1/sandboxes/:id/runtime/fs/download-dir/*",
  fsUpload: "/v1/sandboxes/:id/runtime/fs/upload",
  filesRead: "/v1/sandboxes/:id/runtime/files/read",
  snapshot: "/v1/sandboxes/:id/snapshot",
  snapshots: "/v1/sandboxes/:id/snapshots",
  snapshotOne: "/v1/sandboxes/:id/snapshots/:sid",
  snapshotDiff: "/v1/sandboxes/:id/snapshots/:sid/diff",
  snapshotRestore: "/v1/sandboxes/:id/snapshots/:sid/restore",
  terminalSocket: "/v1/sidecar-proxy/:id/terminals/:cid/ws",
  terminal: "/v1/sidecar-proxy/:id/terminals/:tid",
  runtimeTerminals: "/v1/sandboxes/:id/runtime/terminals/*",
  interactive: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/interactive",
  interactiveControl: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/interactive/control",
  interactiveStop: "/v1/sandboxes/:id/runtime/agents/sessions/:sid/interactive/stop",
} as const;

/** The store and the rooms the routes act through, with the answers and checks every route uses. */
export interface ApiKit extends SandboxApiDeps {
  /** The variants in force. */
  variants(): Variants;
  /** An error answer, in the error-body variant in force. */
  fail(
    c: Context,
    status: number,
    code: string,
    message: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Response;
  /** A 400 for a body its schema refused, the schema's message as the error's. */
  invalid(c: Context, code: string, error: z.ZodError): Response;
  /** The 404 of an unknown sandbox. */
  notFound(c: Context): Response;
  /** The sandbox of a runtime route, which must be running; an error answer if it is not. */
  runningSandbox(c: Context): SandboxRow | Response;
  /** A sandbox as the API shows it. */
  view(row: SandboxRow): SandboxView;
}

export function apiKit(deps: SandboxApiDeps): ApiKit {
  const { store, sandboxes } = deps;
  const variants = (): Variants => effectiveVariants(store.variants());
  const fail = (
    c: Context,
    status: number,
    code: string,
    message: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) => c.json(errorBody(variants(), code, message, extra), status as ContentfulStatusCode, headers);
  const invalid = (c: Context, code: string, error: z.ZodError) => fail(c, 400, code, z.prettifyError(error));
  const notFound = (c: Context) => fail(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
  const runningSandbox = (c: Context): SandboxRow | Response => {
    const row = sandboxes.get(c.req.param("id") ?? "");
    if (!row) return notFound(c);
    if (row.status !== "running") return fail(c, 409, "SANDBOX_NOT_RUNNING", `sandbox is ${row.status}`);
    // A runtime call is the sandbox's use: its idle timeout counts from here.
    sandboxes.touch(row);
    return row;
  };
  const view = (row: SandboxRow): SandboxView => sandboxes.view(row);
  return { ...deps, variants, fail, invalid, notFound, runningSandbox, view };
}

/** The request's JSON body, or `orElse` when it has none or it is not JSON. */
export async function jsonBody(c: Context, orElse?: unknown): Promise<unknown> {
  return c.req.json().catch(() => orElse);
}

/** The error answer of an unknown path under the Sandbox API (in the error-body variant in force). */
export function apiNotFound(store: EmulatorStore, c: Context): Response {
  return c.json(
    errorBody(effectiveVariants(store.variants()), "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`),
    404,
  );
}
