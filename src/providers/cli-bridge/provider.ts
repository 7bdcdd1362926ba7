/**
 * The CLI Bridge provider (seed 003) over a CLI Bridge server's HTTP API (docs/cli-bridge-wire.md).
 *
 * - Which transport: the turn's model route's capability document decides. Where the bridge proves
 *   retained control and native continuation (Pi today), the conversation is a retained native
 *   session (`/v1/sessions`, then `/turns` with caller-stable run, turn and execution ids);
 *   otherwise each turn is a one-shot run (`/v1/chat/completions`, stream, a stable `X-Run-Id`,
 *   and the conversation's `session_id` so the CLI conversation continues).
 * - Exact control: the control ref is the server's (the `X-Run-*` headers, or the run object of a
 *   retained turn), digest included; a run that already exists must be the one planned.
 * - Reading: `GET /v1/runs/:runId/events` after a cursor; a finish is provisional until the run
 *   snapshot says terminal.
 * - Cancelling a retained run ends its bridge session: the next turn opens a new one, and the
 *   conversation is told that the agent's memory starts afresh.
 */
import { canonicalDigest, stripUndefined } from "../../lib/digest";
import { readSseFrames } from "../../lib/sse";
import { InteractionAcknowledgement, type AgentExactRunControlRef, type InteractionRequest } from "../../schemas/contracts";
import { capabilityReadDue, DEFAULT_CAPABILITY_RECHECK_MS, type Claims } from "../claims";
import { ProviderError } from "../errors";
import type { HttpTransport, Route } from "../http";
import type {
  AgentProvider,
  AnswerDelivery,
  CancelOutcome,
  DispatchInput,
  DispatchReceipt,
  EnsureEnvironmentInput,
  EnsureEnvironmentResult,
  EnvironmentRecord,
  EventsOptions,
  InteractionCommand,
  ProviderEvent,
  ProviderResult,
  TerminalStatus,
} from "../provider";
import { ChunkStream } from "./chunks";
import { bridgeClaims, supportsRetainedSessions } from "./claims";
import { readEnvelope } from "./envelopes";
import { CancelAnswer, CapabilityDocument, RespondAnswer, RunSnapshot, SessionView, TurnAccepted } from "./wire";

const PROVIDER_NAME = "cli-bridge";
/** The bridge names its one environment so (`X-Run-Environment-Id`). */
const ENVIRONMENT_ID = "cli-bridge";
const MAX_FRAME_BYTES = 1024 * 1024 + 64 * 1024;
/**
 * A route's capability document read this recently is reused (concurrent reads share one request);
 * sooner, a turn that lacks a claim reads it again once it is `capabilityRecheckMs` old.
 */
const DISCOVERY_TTL_MS = 10_000;
/** How long one snapshot read waits for a run to become terminal, and how often it is asked. */
const TERMINAL_WAIT_MS = 5_000;
const TERMINAL_CHECKS = 3;
/** How long a cancel waits for the bridge to confirm the run terminal. */
const CANCEL_WAIT_MS = 2_000;
/** A retained session after the first one is the conversation's session id with this suffix and its generation. */
const GENERATION_MARK = "~g";
/** A retained session in one of these takes no more turns: the conversation continues in a new one. */
const ENDED_SESSION_STATES = new Set(["cancelled", "closed", "failed", "error", "expired"]);

