/**
 * The Tangle Sandbox provider (seed 000) over the Sandbox HTTP API.
 *
 * - ensureEnvironment: one sandbox per owner, created under an idempotency key, handed over only
 *   once it reports running with a ready filesystem; a stopped one is resumed, a gone one (404)
 *   or a failed/expired one is replaced. Whether a create made the sandbox or found it is read
 *   (the answer's status and the owner's create ledger), and only one this call created is
 *   deleted when it cannot be brought up.
 * - dispatch: detached and idempotent under the caller's execution id; the admission must name
 *   that execution back or the dispatch fails closed. Where the admission carries the dispatch
 *   receipt's `dispatched` (Sandbox sessions, "Retry a turn without running it twice"), it is
 *   read: `false` naming our run means it was found (in flight or ended), naming another run in
 *   flight means the session is busy.
 * - events: exact replay of one execution strictly after a cursor, then live frames.
 */
import { canonicalDigest, stripUndefined } from "../../lib/digest";
import { readSseFrames, type SseFrame } from "../../lib/sse";
import type { AgentExactRunControlRef, InteractionRequest } from "../../schemas/contracts";
import type { Claims } from "../claims";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type {
  AgentProvider,
  AnswerDelivery,
  CancelOutcome,
  CreateLedger,
  DispatchInput,
  DispatchReceipt,
  EnsureEnvironmentInput,
  EnsureEnvironmentResult,
  EnvironmentRecord,
  EventsOptions,
  InteractionCommand,
  ProviderEvent,
  ProviderResult,
} from "../provider";
import { claimsOf } from "./claims";
import { MAX_FRAME_BYTES, normalizeFrame, receiptCounts, SANDBOX_PROVENANCE } from "./frames";
import { sandboxRoutes as routes } from "./routes";
import { AbortResponse, AnswerResponse, PromptResult, Sandbox, SandboxCapabilities, SessionStateResponse, type BackendConfig } from "./wire";

const TANGLE_PROVIDER_NAME = "tangle-sandbox";

export interface TangleProviderOptions {
  client: HttpTransport;
  backend: string;
  model?: string;
  git?: { url: string; ref?: string };
  readyTimeoutMs: number;
  /** How long a dispatch stream may go without admitting the run before the run is looked up by its id. */
  admissionTimeoutMs: number;
  readyPollMs: number;
}

/** Removes bearer material so a rotated credential is the same request (seed 000). */
function backendWithoutBearer(backend: BackendConfig | undefined): unknown {
  if (!backend?.model) return backend;
  const { apiKey: _dropped, authFiles, ...model } = backend.model;
  return { ...backend, model: { ...model, ...(authFiles ? { authFiles: authFiles.map((f) => ({ path: f.path, mode: f.mode })) } : {}) } };
}

/**
 * A model route as the backend's `model` object (agent-provider-tangle, "Per-turn backend
 * options"): a `provider/model` route splits at its first slash (`anthropic/claude-sonnet-4` →
 * `{ provider: "anthropic", model: "claude-sonnet-4" }`); a model without one is `{ model }`.
 */
function backendModel(route: string): NonNullable<BackendConfig["model"]> {
  const slash = route.indexOf("/");
  return slash > 0 && slash < route.length - 1 ? { provider: route.slice(0, slash), model: route.slice(slash + 1) } : { model: route };
}

/** Running with a ready filesystem; a readiness value this client does not know is not ready. */
function isReady(sandbox: Sandbox): boolean {
  return sandbox.status === "running" && (sandbox.filesystemIncarnationReadiness === undefined || sandbox.filesystemIncarnationReadiness === "ready");
}



const TERMINAL_SANDBOX_STATUSES = new Set(["failed", "stopped", "expired", "deleted"]);
/** How many keys answering a dead sandbox another call made one create call steps past. */
const DEAD_KEYS_SKIPPED = 3;

export class TangleProvider implements AgentProvider {
  readonly name = TANGLE_PROVIDER_NAME;

  constructor(private readonly options: TangleProviderOptions) {
  }

  private get client(): HttpTransport {
    return this.options.client;
  }

  backendFor(model: string | undefined, interactions?: DispatchInput["interactions"]): BackendConfig {
    const chosen = model ?? this.options.model;
    return { type: this.options.backend, ...(chosen ? { model: backendModel(chosen) } : {}), ...(interactions ? { interactions } : {}) };
  }

