/**
 * The CLI Bridge provider (seeds/003_84635c82d6e641c4.txt) over a CLI Bridge server's HTTP API (docs/cli-bridge-wire.md).
 *
 * - Which transport: the turn's model route's capability document decides. Where the bridge proves
 *   retained control and native continuation (Pi today), the conversation is a retained native
 *   session (`/v1/sessions`, then `/turns` with caller-stable run, turn and execution ids);
 *   otherwise each turn is a one-shot run (`/v1/chat/completions`, stream, a stable `X-Run-Id`,
 *   and the conversation's `session_id` so the CLI conversation continues). Retained sessions run
 *   on the host only: a `kind: "sandbox"` execution default is refused before the session is opened.
 * - Which bridge session: one per transport and model route of the conversation, and a new
 *   generation once one ended (sessions.ts). When the agent's memory does not carry over (another
 *   route, a session stopped, closed or lost across a bridge restart), the receipt says so
 *   (`agent_memory_reset`). A `session_identity_conflict` is never read as "already open".
 * - Exact control: the control ref is the server's (the `X-Run-*` headers, or the run object of a
 *   retained turn), digest included; a run that already exists must be the one planned, and a
 *   snapshot or envelope that names another run is refused (ends.ts, envelopes.ts).
 * - Reading: `GET /v1/runs/:runId/events` after a cursor; a finish is provisional until the run
 *   snapshot says terminal. A run the bridge lost (`status: "unknown"` after a restart, or 404)
 *   ends at once.
 * - A one-shot Pi run's session is closed once its end is confirmed (seeds/003_84635c82d6e641c4.txt), once.
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
  RunError,
} from "../provider";
import { ChunkStream } from "./chunks";
import { bridgeClaims, supportsRetainedSessions } from "./claims";
import { LOST, namesRun, runEnd, type RunEnd } from "./ends";
import { EnvelopeStream } from "./envelopes";
import { generationIn, isConversationSession, sessionFamily, sessionOf, type Transport } from "./sessions";
import { CancelAnswer, CapabilityDocument, RespondAnswer, RunSnapshot, SessionView, TurnAccepted } from "./wire";

const PROVIDER_NAME = "cli-bridge";
/** The bridge names its one environment so (`X-Run-Environment-Id`). */
const ENVIRONMENT_ID = "cli-bridge";
/** The `X-Run-Provider` of a one-shot Pi run (transcript 41): its session is closed after the run. */
const PI_ONE_SHOT_PROVIDER = "pi";
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
/** Sessions a dispatch may open or step over (ended, lost, taken) before it gives up. */
const MAX_SESSION_STEPS = 8;
/** A retained session in one of these takes no more turns: the conversation continues in a new one. */
const ENDED_SESSION_STATES = new Set(["cancelled", "closed", "failed", "error", "expired"]);

/** Why the agent's memory does not carry over into this turn (the receipt's `agent_memory_reset`). */
const RESET = {
  route: (model: string) => `this turn runs on model route ${model}, in an agent session of its own: the agent does not remember this conversation's turns on other model routes`,
  stopped: "the agent's previous session ended (it was stopped); this turn starts a new one, without the earlier conversation in its memory",
  lost: "the CLI Bridge lost the agent's session (it restarted); this turn starts a new one, without the earlier conversation in its memory",
  taken: "the CLI Bridge holds the agent's session under other settings; this turn starts a new one, without the earlier conversation in its memory",
  closed: "each one-shot Pi run is an agent session of its own, closed when the run ends: this turn starts without the earlier conversation in its memory",
};

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
type Notice = NonNullable<DispatchReceipt["notice"]>;

/** Where a dispatch starts in the route's session family: the generation the conversation last used, if it did. */
interface Start {
  family: string;
  generation: number;
  /** The conversation's last run was in this family's session of `generation`. */
  continuing: boolean;
  /** The last run was a one-shot Pi run: its session was closed after it. */
  closed: boolean;
  /** The conversation ran elsewhere before (another route or transport): the agent does not remember that. */
  notice?: Notice;
}

const memoryReset = (message: string): Notice => ({ code: "agent_memory_reset", message });

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

const isWire = (err: unknown, wireCode: string): err is ProviderError => err instanceof ProviderError && err.options.wireCode === wireCode;
const isNotFound = (err: unknown): err is ProviderError => err instanceof ProviderError && err.code === "not_found";

