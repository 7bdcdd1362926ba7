/**
 * The emulator's control routes (`/_emulator/*`): not part of the Sandbox API. Tests, benchmarks
 * and developers read counters and runs, set faults and variants, and reset the emulator here.
 *
 * They take JSON only: a POST (or any call but GET/HEAD) whose content-type is not
 * `application/json` is refused with 415 before anything changes, so a cross-site form or a
 * text/plain post cannot reset or fault a developer's local emulator. Their errors are always
 * `{ error: { code, message } }`, whatever the error-body variant of the Sandbox API.
 */
import type { Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { z } from "zod";
import { EmulatorFaults } from "./faults";
import type { Runner } from "./runner";
import type { EmulatorStore } from "./store";
import type { StreamHub } from "./streams";
import type { Terminals } from "./terminals";
import type { Interactives } from "./tui";
import { EmulatorVariants, effectiveVariants } from "./variants";
import type { Workspace } from "./workspace";
import { resolvePath } from "./workspace-path";

export interface ControlDeps {
  store: EmulatorStore;
  runner: Runner;
  streams: StreamHub;
  workspace: Workspace;
  terminals: Terminals;
  interactives: Interactives;
}

const CONTROL_PATHS = {
  all: "/_emulator/*",
  counters: "/_emulator/counters",
  faults: "/_emulator/faults",
  variants: "/_emulator/variants",
  execution: "/_emulator/executions/:id",
  executionStream: "/_emulator/executions/:id/stream",
  sandbox: "/_emulator/sandboxes/:id",
  sandboxStatus: "/_emulator/sandboxes/:id/status",
  sandboxClock: "/_emulator/sandboxes/:id/clock",
  sandboxRun: "/_emulator/sandboxes/:id/runs",
  sandboxFiles: "/_emulator/sandboxes/:id/files",
  reset: "/_emulator/reset",
} as const;

const SandboxStatusBody = z.strictObject({ status: z.enum(["stopped", "failed", "expired", "deleted"]) });
const ResetBody = z.strictObject({});
/**
 * A run started directly (no gateway, no dispatch body): a session of the sandbox and the user
 * message its script is built from. The benchmarks' baseline for many runs at once.
 */
const SandboxRunBody = z.strictObject({
  sessionId: z.string().min(1).max(200),
  message: z.string().min(1).max(10_000),
});
/** Moves one sandbox's clock ahead: its times (and its runs') move back, as if that much time had passed for it. */
const SandboxClockBody = z.strictObject({ advanceSeconds: z.number().int().positive() });
/** Writes one file of a sandbox directly (a test's setup): text, or bytes in base64. */
const SandboxFileBody = z.strictObject({
  path: z.string().min(1),
  content: z.string(),
  encoding: z.enum(["utf8", "base64"]).optional(),
});

/** Whether a content-type header names exactly `application/json` (parameters such as charset allowed). */
function isJsonMediaType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  return contentType.split(";")[0]!.trim().toLowerCase() === "application/json";
}

function controlError(c: Context, status: number, code: string, message: string): Response {
  return c.json({ error: { code, message } }, status as ContentfulStatusCode);
}

async function body(c: Context): Promise<unknown> {
  return c.req.json().catch(() => undefined);
}

