/**
 * Dispatching a turn and the exact control ref it answers (agent-provider-tangle, exact control
 * refs and request digests; Sandbox sessions, "Retry a turn without running it twice").
 *
 * - Detached and idempotent under the caller's execution id, which travels in the
 *   `X-Execution-ID` header and the body (a deployment that refuses it in the body is asked again
 *   without it).
 * - The admission must name that execution back or the dispatch fails closed. Where the admission
 *   carries the dispatch receipt's `dispatched`, it is read: `false` naming our run means it was
 *   found (in flight or ended), naming another run in flight means the session is busy.
 * - No admission in time: the run is looked up by its execution id in the session's state, and
 *   taken only when the session names exactly that execution.
 * - The dispatch stream is dropped once the admission arrives: the run's events are read by
 *   events.ts from the control ref.
 */
import { canonicalDigest, stripUndefined } from "../../lib/digest";
import { readSseFrames, type SseFrame } from "../../lib/sse";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { DispatchInput, DispatchReceipt } from "../provider";
import { type BackendDefaults, backendFor, backendWithoutBearer } from "./backend";
import { MAX_FRAME_BYTES } from "./frames";
import { readSessionState } from "./result";
import { sandboxRoutes as routes } from "./routes";
import type { BackendConfig } from "./wire";
import { refine } from "./wire-errors";

/** The `provider` coordinate of a Tangle control ref. */
export const TANGLE_PROVIDER_NAME = "tangle-sandbox";

export interface DispatchOptions extends BackendDefaults {
  client: HttpTransport;
  /** How long a dispatch stream may go without admitting the run before the run is looked up by its id. */
  admissionTimeoutMs: number;
  /** The workspace's root in the sandbox (`SANDBOX_WORKSPACE_ROOT`): an image part names its file under it. */
  workspaceRoot?: string;
}

/**
 * The prompt's parts [ours] (docs/sandbox-wire.md §10): its text, then each image the backend can
 * see as a file part naming the file in the workspace (`url: file://<absolute path>`), as the AI
 * SDK's file parts name theirs.
 */
function promptParts(options: DispatchOptions, input: DispatchInput) {
  const root = (options.workspaceRoot ?? "/home/agent").replace(/\/+$/, "");
  return [
    { type: "text" as const, text: input.message },
    ...(input.images ?? []).map((image) => ({
      type: "file" as const,
      mediaType: image.mediaType,
      filename: image.name,
      url: `file://${`${root}/${image.path}`.split("/").map(encodeURIComponent).join("/")}`,
    })),
  ];
}

async function requestDigest(input: DispatchInput, backend: BackendConfig): Promise<`sha256:${string}`> {
  return canonicalDigest(
    stripUndefined({
      provider: TANGLE_PROVIDER_NAME,
      environmentId: input.environmentId,
      sessionId: input.sessionId,
      executionId: input.executionId,
      turnId: input.turnId,
      prompt: input.message,
      images: input.images,
      model: input.model,
      interactions: input.interactions,
      backend: backendWithoutBearer(backend),
    }),
  );
}

export async function dispatchTurn(options: DispatchOptions, input: DispatchInput): Promise<DispatchReceipt> {
  // The stopped-then-resumed case needs the backend on the turn again (Sandbox sessions, resuming
  // a stopped sandbox); sending it on every turn keeps the request digest the same whichever case this is.
  const backend = backendFor(options, input.model, input.interactions, input.backend, input);
  // A deployment that refuses the body's executionId (it reads only the X-Execution-ID header)
  // says so: resend once without it (the execution id keeps both attempts the same run).
  try {
    return await dispatchWith(options, input, backend, true);
  } catch (err) {
    if (err instanceof ProviderError && err.code === "invalid_request" && err.message.includes("executionId"))
      return dispatchWith(options, input, backend, false);
    throw err;
  }
}

async function dispatchWith(
  options: DispatchOptions,
  input: DispatchInput,
  backend: BackendConfig,
  executionIdInBody: boolean,
): Promise<DispatchReceipt> {
  const body = stripUndefined({
    message: input.message,
    parts: promptParts(options, input),
    sessionId: input.sessionId,
    turnId: input.turnId,
    // Also in the X-Execution-ID header: a deployment that reads only the header may refuse it here.
    executionId: executionIdInBody ? input.executionId : undefined,
    // The exact run this dispatch asks for, where the capability document requires one.
    runControlRef: {
      runId: input.executionId,
      provider: TANGLE_PROVIDER_NAME,
      environmentId: input.environmentId,
      sessionId: input.sessionId,
      executionId: input.executionId,
    },
    detach: true,
    backend,
    // The posture travels in the backend and at the top level: deployments read one or the other.
    interactions: input.interactions,
  });
  const abort = new AbortController();
  const admissionTimer = setTimeout(() => abort.abort(new Error("no admission")), options.admissionTimeoutMs);
  const controlRef: AgentExactRunControlRef = {
    runId: input.executionId,
    provider: TANGLE_PROVIDER_NAME,
    environmentId: input.environmentId,
    sessionId: input.sessionId,
    executionId: input.executionId,
    requestDigest: await requestDigest(input, backend),
  };
  try {
    let response: Response;
    try {
      // Safe to retry: the execution id makes the dispatch idempotent upstream. The requested
      // execution id travels both in the X-Execution-ID header and in the body.
      response = await options.client.send(
        routes.runStream(input.environmentId),
        { body, headers: { "x-execution-id": input.executionId }, retry: true, stream: true, signal: abort.signal },
        "dispatch turn",
      );
    } catch (err) {
      if (abort.signal.aborted) return await lookUpUnadmitted(options, input, controlRef);
      throw refine(err);
    }
    try {
      for await (const frame of readSseFrames(options.client.reader(response), MAX_FRAME_BYTES + 64 * 1024)) {
        const admission = admissionOf(frame);
        if (admission === "refused") {
          throw new ProviderError("dispatch_refused", `the sandbox refused the turn: ${refusalOf(frame)}`);
        }
        if (admission) return receiptOf(admission, input.executionId, controlRef);
      }
    } catch (err) {
      // No admission in time (or a dispatch stream gone silent): the run may exist all the same.
      if (abort.signal.aborted || (err instanceof ProviderError && err.code === "timeout"))
        return await lookUpUnadmitted(options, input, controlRef);
      throw err;
    }
    throw new ProviderError("admission_missing", "the sandbox closed the dispatch stream without admitting the run", {
      retryable: true,
    });
  } finally {
    clearTimeout(admissionTimer);
  }
}