/** A bridge session id this gateway gave the conversation, in any naming it used. */
function isOurs(bridgeSessionId: string, sessionId: string): boolean {
  // Before per-route families: the conversation's id itself, then `~g<N>` generations.
  return isConversationSession(bridgeSessionId, sessionId) || bridgeSessionId === sessionId || bridgeSessionId.startsWith(`${sessionId}~g`);
}

export class CliBridgeProvider implements AgentProvider {
  readonly name = PROVIDER_NAME;
  private readonly discovery = new Map<string, { at: number; doc: Promise<Doc | null> }>();
  /** One-shot Pi sessions this instance closed: a repeat cleanup sends no second close. */
  private readonly closedSessions = new Set<string>();

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
    const transport: Transport = supportsRetainedSessions(doc) ? "retained" : "one-shot";
    const kind = this.options.execution?.kind;
    if (transport === "retained" && kind !== undefined && kind !== "host") {
      // seeds/003_84635c82d6e641c4.txt: retained native sessions run on the host; the bridge would refuse after the session is opened.
      throw new ProviderError(
        "not_configured",
        `model route ${model} runs as a retained native session, which the CLI Bridge runs on the host only, but CLI_BRIDGE_EXECUTION has kind ${JSON.stringify(kind)}: use kind "host", or a model route that runs one-shot`,
        { retryable: false },
      );
    }
    const runId = input.executionId;
    // A run under this id already exists (a retried dispatch): it must be exactly the one planned.
    const existing = await this.snapshot(runId).catch((err: unknown) => {
      if (isNotFound(err)) return null;
      throw err;
    });
    if (existing && ((existing.executionId && existing.executionId !== input.executionId) || (existing.sessionId && !isOurs(existing.sessionId, input.sessionId)))) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge holds run ${runId} for another session or execution`);
    }
    const start = await this.startOf(input, transport, model, existing);
    const receipt = transport === "retained" ? await this.dispatchRetained(input, model, runId, start) : await this.dispatchOneShot(input, model, runId, start);
    if (existing?.requestDigest && existing.requestDigest !== receipt.controlRef.requestDigest) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge answered run ${runId} with another request digest than the run it holds`);
    }
    return { ...receipt, alreadyExisted: existing !== null };
  }

  /** Where in the route's session family this turn starts, from the run that exists already or the conversation's last run. */
  private async startOf(input: DispatchInput, transport: Transport, model: string, existing: RunSnapshot | null): Promise<Start> {
    const family = await sessionFamily(input.sessionId, transport, model);
    // A retried dispatch whose run landed: the session it landed in.
    const landed = existing?.sessionId !== undefined ? generationIn(existing.sessionId, family) : null;
    if (landed !== null) return { family, generation: landed, continuing: true, closed: false };
    const previous = input.previous;
    const last = previous ? generationIn(previous.sessionId, family) : null;
    if (previous && last !== null) return { family, generation: last, continuing: true, closed: previous.provider === PI_ONE_SHOT_PROVIDER };
    return { family, generation: 1, continuing: false, closed: false, ...(previous ? { notice: memoryReset(RESET.route(model)) } : {}) };
  }

  private async dispatchOneShot(input: DispatchInput, model: string, runId: string, start: Start): Promise<DispatchReceipt> {
    let generation = start.closed ? start.generation + 1 : start.generation;
    let notice = start.closed ? memoryReset(RESET.closed) : start.notice;
    for (let step = 0; ; step++) {
      const sessionId = sessionOf(start.family, generation);
      try {
        const controlRef = await this.startOneShot(input, model, runId, sessionId);
        return { controlRef, alreadyExisted: false, ...(notice ? { notice } : {}) };
      } catch (err) {
        // The id is owned by the other session API (or was used otherwise): never this run's session.
        if (!isWire(err, "session_identity_conflict") || step + 1 >= MAX_SESSION_STEPS) throw refine(err);
        generation++;
        notice = memoryReset(RESET.taken);
      }
    }
  }

  private async startOneShot(input: DispatchInput, model: string, runId: string, sessionId: string): Promise<AgentExactRunControlRef> {
    const body = stripUndefined({
      model,
      stream: true,
      messages: [{ role: "user", content: input.message }],
      session_id: sessionId,
      run_id: runId,
      cwd: this.options.cwd,
      execution: this.options.execution,
      // Only an empty posture can reach a one-shot run (its route claims no interaction kind).
      interactions: input.interactions,
    });
    // Safe to retry: the same run id and body attach to the same run.
    const response = await this.http.send(routes.chat(), { body, headers: { "x-run-id": runId }, stream: true, retry: true }, "start run");
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
    if (ref.runId !== runId || ref.sessionId !== sessionId) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge admitted run ${ref.runId} in session ${ref.sessionId} instead of ${runId} in ${sessionId}`);
    }
    return ref as AgentExactRunControlRef;
  }

  private async dispatchRetained(input: DispatchInput, model: string, runId: string, start: Start): Promise<DispatchReceipt> {
    let generation = start.generation;
    let notice = start.notice;
    let open = !start.continuing;
    let run: RunSnapshot | undefined;
    for (let step = 0; !run; step++) {
      if (step >= MAX_SESSION_STEPS) {
        throw new ProviderError("unavailable", `the CLI Bridge took no turn in ${MAX_SESSION_STEPS} sessions of this conversation on ${model}`, { retryable: false });
      }
      const sessionId = sessionOf(start.family, generation);
      if (open && !(await this.openSession(sessionId, model))) {
        generation++;
        notice = memoryReset(RESET.taken);
        continue;
      }
      try {
        run = await this.startTurn(sessionId, input, runId);
      } catch (err) {
        const ended = await this.sessionEnded(err, sessionId, open);
        if (ended === "missing") {
          // The bridge no longer knows the session at all: open it again (its memory is gone).
          open = true;
        } else {
          generation++;
          open = true;
        }
        notice = memoryReset(RESET[ended === "stopped" ? "stopped" : "lost"]);
      }
    }
    if (run.id !== runId || (run.executionId !== undefined && run.executionId !== input.executionId)) {
      throw new ProviderError("admission_mismatch", `the CLI Bridge admitted run ${run.id} instead of ${runId}`);
    }
    if (!run.requestDigest) throw new ProviderError("admission_missing", "the CLI Bridge admitted the turn without its request digest");
    const controlRef: AgentExactRunControlRef = {
      runId: run.id,
      provider: run.provider ?? PROVIDER_NAME,
      environmentId: run.environmentId ?? ENVIRONMENT_ID,
      sessionId: run.sessionId ?? sessionOf(start.family, generation),
      executionId: run.executionId ?? input.executionId,
      requestDigest: run.requestDigest,
    };
    return { controlRef, alreadyExisted: false, ...(notice ? { notice } : {}) };
  }

  /** Opens (or re-opens, the same request) a retained session; false when the id is taken by another session or request. */
  private async openSession(bridgeSessionId: string, model: string): Promise<boolean> {
    const body = stripUndefined({ session_id: bridgeSessionId, model, cwd: this.options.cwd, execution: this.options.execution });
    try {
      await this.http.send(routes.createSession(), { body, retry: true }, "open session");
      return true;
    } catch (err) {
      // Owned by the other session API, or opened with another request: not ours to continue.
      if (isWire(err, "session_identity_conflict")) return false;
      throw refine(err);
    }
  }

  /**
   * Whether a refused turn means its session takes no more turns, and why: `stopped` (cancelled,
   * closed), `lost` (its native process did not survive a bridge restart), `missing` (the bridge
   * does not know it). Anything else is thrown on: busy is `session_busy`.
   */
  private async sessionEnded(err: unknown, bridgeSessionId: string, justOpened: boolean): Promise<"stopped" | "lost" | "missing"> {
    if (isWire(err, "unknown_session")) return "lost";
    if (isNotFound(err) && !justOpened) return "missing";
    if (!isWire(err, "invalid_state")) throw err;
    // Busy with a turn (wait for it), or ended: its own view says which.
    const session = await this.http.json(routes.session(bridgeSessionId), SessionView, { retry: true }, "read session").catch(() => null);
    if (session?.status === "unknown") return "lost";
    if (session && !ENDED_SESSION_STATES.has(session.status)) throw err.as("session_busy", "the agent session is already running a turn");
    return "stopped";
  }

  private async startTurn(bridgeSessionId: string, input: DispatchInput, runId: string): Promise<RunSnapshot> {
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

  /** How the run ended, from its snapshot (a one-shot Pi run's session is then closed); null while the bridge does not say. */
  private async confirmEnd(ref: AgentExactRunControlRef): Promise<{ end: RunEnd; closeFailed?: string } | null> {
    for (let check = 0; check < TERMINAL_CHECKS; check++) {
      let snapshot: RunSnapshot;
      try {
        snapshot = await this.snapshot(ref.runId, TERMINAL_WAIT_MS);
      } catch (err) {
        if (isNotFound(err)) return { end: LOST };
        throw err;
      }
      const end = runEnd(ref, snapshot);
      if (end) return { end, ...(await this.afterEnd(ref, snapshot, end)) };
    }
    return null;
  }

  async *events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    // Chunks carry deltas only, and a retained run's end carries no text: to know the whole answer
    // and whole part texts, a reader that joins mid-run reads the run from its first event (within
    // the bridge's replay window) and shows what is after the cursor.
    let cursor = options.after;
    let fromStart = cursor === undefined;
    while (true) {
      const restart = yield* this.readOnce(ref, cursor, fromStart, options);
      if (!restart) return;
      fromStart = true;
      cursor = undefined;
    }
  }

  /** One read of the run's stream; answers true when it must be read again from its start. */
  private async *readOnce(ref: AgentExactRunControlRef, cursor: string | undefined, fromStart: boolean, options: EventsOptions): AsyncGenerator<ProviderEvent, boolean> {
    let response: Response;
    try {
      response = await this.http.send(
        routes.runEvents(ref.runId),
        { headers: cursor !== undefined ? { "last-event-id": cursor } : {}, retry: true, stream: true, signal: options.signal },
        "read run events",
      );
    } catch (err) {
      // The bridge no longer knows a run it admitted: lost (a restart cleared its registry).
      if (isNotFound(err) && !(err.options.wireCode === "expired_replay_cursor")) {
        yield { kind: "terminal", upstreamId: undefined, ...LOST };
        return false;
      }
      throw refine(err);
    }
    // A run lost in a crash is never terminal: its stream ends after what it had, or stays open.
    const status = response.headers.get("x-run-status") ?? (await this.snapshot(ref.runId).catch(() => null))?.status;
    if (status === "unknown") {
      response.body?.cancel().catch(() => undefined);
      yield { kind: "terminal", upstreamId: undefined, ...LOST };
      return false;
    }
    const after = options.after === undefined ? -1 : Number(options.after);
    const isNew = (id: string | undefined) => id === undefined || !Number.isFinite(after) || Number(id) > after;
    let format: "openai" | "canonical" | undefined;
    const chunks = new ChunkStream(ref.runId);
    const envelopes = new EnvelopeStream(ref.runId);
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
      const read = envelopes.read({ ...frame, data });
      if ("event" in read) {
        if (isNew(read.event.upstreamId)) yield read.event;
        continue;
      }
      // The run's last event: confirm it from the snapshot (a cancelled retained run reads failed here).
      const confirmed = await this.confirmEnd(ref);
      if (!confirmed) return false;
      if (confirmed.closeFailed) yield { kind: "warning", upstreamId: undefined, code: "session_close_failed", message: confirmed.closeFailed };
      const { end } = confirmed;
      const error = errorOf(end, typeof read.end.detail === "string" ? { message: read.end.detail } : undefined);
      // Part updates carry whole texts, so a reader that joined mid-run reads only the answer from the start.
      const text = fromStart ? envelopes.answer : await this.answerFromStart(ref, envelopes.answer);
      yield { kind: "terminal", upstreamId: read.end.upstreamId, ...end, text, ...(error ? { error } : {}) };
      return false;
    }
    if (format !== "openai" || !(chunks.done || chunks.finish || chunks.error)) return false; // severed: reconnect
    const confirmed = await this.confirmEnd(ref);
    if (!confirmed) return false;
    if (confirmed.closeFailed) yield { kind: "warning", upstreamId: undefined, code: "session_close_failed", message: confirmed.closeFailed };
    const { end } = confirmed;
    const upstreamId = chunks.error?.upstreamId ?? chunks.finish?.upstreamId;
    const error = errorOf(end, chunks.error?.error ?? { message: `the run ended (${chunks.finish?.reason ?? "failed"})` });
    yield {
      kind: "terminal",
      upstreamId,
      ...end,
      text: chunks.answer,
      ...(error ? { error } : {}),
      ...(chunks.finish?.usage ? { usage: chunks.finish.usage } : {}),
    };
    return false;
  }

  /** A retained run's answer read from its first event; what the reader saw when that read fails. */
  private async answerFromStart(ref: AgentExactRunControlRef, seen: string): Promise<string> {
    try {
      const response = await this.http.send(routes.runEvents(ref.runId), { retry: true, stream: true }, "read run events");
      const envelopes = new EnvelopeStream(ref.runId);
      for await (const frame of readSseFrames(response.body!, MAX_FRAME_BYTES)) {
        if (frame.data === undefined || frame.event === undefined) continue;
        if ("end" in envelopes.read({ ...frame, data: frame.data })) break;
      }
      return envelopes.answer.length >= seen.length ? envelopes.answer : seen;
    } catch {
      return seen;
    }
  }

  async result(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    let snapshot: RunSnapshot;
    try {
      snapshot = await this.snapshot(ref.runId);
    } catch (err) {
      if (isNotFound(err)) return { status: LOST.status, error: LOST.error! };
      throw err;
    }
    const end = runEnd(ref, snapshot);
    if (!end) return null;
    await this.afterEnd(ref, snapshot, end);
    return { status: end.status, ...(end.error ? { error: end.error } : {}) };
  }

  /**
   * Once a one-shot Pi run's end is confirmed, its session is closed (seeds/003_84635c82d6e641c4.txt), after checking the
   * snapshot names exactly this run and session; once per session.
   */
  private async afterEnd(ref: AgentExactRunControlRef, snapshot: RunSnapshot, end: RunEnd): Promise<{ closeFailed?: string }> {
    if (ref.provider !== PI_ONE_SHOT_PROVIDER || end === LOST || !namesRun(ref, snapshot) || snapshot.sessionId !== ref.sessionId) return {};
    if (this.closedSessions.has(ref.sessionId)) return {};
    try {
      await this.http.send(routes.closeSession(ref.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (!(isNotFound(err) || (err instanceof ProviderError && err.code === "conflict"))) {
        return { closeFailed: `the run's Pi session could not be closed on the CLI Bridge: ${err instanceof Error ? err.message : String(err)}` };
      }
    }
    this.closedSessions.add(ref.sessionId);
    return {};
  }

  // ------------------------------------------------------------------ control

  async cancel(ref: AgentExactRunControlRef, request: { operationId?: string; reason?: string } = {}): Promise<CancelOutcome> {
    // Digest-bound under an operation id; without one, the legacy form (no body at all).
    let body: Record<string, unknown> | undefined;
    if (request.operationId) {
      const command = stripUndefined({ operationId: request.operationId, run: ref, reason: request.reason });
      body = { ...command, requestDigest: await canonicalDigest(command) };
    }
    let answer;
    try {
      answer = await this.http.json(routes.cancel(ref.runId), CancelAnswer, { ...(body ? { body } : {}), query: { wait_ms: String(CANCEL_WAIT_MS) }, retry: true }, "cancel run");
    } catch (err) {
      if (isNotFound(err)) return { effect: "not_live", reason: "unknown_run" };
      throw refine(err);
    }
    if (answer.effect === "cancelled" || answer.cancelled === true) return { effect: "cancelled" };
    if (answer.effect === "not_live") return { effect: "not_live" };
    if (answer.terminal === true) return { effect: "not_live", reason: "the run had already ended" };
    // Accepted but not confirmed: a run the bridge lost in a restart never will be.
    const run = RunSnapshot.safeParse(answer.run);
    const status = run.success ? run.data.status : (await this.snapshot(ref.runId).catch(() => null))?.status;
    if (status === "unknown") return { effect: "not_live", reason: "the CLI Bridge lost this run in a restart: nothing runs under it" };
    return { effect: "cancel_requested" };
  }

  async respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    const interactionId = command.binding.interactionId;
    // The bridge's own binding of the ask: it names the bridge session, which is not the conversation's id.
    const binding = { ...(command.request.binding ?? command.binding), ...(command.request.requestDigest ? { requestDigest: command.request.requestDigest } : {}) };
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
    // A retained session is closed, and a one-shot Pi session not closed yet; other one-shot runs leave nothing to delete.
    if (!lastRun || (lastRun.provider !== PROVIDER_NAME && lastRun.provider !== PI_ONE_SHOT_PROVIDER)) return;
    if (this.closedSessions.has(lastRun.sessionId)) return;
    try {
      await this.http.send(routes.closeSession(lastRun.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (err instanceof ProviderError && (err.code === "not_found" || err.code === "conflict")) return;
      throw refine(err);
    }
  }
}

/**
 * A failed run's error: the gateway's own (lost, mismatched) first, then what the stream said,
 * then the snapshot's. None for a run that did not fail.
 */
function errorOf(end: RunEnd, fromStream: RunError | undefined): RunError | undefined {
  if (end.status !== "failed") return undefined;
  if (end.error?.code) return end.error;
  return fromStream ?? end.error ?? { message: "the run failed" };
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