export function registerControlRoutes(app: Hono, deps: ControlDeps): void {
  const { store, runner, streams, workspace, terminals, interactives } = deps;

  app.use(CONTROL_PATHS.all, async (c, next) => {
    if (c.req.method !== "GET" && c.req.method !== "HEAD" && !isJsonMediaType(c.req.header("content-type"))) {
      return controlError(c, 415, "UNSUPPORTED_MEDIA_TYPE", "control routes take application/json bodies only");
    }
    await next();
  });

  app.get(CONTROL_PATHS.counters, (c) => c.json({ counters: store.counters(), openStreams: streams.openCount() }));

  app.get(CONTROL_PATHS.faults, (c) => c.json({ faults: store.faults() }));
  app.post(CONTROL_PATHS.faults, async (c) => {
    const parsed = EmulatorFaults.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_FAULTS", z.prettifyError(parsed.error));
    store.setFaults(parsed.data);
    return c.json({ faults: parsed.data });
  });

  app.get(CONTROL_PATHS.variants, (c) => {
    const set = store.variants();
    return c.json({ variants: set, effective: effectiveVariants(set) });
  });
  app.post(CONTROL_PATHS.variants, async (c) => {
    const parsed = EmulatorVariants.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_VARIANTS", z.prettifyError(parsed.error));
    store.setVariants(parsed.data);
    return c.json({ variants: parsed.data, effective: effectiveVariants(parsed.data) });
  });

  app.get(CONTROL_PATHS.execution, (c) => {
    const exe = store.execution(c.req.param("id"));
    if (!exe) return controlError(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
    return c.json({
      id: exe.id,
      sandboxId: exe.sandbox_id,
      sessionId: exe.session_id,
      turnId: exe.turn_id,
      status: exe.status,
      request: exe.request ? (JSON.parse(exe.request) as unknown) : null,
      // §5 PromptResult once the run ended (whatever the variants let the Sandbox API show), else null.
      result: exe.status === "running" ? null : runner.promptResult(exe),
    });
  });

  // The raw frames of one execution, as the Sandbox would replay them: the benchmarks' baseline.
  app.get(CONTROL_PATHS.executionStream, (c) => {
    const exe = store.execution(c.req.param("id"));
    if (!exe) return controlError(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
    return streams.open(exe, { cursor: Number(c.req.query("after") ?? 0) || 0 });
  });

  app.get(CONTROL_PATHS.sandbox, (c) => {
    const row = store.sandbox(c.req.param("id"));
    if (!row) return controlError(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    return c.json({
      id: row.id,
      status: row.status,
      idempotencyKey: row.idempotency_key,
      body: JSON.parse(row.body) as unknown,
    });
  });

  app.post(CONTROL_PATHS.sandboxStatus, async (c) => {
    const parsed = SandboxStatusBody.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_STATUS", z.prettifyError(parsed.error));
    const id = c.req.param("id");
    const status = parsed.data.status;
    store.setSandboxStatus(id, status);
    // Its terminals end with it (whatever the status: none of them runs a shell).
    terminals.sandboxEnded(id);
    if (status === "deleted") store.files.drop(id);
    if (status === "stopped") runner.sandboxStopped(id);
    else {
      // The sandbox is gone (deleted, failed, expired): its runs die with it, with no terminal
      // frame; their live streams just close.
      for (const exe of store.runningExecutions(id)) runner.finish(exe, "failed", { error: `sandbox ${status}` });
      runner.schedule();
    }
    return c.json({ ok: true });
  });

  app.post(CONTROL_PATHS.sandboxClock, async (c) => {
    const parsed = SandboxClockBody.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_CLOCK", z.prettifyError(parsed.error));
    const id = c.req.param("id");
    if (!store.sandbox(id)) return controlError(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    store.ageSandbox(id, parsed.data.advanceSeconds * 1000);
    return c.json({ ok: true });
  });

  // A run started on a running sandbox without the Sandbox API's dispatch, answered with its raw
  // stream from its first frame (its admission) to its end: what the emulator alone costs for a
  // turn, the benchmarks' baseline for many turns at once (bench/agents.mjs).
  app.post(CONTROL_PATHS.sandboxRun, async (c) => {
    const parsed = SandboxRunBody.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_RUN", z.prettifyError(parsed.error));
    const sb = store.sandbox(c.req.param("id"));
    if (!sb) return controlError(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    if (sb.status !== "running") return controlError(c, 409, "SANDBOX_NOT_RUNNING", `sandbox is ${sb.status}`);
    if (store.runningExecutions(sb.id, parsed.data.sessionId)[0])
      return controlError(c, 409, "SESSION_BUSY", `session ${parsed.data.sessionId} has a run in flight`);
    const created = JSON.parse(sb.body) as { backend?: { type?: string } };
    store.count("runs.direct");
    const exe = runner.start({
      sandboxId: sb.id,
      sessionId: parsed.data.sessionId,
      message: parsed.data.message,
      backend: created.backend?.type ?? "opencode",
      request: parsed.data,
    });
    return streams.open(exe, { cursor: 0 });
  });

  // A sandbox's file read or written directly, for tests: the bytes as they are, or a write of text or base64.
  app.get(CONTROL_PATHS.sandboxFiles, (c) => {
    const id = c.req.param("id");
    if (!store.sandbox(id)) return controlError(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    const resolved = resolvePath(c.req.query("path") ?? "");
    if (!resolved.ok) return controlError(c, 400, "INVALID_PATH", resolved.reason);
    const bytes = workspace.read(id, resolved.rel);
    if (!bytes) return controlError(c, 404, "FILE_NOT_FOUND", "no such file");
    return new Response(bytes, { headers: { "content-type": "application/octet-stream" } });
  });
  app.post(CONTROL_PATHS.sandboxFiles, async (c) => {
    const parsed = SandboxFileBody.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_FILE", z.prettifyError(parsed.error));
    const id = c.req.param("id");
    if (!store.sandbox(id)) return controlError(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    const resolved = resolvePath(parsed.data.path);
    if (!resolved.ok) return controlError(c, 400, "INVALID_PATH", resolved.reason);
    const why = workspace.unwritable(id, resolved.rel);
    if (why) return controlError(c, 400, "INVALID_PATH", why.message);
    const { content, encoding } = parsed.data;
    let bytes: Uint8Array;
    try {
      bytes =
        encoding === "base64"
          ? Uint8Array.from(atob(content), (ch) => ch.charCodeAt(0))
          : new TextEncoder().encode(content);
    } catch {
      return controlError(c, 400, "INVALID_FILE", "content is not base64");
    }
    workspace.write(id, resolved.rel, bytes);
    return c.json({ ok: true, size: bytes.length });
  });

  app.post(CONTROL_PATHS.reset, async (c) => {
    const parsed = ResetBody.safeParse(await body(c));
    if (!parsed.success) return controlError(c, 400, "INVALID_BODY", "reset takes an empty JSON object: {}");
    store.reset();
    streams.closeAll();
    runner.clear();
    terminals.clear();
    interactives.clear();
    return c.json({ ok: true });
  });
}

/** The error answer of an unknown control path. */
export function controlNotFound(c: Context): Response {
  return controlError(c, 404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`);
}
