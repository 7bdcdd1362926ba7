/**
 * The Tangle Sandbox provider (seed 000) over the Sandbox HTTP API.
 *
 * - ensureEnvironment: one sandbox per owner, created under an idempotency key, handed over only
 *   once it reports running with a ready filesystem; a stopped one is resumed, a gone one (404)
 *   or a failed/expired one is replaced, and one we created but could not bring up is deleted
 *   before the error surfaces.
 * - dispatch: detached and idempotent under the caller's execution id; the admission must name
 *   that execution back or the dispatch fails closed.
 * - events: exact replay of one execution strictly after a cursor, then live frames.
 */
import { canonicalDigest, stripUndefined } from "../../lib/digest";
import { readSseFrames } from "../../lib/sse";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { AbortResponse, PromptResult, Sandbox, SandboxCapabilities, type BackendConfig } from "../../schemas/sandbox-wire";
import { InteractionRequest } from "../../schemas/contracts";
import { z } from "zod";
import { UpstreamError } from "../errors";
import type {
  AgentProvider,
  CancelOutcome,
  InteractionAnswer,
  DispatchInput,
  DispatchReceipt,
  EnsureEnvironmentInput,
  EnsureEnvironmentResult,
  EnvironmentRecord,
  EventsOptions,
  ProviderEvent,
  ProviderResult,
} from "../provider";
import type { SandboxClient } from "./client";
import { MAX_FRAME_BYTES, normalizeFrame } from "./frames";
import { sandboxRoutes as routes } from "./routes";

export const TANGLE_PROVIDER_NAME = "tangle-sandbox";

export interface TangleProviderOptions {
  client: SandboxClient;
  backend: string;
  model?: string;
  git?: { url: string; ref?: string };
  readyTimeoutMs: number;
  readyPollMs: number;
  sleep?: (ms: number) => Promise<void>;
}

/** Removes bearer material so a rotated credential is the same request (seed 000). */
export function backendWithoutBearer(backend: BackendConfig | undefined): unknown {
  if (!backend || typeof backend.model !== "object") return backend;
  const { apiKey: _dropped, authFiles, ...model } = backend.model;
  return { ...backend, model: { ...model, ...(authFiles ? { authFiles: authFiles.map((f) => ({ path: f.path, mode: f.mode })) } : {}) } };
}

function isReady(sandbox: Sandbox): boolean {
  return sandbox.status === "running" && (sandbox.filesystemIncarnationReadiness === undefined || sandbox.filesystemIncarnationReadiness === "ready");
}

const TERMINAL_SANDBOX_STATUSES = new Set(["failed", "stopped", "expired", "deleted"]);

export class TangleProvider implements AgentProvider {
  readonly name = TANGLE_PROVIDER_NAME;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: TangleProviderOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  private get client(): SandboxClient {
    return this.options.client;
  }

  backendFor(model: string | undefined): BackendConfig {
    const chosen = model ?? this.options.model;
    return { type: this.options.backend, ...(chosen ? { model: chosen } : {}) };
  }

  // ------------------------------------------------------------ environment