  // ------------------------------------------------------------ environment

  /** GET a sandbox; null when it is gone (404). */
  private async getSandbox(id: string): Promise<Sandbox | null> {
    try {
      return await this.client.json(routes.getSandbox(id), Sandbox, { retry: true }, "read sandbox");
    } catch (err) {
      if (err instanceof ProviderError && err.code === "not_found") return null;
      throw err;
    }
  }

  /** Polls until the sandbox is running with a ready filesystem; on failure deletes it only when this call created it. */
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
        const readiness = sandbox.filesystemIncarnationReadiness;
        reason = `it was still ${sandbox.status}${sandbox.status === "running" ? ` with its filesystem ${readiness === "transitioning" ? "transitioning" : `reporting "${readiness}"`}` : ""} after ${this.options.readyTimeoutMs} ms`;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, this.options.readyPollMs));
    }
    if (createdNow) {
      await this.client.send(routes.deleteSandbox(id), { retry: true }, "delete unusable sandbox").catch(() => undefined);
    }
    const left = createdNow ? "" : " (it is left in place: this call did not create it, or cannot prove it did)";
    throw new ProviderError("environment_unavailable", `the sandbox could not be brought up: ${reason}${left}`, { retryable: true });
  }

  /**
   * Reads the sandbox's capability document into the record. A failed read fails nothing else
   * (seed 000) and is reported as a warning; it keeps the document read before it, if any (a
   * transport failure is no evidence that the deployment changed), else claims nothing.
   */
  private async readCapabilities(id: string, previous: EnvironmentRecord["capabilities"]): Promise<Pick<EnvironmentRecord, "capabilities" | "capabilitiesCheckedAt" | "warnings">> {
    const capabilitiesCheckedAt = new Date().toISOString();
    try {
      const doc = await this.client.json(routes.capabilities(id), SandboxCapabilities, { retry: true }, "read capability document");
      return { capabilities: doc, capabilitiesCheckedAt, warnings: [] };
    } catch (err) {
      return { capabilities: previous, capabilitiesCheckedAt, warnings: [`capability document unavailable: ${err instanceof Error ? err.message : String(err)}`] };
    }
  }

  async ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
    const { known, ownerKey } = input;
    const reread = async (record: EnvironmentRecord) => ({ ...record, ...(await this.readCapabilities(record.environmentId, record.capabilities)) });
    let generation = 1;
    if (known) {
      const sandbox = await this.getSandbox(known.environmentId);
      if (sandbox) {
        if (isReady(sandbox)) {
          // Asked to, or no document was read yet (a failed read claimed nothing): the sandbox runs, so read it.
          if (known.capabilities === null || input.rereadCapabilities) return { record: await reread(known), outcome: "existing" };
          return { record: known, outcome: "existing" };
        }
        // A sandbox that was stopped or not yet ready may come back on another deployment: its
        // document is read again once it is ready.
        if (sandbox.status === "stopped") {
          await this.client.json(routes.resumeSandbox(known.environmentId), Sandbox, { retry: true }, "resume sandbox");
          await this.waitReady(known.environmentId, false);
          return { record: await reread({ ...known, readyAt: new Date().toISOString() }), outcome: "resumed" };
        }
        // pending, provisioning, running-not-ready, or a status we do not know: wait for ready.
        if (!TERMINAL_SANDBOX_STATUSES.has(sandbox.status)) {
          await this.waitReady(known.environmentId, false);
          return { record: await reread(known), outcome: "existing" };
        }
        // failed / expired / deleted: replace it. The old one is ours; remove what is left of it.
        await this.client.send(routes.deleteSandbox(known.environmentId), { retry: true }, "delete failed sandbox").catch(() => undefined);
      }
      generation = known.generation + 1;
    }

    return this.createEnvironment(ownerKey, generation, input.ledger);
  }

  /**
   * Creates the owner's sandbox under the generation's idempotency key and brings it up. Whether
   * this call created it is read, never assumed (agent-interface, idempotent create): only a fresh
   * create (201, where a replay answers 200) under a key no earlier call sent proves it, and only
   * a sandbox this call created is deleted when it cannot be brought up. A key whose bring-up
   * failed is not used again; one that answers a dead sandbox another call made is left alone for
   * the next key.
   */
  private async createEnvironment(ownerKey: string, first: number, ledger: EnsureEnvironmentInput["ledger"]): Promise<EnsureEnvironmentResult> {
    let state: CreateLedger = ledger?.state ?? { sent: 0, failed: 0 };
    const write = (next: CreateLedger) => {
      state = next;
      ledger?.write(next);
    };
    let generation = Math.max(first, state.failed + 1);
    for (let attempt = 1; ; attempt++) {
      const sentBefore = generation <= state.sent;
      // Written before the create goes out: after a crash the key is known as sent.
      if (!sentBefore) write({ ...state, sent: generation });
      const body = stripUndefined({
        name: `chat-${ownerKey.slice(0, 24)}`,
        backend: this.backendFor(undefined),
        git: this.options.git,
        metadata: { createdBy: "agent-chat-gateway", owner: ownerKey },
        idempotencyKey: `${ownerKey}:g${generation}`,
      });
      const { data: sandbox, status } = await this.client.answer(routes.createSandbox(), Sandbox, { body, retry: true }, "create sandbox");
      const createdHere = status === 201 && !sentBefore;
      if (!createdHere && TERMINAL_SANDBOX_STATUSES.has(sandbox.status) && attempt <= DEAD_KEYS_SKIPPED) {
        write({ ...state, failed: Math.max(state.failed, generation) });
        generation++;
        continue;
      }
      try {
        if (!isReady(sandbox)) await this.waitReady(sandbox.id, createdHere);
      } catch (err) {
        if (err instanceof ProviderError && err.code === "environment_unavailable") write({ ...state, failed: Math.max(state.failed, generation) });
        throw err;
      }
      const record: EnvironmentRecord = { environmentId: sandbox.id, generation, readyAt: new Date().toISOString(), ...(await this.readCapabilities(sandbox.id, null)) };
      return { record, outcome: createdHere ? "created" : "found" };
    }
  }

  /** The record's document decides; `ensureEnvironment` is what reads it again. */
  async claimsFor(environment: EnvironmentRecord): Promise<Claims> {
    return claimsOf(environment.capabilities);
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
    const backend = this.backendFor(input.model, input.interactions);
    // A deployment that refuses the body's executionId (it reads only the X-Execution-ID header)
    // says so: resend once without it (the execution id keeps both attempts the same run).
    try {
      return await this.dispatchWith(input, backend, true);
    } catch (err) {
      if (err instanceof ProviderError && err.code === "invalid_request" && err.message.includes("executionId")) return this.dispatchWith(input, backend, false);
      throw err;
    }
  }

  private async dispatchWith(input: DispatchInput, backend: BackendConfig, executionIdInBody: boolean): Promise<DispatchReceipt> {
    const body = stripUndefined({
      message: input.message,
      parts: [{ type: "text" as const, text: input.message }],
      sessionId: input.sessionId,
      turnId: input.turnId,
      // Also in the X-Execution-ID header: a deployment that reads only the header may refuse it here.
      executionId: executionIdInBody ? input.executionId : undefined,
      // The exact run this dispatch asks for, where the capability document requires one.
      runControlRef: { runId: input.executionId, provider: this.name, environmentId: input.environmentId, sessionId: input.sessionId, executionId: input.executionId },
      detach: true,
      backend,
      // The posture travels in the backend and at the top level: deployments read one or the other.
      interactions: input.interactions,
    });
    const abort = new AbortController();
    const admissionTimer = setTimeout(() => abort.abort(new Error("no admission")), this.options.admissionTimeoutMs);
    const requestDigest = await this.requestDigest(input, backend);
    const controlRef: AgentExactRunControlRef = {
      runId: input.executionId,
      provider: this.name,
      environmentId: input.environmentId,
      sessionId: input.sessionId,
      executionId: input.executionId,
      requestDigest,
    };
    try {
      let response: Response;
      try {
        // Safe to retry: the execution id makes the dispatch idempotent upstream. The requested
        // execution id travels both in the X-Execution-ID header and in the body.
        response = await this.client.send(
          routes.runStream(input.environmentId),
          { body, headers: { "x-execution-id": input.executionId }, retry: true, stream: true, signal: abort.signal },
          "dispatch turn",
        );
      } catch (err) {
        if (abort.signal.aborted) return await this.lookUpUnadmitted(input, controlRef);
        throw refine(err);
      }
      try {
        for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES + 64 * 1024)) {
          const admission = admissionOf(frame);
          if (admission === "refused") {
            throw new ProviderError("dispatch_refused", `the sandbox refused the turn: ${refusalOf(frame)}`);
          }
          if (admission) return receiptOf(admission, input.executionId, controlRef);
        }
      } catch (err) {
        // No admission in time (or a dispatch stream gone silent): the run may exist all the same.
        if (abort.signal.aborted || (err instanceof ProviderError && err.code === "timeout")) return await this.lookUpUnadmitted(input, controlRef);
        throw err;
      }
      throw new ProviderError("admission_missing", "the sandbox closed the dispatch stream without admitting the run", { retryable: true });
    } finally {
      clearTimeout(admissionTimer);
    }
  }

  /**
   * No admission came in time. The run may have started all the same: look it up by its execution
   * id, and take it only when the session names exactly that execution; otherwise fail closed.
   */
  private async lookUpUnadmitted(input: DispatchInput, controlRef: AgentExactRunControlRef): Promise<DispatchReceipt> {
    const state = await this.sessionState(input.environmentId, input.sessionId).catch(() => null);
    if (state && (state.activeExecutionId === input.executionId || state.latestExecutionId === input.executionId)) {
      return { controlRef, alreadyExisted: false };
    }
    throw new ProviderError("admission_missing", `the sandbox did not admit the run within ${this.options.admissionTimeoutMs} ms, and no run under its execution id exists`, {
      retryable: true,
    });
  }

  /** The agent session's state (`{ data: { session } }`, or the inner object flat on older deployments). */
  private async sessionState(environmentId: string, sessionId: string) {
    return this.client.json(routes.sessionState(environmentId, sessionId), SessionStateResponse, { retry: true }, "read session state");
  }

  async *events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    const cursor = options.after ?? "0";
    let response: Response;
    try {
      response = await this.client.send(
        routes.runStream(ref.environmentId),
        {
          body: { message: "", sessionId: ref.sessionId },
          headers: { "x-execution-id": ref.executionId, "last-event-id": cursor },
          retry: true,
          stream: true,
          signal: options.signal,
        },
        "replay run events",
      );
    } catch (err) {
      throw refine(err, cursor);
    }
    // A plan may wait for its decision as a `status: awaiting_plan_decision` after `plan.submitted`,
    // with no interaction frame: it becomes an ask, answered through the plan routes.
    let plan: SubmittedPlan | undefined;
    for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES + 64 * 1024)) {
      const event = normalizeFrame(frame, { requireId: true });
      if (!event) continue;
      if (event.kind === "passthrough" && event.shown.type === "plan.submitted") plan = submittedPlan(event.shown.data.plan) ?? plan;
      if (plan && event.kind === "passthrough" && event.shown.type === "status" && rawStatus(frame) === "awaiting_plan_decision") {
        yield { kind: "interaction.requested", upstreamId: event.upstreamId, request: planAsk(plan), shown: event.shown };
        continue;
      }
      yield event;
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
      // The result's usage is the run's receipt, as on a terminal frame; one reporting no counter says nothing.
      const receipt = receiptCounts(result.usage, result.costUsd);
      return {
        status,
        ...(result.response !== undefined ? { text: result.response } : {}),
        ...(status === "failed" ? { error: { message: result.error ?? "the run failed", ...(result.errorCode ? { code: result.errorCode } : {}) } } : {}),
        ...(Object.keys(receipt).length > 0 ? { receipt, receiptProvenance: SANDBOX_PROVENANCE } : {}),
      };
    } catch (err) {
      // 409: not finished yet.
      if (err instanceof ProviderError && err.code === "conflict") return null;
      // No result route (it is this project's reading of the API): settle from the session state.
      if (err instanceof ProviderError && err.code === "not_found") return this.resultFromSessionState(ref);
      throw refine(err);
    }
  }

  /**
   * How the exact execution stands by its session's state, where the result route is missing:
   * still active → not settled; the session no longer runs it → it ended, but how (success,
   * failure, cancellation) only a result could say: an unknown outcome, never a success.
   */
  private async resultFromSessionState(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    const state = await this.sessionState(ref.environmentId, ref.sessionId);
    if (state.activeExecutionId === ref.executionId) return null;
    // Running, without saying what: nothing can be told yet.
    if (!state.activeExecutionId && state.state === "running") return null;
    return {
      status: "unknown",
      error: { message: "the sandbox no longer runs this execution, and this deployment has no result route to say how it ended" },
    };
  }

  async cancel(ref: AgentExactRunControlRef): Promise<CancelOutcome> {
    try {
      const answer = await this.client.json(
        routes.abort(ref.environmentId, ref.sessionId),
        AbortResponse,
        // Naming the execution makes the abort exact and safe to repeat. The wire has no field for
        // a reason: the session keeps it.
        { body: { executionId: ref.executionId }, retry: true },
        "cancel run",
      );
      const why = answer.reason ?? answer.noopReason;
      return { effect: answer.cancelled ? "cancelled" : "not_live", ...(why ? { reason: why } : {}) };
    } catch (err) {
      // 404: the platform does not know the session, so nothing runs there to cancel.
      if (err instanceof ProviderError && err.code === "not_found") return { effect: "not_live", reason: "unknown_session" };
      throw err;
    }
  }

  async respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    if (isPlanAsk(command.request)) return this.decidePlan(ref, command);
    const body = stripUndefined({ id: command.binding.interactionId, outcome: command.outcome, data: command.data });
    try {
      // Not retried here: whether a repeat is safe depends on the deployment recording answers
      // (interactions.responseDedupe), which the session checks before answering.
      const response = await this.client.send(routes.answerInteraction(ref.environmentId, ref.sessionId), { body }, "answer interaction");
      // A 2xx is delivery; a deployment that says the same answer was already recorded is told apart.
      const answer = AnswerResponse.safeParse(await response.json().catch(() => null));
      return { status: answer.success && answer.data.data?.status === "already_resolved_same" ? "already_resolved_same" : "accepted" };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      if (err.code === "conflict") return { status: "already_resolved_different", message: "the deployment already holds a different answer" };
      if (err.code === "not_found" && err.options.wireCode?.toUpperCase() === "SESSION_NOT_FOUND") {
        return { status: "unknown_run", message: "the deployment no longer knows this session" };
      }
      if (err.code === "not_found") return { status: "unknown_interaction", message: "the deployment no longer knows this interaction" };
      if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
      // The deployment does not take answers at all: that is a refusal, not a failure to retry.
      if (err.code === "capability_denied") throw err.as("capability_denied", "this deployment does not take interaction answers (501)");
      // Delivery is unconfirmed: never `accepted`.
      return { status: "transport_failure", message: `delivery could not be confirmed: ${err.message}`, retryable: true };
    }
  }

  /** A plan decided through the plan routes: approve, or reject with feedback (a revised plan follows). */
  private async decidePlan(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    const decision = command.outcome === "accepted" && command.data?.decision === "approve" ? "approve" : "reject";
    const feedback = typeof command.data?.feedback === "string" ? command.data.feedback : undefined;
    try {
      await this.client.send(routes.planDecision(ref.environmentId, ref.sessionId, decision), { body: decision === "reject" && feedback ? { feedback } : {} }, "decide plan");
      return { status: "accepted" };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      if (err.code === "not_found") return { status: "unknown_interaction", message: "the deployment no longer waits for this plan decision" };
      if (err.code === "conflict") return { status: "already_resolved_different", message: "the plan was already decided" };
      if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
      if (err.code === "capability_denied") throw err.as("capability_denied", "this deployment does not take plan decisions (501)");
      return { status: "transport_failure", message: `delivery could not be confirmed: ${err.message}`, retryable: true };
    }
  }

  async deleteSession({ environmentId, sessionId }: { environmentId: string; sessionId: string }): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(routes.deleteSession(environmentId, sessionId), { retry: true }, "delete session");
        return;
      } catch (err) {
        const refined = refine(err);
        // Gone with its sandbox: nothing is left to delete.
        if (refined instanceof ProviderError && (refined.code === "not_found" || refined.code === "environment_gone")) return;
        // A stopped sandbox holds the session still: resume it, then delete (once).
        if (attempt === 1 && refined instanceof ProviderError && refined.code === "environment_not_running") {
          await this.client.json(routes.resumeSandbox(environmentId), Sandbox, { retry: true }, "resume sandbox");
          await this.waitReady(environmentId, false);
          continue;
        }
        throw refined;
      }
    }
  }
}