const enc = encodeURIComponent;
const routes = {
  capabilities: (): Route => ({ method: "GET", path: "/v1/capabilities" }),
  chat: (): Route => ({ method: "POST", path: "/v1/chat/completions" }),
  run: (runId: string): Route => ({ method: "GET", path: `/v1/runs/${enc(runId)}` }),
  runEvents: (runId: string): Route => ({ method: "GET", path: `/v1/runs/${enc(runId)}/events` }),
  cancel: (runId: string): Route => ({ method: "POST", path: `/v1/runs/${enc(runId)}/cancel` }),
  respond: (runId: string, interactionId: string): Route => ({ method: "POST", path: `/v1/runs/${enc(runId)}/interactions/${enc(interactionId)}/respond` }),
  createSession: (): Route => ({ method: "POST", path: "/v1/sessions" }),
  turns: (sessionId: string): Route => ({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/turns` }),
  closeSession: (sessionId: string): Route => ({ method: "POST", path: `/v1/sessions/${enc(sessionId)}/close` }),
  session: (sessionId: string): Route => ({ method: "GET", path: `/v1/sessions/${enc(sessionId)}` }),
};

export interface CliBridgeProviderOptions {
  transport: HttpTransport;
  /** The default model route (`CLI_BRIDGE_MODEL`); a turn's `model` overrides it. */
  model?: string;
  /** The `defaultExecution` object, forwarded unchanged. */
  execution?: Record<string, unknown>;
  /** The working directory on the bridge host. */
  cwd?: string;
  /** `CAPABILITIES_RECHECK_MS`: how old a route's document must be before a missing claim reads it again. */
  capabilityRecheckMs?: number;
}

type Doc = Record<string, unknown>;

function snapshotStatus(status: string): TerminalStatus | null {
  if (status === "done" || status === "completed") return "completed";
  if (status === "cancelled") return "cancelled";
  if (status === "error" || status === "failed") return "failed";
  return null;
}

/** The bridge's own error codes, as provider error codes. */
function refine(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  switch (err.options.wireCode) {
    case "run_identity_conflict":
      return err.as("run_identity_conflict", err.message);
    case "invalid_replay_cursor":
      return err.as("cursor_ahead", err.message, { retryable: false });
    case "expired_replay_cursor":
      return err.as("cursor_expired", err.message, { retryable: false });
    default:
      return err.code === "unauthorized" ? err.as("unauthorized", "the CLI Bridge refused the gateway's bearer token (authentication failed)") : err;
  }
}

export class CliBridgeProvider implements AgentProvider {
  readonly name = PROVIDER_NAME;
  private readonly discovery = new Map<string, { at: number; doc: Promise<Doc | null> }>();

  constructor(private readonly options: CliBridgeProviderOptions) {}

  private get http(): HttpTransport {
    return this.options.transport;
  }

  private modelFor(model: string | undefined): string {
    const chosen = model ?? this.options.model;
    if (!chosen) throw new ProviderError("model_invalid", "no model route for this turn: send `model`, or set CLI_BRIDGE_MODEL (e.g. codex/default)");
    return chosen;
  }

  /**
   * The route's capability document; null when the bridge denies discovery for it. Shared while
   * fresh; `claimMissing` reads it again sooner (`capabilityReadDue`).
   */
  private capabilities(model: string, claimMissing = false): Promise<Doc | null> {
    const known = this.discovery.get(model);
    const bounds = { maxAgeMs: DISCOVERY_TTL_MS, recheckMs: this.options.capabilityRecheckMs ?? DEFAULT_CAPABILITY_RECHECK_MS };
    if (known && !capabilityReadDue(known.at, Date.now(), bounds, claimMissing)) return known.doc;
    const doc = this.http
      .json(routes.capabilities(), CapabilityDocument, { query: { model }, retry: true }, "read capabilities")
      .catch((err: unknown) => {
        if (err instanceof ProviderError && err.code === "capability_denied") return null;
        if (err instanceof ProviderError && err.code === "not_found") throw new ProviderError("model_invalid", `the CLI Bridge offers no model route ${model}`, err.options);
        throw refine(err);
      });
    this.discovery.set(model, { at: Date.now(), doc });
    doc.catch(() => this.discovery.delete(model));
    return doc;
  }

  async ensureEnvironment({ known }: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
    // The bridge is one shared environment that provisions nothing; what a turn may do is read per model route.
    if (known) return { record: known, outcome: "existing" };
    return { record: { environmentId: ENVIRONMENT_ID, generation: 1, capabilities: null, warnings: [], readyAt: new Date().toISOString() }, outcome: "created" };
  }

  async claimsFor(_environment: EnvironmentRecord, model?: string, options?: { recheck?: boolean }): Promise<Claims> {
    return bridgeClaims(await this.capabilities(this.modelFor(model), options?.recheck));
  }

  // ------------------------------------------------------------------ dispatch

  async dispatch(input: DispatchInput): Promise<DispatchReceipt> {
    const model = this.modelFor(input.model);
    const doc = await this.capabilities(model);
    const runId = input.executionId;
    // A run under this id already exists (a retried dispatch): it must be exactly the one planned.
    const existing = await this.snapshot(runId).catch((err: unknown) => {
      if (err instanceof ProviderError && err.code === "not_found") return null;
      throw err;
    });
    if (existing && ((existing.executionId && existing.executionId !== input.executionId) || (existing.sessionId && !this.isOurSession(existing.sessionId, input.sessionId)))) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge holds run ${runId} for another session or execution`);
    }
    const receipt = supportsRetainedSessions(doc) ? await this.dispatchRetained(input, model, runId) : await this.dispatchOneShot(input, model, runId);
    if (existing?.requestDigest && existing.requestDigest !== receipt.controlRef.requestDigest) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge answered run ${runId} with another request digest than the run it holds`);
    }
    return { ...receipt, alreadyExisted: existing !== null };
  }

  private isOurSession(bridgeSessionId: string, sessionId: string): boolean {
    return bridgeSessionId === sessionId || bridgeSessionId.startsWith(`${sessionId}${GENERATION_MARK}`);
  }

  private async dispatchOneShot(input: DispatchInput, model: string, runId: string): Promise<DispatchReceipt> {
    const body = stripUndefined({
      model,
      stream: true,
      messages: [{ role: "user", content: input.message }],
      session_id: input.sessionId,
      run_id: runId,
      cwd: this.options.cwd,
      execution: this.options.execution,
      // Only an empty posture can reach a one-shot run (its route claims no interaction kind).
      interactions: input.interactions,
    });
    let response: Response;
    try {
      // Safe to retry: the same run id and body attach to the same run.
      response = await this.http.send(routes.chat(), { body, headers: { "x-run-id": runId }, stream: true, retry: true }, "start run");
    } catch (err) {
      throw refine(err);
    }
    // The run is the bridge's now; this reader detaches (the one upstream reader re-attaches by id).
    response.body?.cancel().catch(() => undefined);
    const h = (name: string) => response.headers.get(name) ?? undefined;
    const ref = {
      runId: h("x-run-id"),
      provider: h("x-run-provider"),
      environmentId: h("x-run-environment-id"),
      sessionId: h("x-run-session-id"),
      executionId: h("x-run-execution-id"),
      requestDigest: h("x-run-request-digest"),
    };
    if (!ref.runId || !ref.provider || !ref.environmentId || !ref.sessionId || !ref.executionId || !ref.requestDigest) {
      throw new ProviderError("admission_missing", "the CLI Bridge started the run without the X-Run-* headers that identify it exactly", { retryable: false });
    }
    if (ref.runId !== runId || ref.sessionId !== input.sessionId) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge admitted run ${ref.runId} in session ${ref.sessionId} instead of ${runId}`);
    }
    return { controlRef: ref as AgentExactRunControlRef, alreadyExisted: false };
  }

  private async dispatchRetained(input: DispatchInput, model: string, runId: string): Promise<DispatchReceipt> {
    const previous = input.previous?.provider === PROVIDER_NAME && this.isOurSession(input.previous.sessionId, input.sessionId) ? input.previous.sessionId : undefined;
    let bridgeSessionId = previous ?? input.sessionId;
    if (!previous) await this.openSession(bridgeSessionId, model);
    let notice: DispatchReceipt["notice"];
    let run;
    try {
      run = await this.startTurn(bridgeSessionId, input, runId);
    } catch (err) {
      if (!(err instanceof ProviderError && err.options.wireCode === "invalid_state")) throw err;
      // The session takes no turn now: busy with one (wait for it), or ended by a cancel or a close
      // (continue in a new one). Its own view says which.
      const session = await this.http.json(routes.session(bridgeSessionId), SessionView, { retry: true }, "read session").catch(() => null);
      if (session && !ENDED_SESSION_STATES.has(session.status)) throw err.as("session_busy", "the agent session is already running a turn");
      bridgeSessionId = nextGeneration(bridgeSessionId, input.sessionId);
      await this.openSession(bridgeSessionId, model);
      run = await this.startTurn(bridgeSessionId, input, runId);
      notice = { code: "agent_memory_reset", message: "the agent's previous session ended (it was stopped); this turn starts a new one, without the earlier conversation in its memory" };
    }
    if (run.id !== runId || (run.executionId !== undefined && run.executionId !== input.executionId)) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge admitted run ${run.id} instead of ${runId}`);
    }
    if (!run.requestDigest) throw new ProviderError("admission_missing", "the CLI Bridge admitted the turn without its request digest");
    const controlRef: AgentExactRunControlRef = {
      runId: run.id,
      provider: run.provider ?? PROVIDER_NAME,
      environmentId: run.environmentId ?? ENVIRONMENT_ID,
      sessionId: run.sessionId ?? bridgeSessionId,
      executionId: run.executionId ?? input.executionId,
      requestDigest: run.requestDigest,
    };
    return { controlRef, alreadyExisted: false, ...(notice ? { notice } : {}) };
  }

  private async openSession(bridgeSessionId: string, model: string): Promise<void> {
    const body = stripUndefined({ session_id: bridgeSessionId, model, cwd: this.options.cwd, execution: this.options.execution });
    try {
      await this.http.send(routes.createSession(), { body, retry: true }, "open session");
    } catch (err) {
      // Already open (a retried dispatch, or an earlier turn in this generation): continue it.
      if (err instanceof ProviderError && err.code === "conflict" && err.options.wireCode !== "invalid_state") return;
      throw refine(err);
    }
  }

  private async startTurn(bridgeSessionId: string, input: DispatchInput, runId: string) {
    const body = stripUndefined({ message: input.message, run_id: runId, turn_id: input.turnId, execution_id: input.executionId, interactions: input.interactions });
    try {
      return (await this.http.json(routes.turns(bridgeSessionId), TurnAccepted, { body, retry: true }, "start turn")).run;
    } catch (err) {
      const refined = refine(err);
      if (refined instanceof ProviderError && refined.code === "conflict" && refined.options.wireCode !== "invalid_state") {
        throw refined.as("session_busy", "the agent session is already running a turn");
      }
      throw refined;
    }
  }

  // ------------------------------------------------------------------ reading

  private async snapshot(runId: string, waitMs?: number): Promise<RunSnapshot> {
    return this.http.json(routes.run(runId), RunSnapshot, { retry: true, ...(waitMs ? { query: { wait_ms: String(waitMs) } } : {}) }, "read run");
  }

  /** How the run ended, from its snapshot; null while the bridge does not say terminal. */
  private async confirmEnd(runId: string): Promise<TerminalStatus | null> {
    for (let check = 0; check < TERMINAL_CHECKS; check++) {
      const status = snapshotStatus((await this.snapshot(runId, TERMINAL_WAIT_MS)).status);
      if (status) return status;
    }
    return null;
  }

  async *events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    // One-shot chunks carry deltas only; to show whole part texts, a reader that joins mid-run reads
    // the run from its first chunk (within the bridge's replay window) and shows what is after the cursor.
    let cursor = options.after;
    let fromStart = cursor === undefined;
    while (true) {
      const restart = yield* this.readOnce(ref, cursor, fromStart, options);
      if (!restart) return;
      fromStart = true;
      cursor = undefined;
    }
  }

  /** One read of the run's stream; answers true when a one-shot stream must be read from its start. */
  private async *readOnce(ref: AgentExactRunControlRef, cursor: string | undefined, fromStart: boolean, options: EventsOptions): AsyncGenerator<ProviderEvent, boolean> {
    let response: Response;
    try {
      response = await this.http.send(
        routes.runEvents(ref.runId),
        { headers: cursor !== undefined ? { "last-event-id": cursor } : {}, retry: true, stream: true, signal: options.signal },
        "read run events",
      );
    } catch (err) {
      throw refine(err);
    }
    const after = options.after === undefined ? -1 : Number(options.after);
    const isNew = (id: string | undefined) => id === undefined || !Number.isFinite(after) || Number(id) > after;
    let format: "openai" | "canonical" | undefined;
    const chunks = new ChunkStream(ref.runId);
    for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES)) {
      if (frame.data === undefined) continue;
      const data = frame.data;
      const kind = frame.event !== undefined && frame.event !== "message" ? "canonical" : "openai";
      if (format && kind !== format) {
        throw new ProviderError("invalid_response", "the CLI Bridge mixed OpenAI chunks and runtime envelopes in one stream", { retryable: false });
      }
      format = kind;
      if (kind === "openai") {
        if (!fromStart) return true;
        const event = chunks.read({ ...frame, data });
        if (event && isNew(event.upstreamId)) yield event;
        if (chunks.done) break;
        continue;
      }
      const read = readEnvelope({ ...frame, data });
      if ("skip" in read) continue;
      if ("event" in read) {
        yield read.event;
        continue;
      }
      // The run's last event: confirm it from the snapshot (a cancelled retained run reads failed here).
      const status = await this.confirmEnd(ref.runId);
      if (!status) return false;
      yield {
        kind: "terminal",
        upstreamId: read.end.upstreamId,
        status,
        ...(status === "failed" ? { error: { message: typeof read.end.detail === "string" ? read.end.detail : "the run failed" } } : {}),
      };
      return false;
    }
    if (format !== "openai" || !(chunks.done || chunks.finish || chunks.error)) return false; // severed: reconnect
    const status = await this.confirmEnd(ref.runId);
    if (!status) return false;
    const end = chunks.error?.upstreamId ?? chunks.finish?.upstreamId;
    const error = status === "failed" ? (chunks.error?.error ?? { message: `the run ended (${chunks.finish?.reason ?? "failed"})` }) : undefined;
    yield {
      kind: "terminal",
      upstreamId: end,
      status,
      text: chunks.answer,
      ...(error ? { error } : {}),
      ...(chunks.finish?.usage ? { usage: chunks.finish.usage } : {}),
    };
    return false;
  }

  async result(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    const snapshot = await this.snapshot(ref.runId);
    const status = snapshotStatus(snapshot.status);
    if (!status) return null;
    return { status, ...(status === "failed" ? { error: { message: typeof snapshot.error === "string" ? snapshot.error : "the run failed" } } : {}) };
  }

  // ------------------------------------------------------------------ control

  async cancel(ref: AgentExactRunControlRef, request: { operationId?: string; reason?: string } = {}): Promise<CancelOutcome> {
    // Digest-bound under an operation id; without one, the legacy form (no body at all).
    let body: Record<string, unknown> | undefined;
    if (request.operationId) {
      const command = stripUndefined({ operationId: request.operationId, run: ref, reason: request.reason });
      body = { ...command, requestDigest: await canonicalDigest(command) };
    }
    try {
      const answer = await this.http.json(routes.cancel(ref.runId), CancelAnswer, { ...(body ? { body } : {}), query: { wait_ms: String(CANCEL_WAIT_MS) }, retry: true }, "cancel run");
      if (answer.effect === "cancelled" || answer.effect === "cancel_requested" || answer.effect === "not_live") return { effect: answer.effect };
      if (answer.cancelled === true) return { effect: "cancelled" };
      if (answer.terminal === true) return { effect: "not_live", reason: "the run had already ended" };
      return { effect: "cancel_requested" };
    } catch (err) {
      if (err instanceof ProviderError && err.code === "not_found") return { effect: "not_live", reason: "unknown_run" };
      throw refine(err);
    }
  }

  async respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    const interactionId = command.binding.interactionId;
    const binding = { ...command.binding, ...(command.request.requestDigest ? { requestDigest: command.request.requestDigest } : {}) };
    const response = stripUndefined({ id: interactionId, outcome: command.outcome, data: command.data ? bridgeAnswer(command.request, command.data) : undefined });
    const body = { operationId: command.operationId, binding, response, commandDigest: await canonicalDigest({ binding, response }) };
    try {
      const ack = await this.http.json(routes.respond(ref.runId, interactionId), RespondAnswer, { body }, "answer interaction");
      return deliveryOf(ack);
    } catch (err) {
      if (err instanceof ProviderError && err.code !== "unavailable" && err.code !== "timeout") {
        const known = err.options.details?.status;
        if (typeof known === "string") return deliveryOf({ status: known, message: err.message });
        if (err.code === "not_found") return { status: "unknown_interaction", message: "the CLI Bridge no longer knows this interaction" };
        if (err.code === "invalid_request") return { status: "invalid_response", message: err.message };
      }
      // Delivery is unconfirmed: never `accepted`.
      return { status: "transport_failure", message: `delivery could not be confirmed: ${err instanceof Error ? err.message : String(err)}`, retryable: true };
    }
  }

  async deleteSession({ lastRun }: { environmentId: string; sessionId: string; lastRun?: AgentExactRunControlRef }): Promise<void> {
    // One-shot runs leave nothing to delete on the bridge; a retained session is closed.
    if (lastRun?.provider !== PROVIDER_NAME) return;
    try {
      await this.http.send(routes.closeSession(lastRun.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (err instanceof ProviderError && (err.code === "not_found" || err.code === "conflict")) return;
      throw refine(err);
    }
  }
}

function nextGeneration(current: string, base: string): string {
  const generation = current === base ? 1 : Number(current.slice(base.length + GENERATION_MARK.length)) || 1;
  return `${base}${GENERATION_MARK}${generation + 1}`;
}

/** Select answers as the bridge records them: a list of the chosen values. */
function bridgeAnswer(request: InteractionRequest, data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  for (const field of request.answerSpec.fields) {
    if (field.type === "select" && typeof out[field.name] === "string") out[field.name] = [out[field.name]];
  }
  return out;
}

/** The contract's acknowledgement statuses a bridge may answer (a binding mismatch is the session's to find). */
const ACK_STATUSES = new Set<string>(InteractionAcknowledgement.shape.status.options.filter((s) => s !== "binding_mismatch"));

function deliveryOf(ack: { status: string; message?: string; retryable?: boolean }): AnswerDelivery {
  if (!ACK_STATUSES.has(ack.status)) {
    return { status: "transport_failure", message: `the CLI Bridge answered an acknowledgement this gateway does not know (${ack.status})`, retryable: true };
  }
  return { status: ack.status as AnswerDelivery["status"], ...(ack.message ? { message: ack.message } : {}), ...(ack.retryable !== undefined ? { retryable: ack.retryable } : {}) };
}