  /** GET a sandbox; null when it is gone (404). */
  private async getSandbox(id: string): Promise<Sandbox | null> {
    try {
      return await this.client.json(routes.getSandbox(id), Sandbox, { retry: true }, "read sandbox");
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 404) return null;
      throw err;
    }
  }

  /** Polls until the sandbox is running with a ready filesystem; deletes it on failure when we created it. */
  private async waitReady(id: string, createdNow: boolean): Promise<void> {
    const deadline = Date.now() + this.options.readyTimeoutMs;
    let reason: string;
    while (true) {
      const sandbox = await this.getSandbox(id);
      if (!sandbox) {
        reason = "it disappeared (404) while starting";
        break;
      }
      if (isReady(sandbox)) return;
      if (TERMINAL_SANDBOX_STATUSES.has(sandbox.status)) {
        const detail = typeof sandbox.error === "string" ? `: ${sandbox.error}` : "";
        reason = `it reported ${sandbox.status}${detail}`;
        break;
      }
      if (Date.now() >= deadline) {
        reason = `it was still ${sandbox.status}${sandbox.status === "running" ? " with its filesystem transitioning" : ""} after ${this.options.readyTimeoutMs} ms`;
        break;
      }
      await this.sleep(this.options.readyPollMs);
    }
    if (createdNow) {
      await this.client.send(routes.deleteSandbox(id), { retry: true }, "delete unusable sandbox").catch(() => undefined);
    }
    throw new UpstreamError(502, "environment_unavailable", `the sandbox could not be brought up: ${reason}`, true);
  }

  private async readCapabilities(id: string): Promise<{ capabilities: Record<string, unknown> | null; warnings: string[] }> {
    try {
      const doc = await this.client.json(routes.capabilities(id), SandboxCapabilities, { retry: true }, "read capability document");
      return { capabilities: doc, warnings: [] };
    } catch (err) {
      // A failed read claims nothing and fails nothing else (seed 000): report it as a warning.
      return { capabilities: null, warnings: [`capability document unavailable: ${err instanceof Error ? err.message : String(err)}`] };
    }
  }

  async ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
    const { known, ownerKey } = input;
    let generation = 1;
    if (known) {
      const sandbox = await this.getSandbox(known.environmentId);
      if (sandbox) {
        if (isReady(sandbox)) {
          // A document that could not be read claimed nothing; the sandbox runs now, so ask again.
          if (known.capabilities === null) return { record: { ...known, ...(await this.readCapabilities(known.environmentId)) }, outcome: "existing" };
          return { record: known, outcome: "existing" };
        }
        if (sandbox.status === "stopped") {
          await this.client.json(routes.resumeSandbox(known.environmentId), Sandbox, { retry: true }, "resume sandbox");
          await this.waitReady(known.environmentId, false);
          return { record: { ...known, readyAt: new Date().toISOString() }, outcome: "resumed" };
        }
        // pending, provisioning, running-not-ready, or a status we do not know: wait for ready.
        if (!TERMINAL_SANDBOX_STATUSES.has(sandbox.status)) {
          await this.waitReady(known.environmentId, false);
          return { record: known, outcome: "existing" };
        }
        // failed / expired / deleted: replace it. The old one is ours; remove what is left of it.
        await this.client.send(routes.deleteSandbox(known.environmentId), { retry: true }, "delete failed sandbox").catch(() => undefined);
      }
      generation = known.generation + 1;
    }

    const body = stripUndefined({
      name: `chat-${ownerKey.slice(0, 24)}`,
      backend: this.backendFor(undefined),
      git: this.options.git,
      metadata: { createdBy: "agent-chat-gateway", owner: ownerKey },
      idempotencyKey: `${ownerKey}:g${generation}`,
    });
    const created = await this.client.json(routes.createSandbox(), Sandbox, { body, retry: true }, "create sandbox");
    if (!isReady(created)) await this.waitReady(created.id, true);
    const { capabilities, warnings } = await this.readCapabilities(created.id);
    const record: EnvironmentRecord = { environmentId: created.id, generation, capabilities, warnings, readyAt: new Date().toISOString() };
    return { record, outcome: "created" };
  }

  // ------------------------------------------------------------ runs

  async requestDigest(input: DispatchInput, backend: BackendConfig): Promise<`sha256:${string}`> {
    return canonicalDigest(
      stripUndefined({
        provider: this.name,
        environmentId: input.environmentId,
        sessionId: input.sessionId,
        executionId: input.executionId,
        turnId: input.turnId,
        prompt: input.message,
        model: input.model,
        interactions: input.interactions,
        backend: backendWithoutBearer(backend),
      }),
    );
  }

  async dispatch(input: DispatchInput): Promise<DispatchReceipt> {
    // The stopped-then-resumed case needs the backend on the turn again (seed 004); sending it on
    // every turn keeps the request digest the same whichever case this is.
    const backend = this.backendFor(input.model);
    const body = stripUndefined({
      message: input.message,
      parts: [{ type: "text" as const, text: input.message }],
      sessionId: input.sessionId,
      turnId: input.turnId,
      executionId: input.executionId,
      detach: true,
      backend,
      interactions: input.interactions,
    });
    let response: Response;
    try {
      // Safe to retry: the execution id makes the dispatch idempotent upstream.
      response = await this.client.send(routes.runStream(input.environmentId), { body, retry: true, stream: true }, "dispatch turn");
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 404) {
        throw new UpstreamError(404, "environment_gone", "the sandbox is gone", true);
      }
      if (err instanceof UpstreamError && err.code === "sandbox_not_running") {
        throw new UpstreamError(409, "environment_not_running", "the sandbox is not running", true);
      }
      throw err;
    }
    const requestDigest = await this.requestDigest(input, backend);
    for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES + 64 * 1024)) {
      const event = normalizeFrame(frame, { requireId: false });
      if (!event) continue;
      if (event.type === "execution.started") {
        const admitted = event.data.executionId;
        if (admitted !== input.executionId) {
          // Fail closed: never adopt an execution we did not ask for (seed 000).
          throw new UpstreamError(502, "admission_mismatch", `the sandbox admitted execution ${String(admitted)} instead of ${input.executionId}`, false);
        }
        const controlRef: AgentExactRunControlRef = {
          runId: input.executionId,
          provider: this.name,
          environmentId: input.environmentId,
          sessionId: input.sessionId,
          executionId: input.executionId,
          requestDigest,
        };
        return { controlRef, alreadyExisted: event.data.alreadyExisted === true };
      }
      if (event.type === "error") {
        throw new UpstreamError(502, "dispatch_refused", `the sandbox refused the turn: ${String(event.data.message)}`, false);
      }
    }
    throw new UpstreamError(502, "admission_missing", "the sandbox closed the dispatch stream without admitting the run", true);
  }

  async *events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    const response = await this.client.send(
      routes.runStream(ref.environmentId),
      {
        body: { message: "", sessionId: ref.sessionId },
        headers: { "x-execution-id": ref.executionId, "last-event-id": options.after ?? "0" },
        retry: true,
        stream: true,
        signal: options.signal,
      },
      "replay run events",
    );
    for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES + 64 * 1024)) {
      const event = normalizeFrame(frame, { requireId: true });
      if (event) yield event;
    }
  }

  async result(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    try {
      const result = await this.client.json(
        routes.executionResult(ref.environmentId, ref.sessionId, ref.executionId),
        PromptResult,
        { retry: true },
        "read run result",
      );
      const status = result.status === "success" ? "completed" : result.status === "cancelled" ? "cancelled" : result.status === "failed" ? "failed" : null;
      if (status === null) return null; // awaiting a person: not terminal
      return {
        status,
        ...(result.response !== undefined ? { text: result.response } : {}),
        ...(status === "failed" ? { error: { message: result.error ?? "the run failed", ...(result.errorCode ? { code: result.errorCode } : {}) } } : {}),
      };
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 409) return null;
      throw err;
    }
  }

  async cancel(ref: AgentExactRunControlRef, reason?: string): Promise<CancelOutcome> {
    try {
      const answer = await this.client.json(
        routes.abort(ref.environmentId, ref.sessionId),
        AbortResponse,
        // Naming the execution makes the abort exact and safe to repeat.
        { body: stripUndefined({ executionId: ref.executionId, reason }), retry: true },
        "cancel run",
      );
      return { cancelled: answer.data.cancelled, ...(answer.data.reason ? { reason: answer.data.reason } : {}) };
    } catch (err) {
      // 404: the platform does not know the session, so nothing runs there to cancel.
      if (err instanceof UpstreamError && err.status === 404) return { cancelled: false, reason: "unknown_session" };
      throw err;
    }
  }

  async interactions(ref: AgentExactRunControlRef): Promise<InteractionRequest[]> {
    const schema = z.looseObject({ data: z.looseObject({ interactions: z.array(InteractionRequest) }) });
    const answer = await this.client.json(routes.interactions(ref.environmentId, ref.sessionId), schema, { retry: true }, "list interactions");
    return answer.data.interactions;
  }

  async respondToInteraction(ref: AgentExactRunControlRef, answer: InteractionAnswer): Promise<void> {
    // Not retried here: whether a repeat is safe depends on the deployment recording answers
    // (interactions.responseDedupe), which the caller checks.
    await this.client.send(routes.answerInteraction(ref.environmentId, ref.sessionId), { body: stripUndefined(answer) }, "answer interaction");
  }

  async deleteSession(environmentId: string, sessionId: string): Promise<void> {
    try {
      await this.client.send(routes.deleteSession(environmentId, sessionId), { retry: true }, "delete session");
    } catch (err) {
      if (err instanceof UpstreamError && err.status === 404) return;
      throw err;
    }
  }
}