interface SubmittedPlan {
  id: string;
  revision: number;
  title?: string;
  body: string;
}

const PLAN_ASK_PREFIX = "plan:";

function submittedPlan(value: unknown): SubmittedPlan | undefined {
  const p = value as Partial<SubmittedPlan> | undefined;
  return p && typeof p.id === "string" && typeof p.revision === "number" && typeof p.body === "string" ? { id: p.id, revision: p.revision, body: p.body, ...(p.title ? { title: p.title } : {}) } : undefined;
}

function rawStatus(frame: SseFrame): unknown {
  try {
    return (JSON.parse(frame.data ?? "{}") as { status?: unknown }).status;
  } catch {
    return undefined;
  }
}

/** The ask a plan waiting for its decision becomes (the same form a `plan` interaction has). */
function planAsk(plan: SubmittedPlan): InteractionRequest {
  return {
    id: `${PLAN_ASK_PREFIX}${plan.id}:r${plan.revision}`,
    kind: "plan",
    title: plan.title ? `Approve the plan "${plan.title}" (revision ${plan.revision})?` : `Approve plan revision ${plan.revision}?`,
    body: plan.body,
    subject: { planId: plan.id, revision: plan.revision },
    answerSpec: {
      fields: [
        { name: "decision", type: "select", label: "Decision", options: ["approve", "reject"], required: true },
        { name: "feedback", type: "text", label: "Feedback for a revised plan" },
      ],
    },
  };
}