/**
 * No admission came in time. The run may have started all the same: look it up by its execution
 * id, and take it only when the session names exactly that execution; otherwise fail closed.
 */
async function lookUpUnadmitted(
  options: DispatchOptions,
  input: DispatchInput,
  controlRef: AgentExactRunControlRef,
): Promise<DispatchReceipt> {
  const state = await readSessionState(options.client, input.environmentId, input.sessionId).catch(() => null);
  if (state && (state.activeExecutionId === input.executionId || state.latestExecutionId === input.executionId)) {
    return { controlRef, alreadyExisted: false };
  }
  throw new ProviderError(
    "admission_missing",
    `the sandbox did not admit the run within ${options.admissionTimeoutMs} ms, and no run under its execution id exists`,
    {
      retryable: true,
    },
  );
}

/** What an admission frame says: the execution it names, and the dispatch receipt's fields where the deployment sends them. */
interface Admission {
  executionId: unknown;
  alreadyExisted?: unknown;
  /** false: this call started nothing (the run was in flight, or its turn had ended: Sandbox sessions, "Retry a turn without running it twice"). */
  dispatched?: unknown;
  /** The named run's status, where the receipt says it. */
  status?: unknown;
}

const RUN_ENDED = new Set(["completed", "success", "failed", "error", "cancelled"]);

/**
 * The admission a dispatch-stream frame carries: an `execution.started` frame (with or without the
 * session), or a `status` frame that names an execution (started, or any status when it carries
 * the receipt's `dispatched`); a refusal (`error`, `session.run.failed`); or nothing.
 */
function admissionOf(frame: SseFrame): Admission | "refused" | null {
  if (frame.data === undefined) return null;
  if (frame.event === "error" || frame.event === "session.run.failed") return "refused";
  if (frame.event !== "execution.started" && frame.event !== "status") return null;
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(frame.data) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof data !== "object" || data === null) return null;
  if (frame.event === "status") {
    const started = data.status === "started" || data.status === "queued" || data.status === "running";
    if (data.executionId === undefined || (!started && typeof data.dispatched !== "boolean")) return null;
  }
  return {
    executionId: data.executionId,
    alreadyExisted: data.alreadyExisted,
    dispatched: data.dispatched,
    status: data.status,
  };
}

/**
 * What the dispatch came to, read from its admission (Sandbox sessions: read `dispatched`). Our execution:
 * started now, or found (in flight, or ended: its events and result say how). `dispatched: false`
 * naming another execution: that run holds the session (busy), or the turn ended under another
 * run, which is never adopted (agent-provider-tangle, "Two capability documents": a receipt must name the execution back).
 */
function receiptOf(admission: Admission, executionId: string, controlRef: AgentExactRunControlRef): DispatchReceipt {
  const named = String(admission.executionId);
  if (admission.executionId === executionId)
    return { controlRef, alreadyExisted: admission.dispatched === false || admission.alreadyExisted === true };
  // The run named instead, in this same session: never adopted, but the session can stop it.
  // `earlier`: it was there before this call (an earlier dispatch's), not started by it.
  const admittedRef = { ...controlRef, runId: named, executionId: named };
  const earlier = admission.dispatched === false || admission.alreadyExisted === true;
  if (admission.dispatched === false) {
    if (typeof admission.status === "string" && RUN_ENDED.has(admission.status)) {
      throw new ProviderError(
        "admission_mismatch",
        `the sandbox says this turn already ended under execution ${named}, not the requested ${executionId}`,
        { details: { admittedRef, earlier } },
      );
    }
    throw new ProviderError(
      "session_busy",
      `the agent session is running another execution (${named}); nothing was dispatched`,
      { status: 409, retryable: true },
    );
  }
  // Fail closed: never adopt an execution we did not ask for (agent-provider-tangle, "Two capability documents").
  throw new ProviderError("admission_mismatch", `the sandbox admitted execution ${named} instead of ${executionId}`, {
    details: { admittedRef, earlier },
  });
}

function refusalOf(frame: SseFrame): string {
  try {
    const data = JSON.parse(frame.data ?? "{}") as { message?: unknown; error?: { message?: unknown } | string };
    const nested = typeof data.error === "object" && data.error !== null ? data.error.message : data.error;
    return String(data.message ?? nested ?? "no reason given");
  } catch {
    return "no reason given";
  }
}