function isPlanAsk(request: InteractionRequest): boolean {
  return request.kind === "plan" && request.id.startsWith(PLAN_ASK_PREFIX) && request.binding === undefined;
}

/** The Sandbox's own error codes, as provider error codes. */
function refine(err: unknown, cursor?: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  const wire = err.options.wireCode?.toUpperCase();
  if (wire === "SESSION_BUSY") return err.as("session_busy", "the agent session is already running a turn");
  if (wire === "SANDBOX_NOT_RUNNING") return err.as("environment_not_running", "the sandbox is not running", { retryable: true });
  if (wire === "SANDBOX_NOT_FOUND") return err.as("environment_gone", "the sandbox is gone", { retryable: false });
  if (wire === "INVALID_CURSOR") {
    const last = Number(err.options.details?.lastEventId);
    const ahead = cursor !== undefined && Number.isFinite(last) && Number(cursor) > last;
    return err.as(ahead ? "cursor_ahead" : "cursor_expired", err.message, { retryable: false });
  }
  if (err.code === "not_found" && cursor === undefined) return err.as("environment_gone", "the sandbox is gone", { retryable: true });
  return err;
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
  return { executionId: data.executionId, alreadyExisted: data.alreadyExisted, dispatched: data.dispatched, status: data.status };
}

/**
 * What the dispatch came to, read from its admission (Sandbox sessions: read `dispatched`). Our execution:
 * started now, or found (in flight, or ended: its events and result say how). `dispatched: false`
 * naming another execution: that run holds the session (busy), or the turn ended under another
 * run, which is never adopted (agent-provider-tangle, "Two capability documents": a receipt must name the execution back).
 */
function receiptOf(admission: Admission, executionId: string, controlRef: AgentExactRunControlRef): DispatchReceipt {
  const named = String(admission.executionId);
  if (admission.executionId === executionId) return { controlRef, alreadyExisted: admission.dispatched === false || admission.alreadyExisted === true };
  // The run named instead, in this same session: never adopted, but the session can stop it.
  // `earlier`: it was there before this call (an earlier dispatch's), not started by it.
  const admittedRef = { ...controlRef, runId: named, executionId: named };
  const earlier = admission.dispatched === false || admission.alreadyExisted === true;
  if (admission.dispatched === false) {
    if (typeof admission.status === "string" && RUN_ENDED.has(admission.status)) {
      throw new ProviderError("admission_mismatch", `the sandbox says this turn already ended under execution ${named}, not the requested ${executionId}`, { details: { admittedRef, earlier } });
    }
    throw new ProviderError("session_busy", `the agent session is running another execution (${named}); nothing was dispatched`, { status: 409, retryable: true });
  }
  // Fail closed: never adopt an execution we did not ask for (agent-provider-tangle, "Two capability documents").
  throw new ProviderError("admission_mismatch", `the sandbox admitted execution ${named} instead of ${executionId}`, { details: { admittedRef, earlier } });
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
