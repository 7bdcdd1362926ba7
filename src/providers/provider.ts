/**
 * The provider interface the session object drives. It fits both the Tangle Sandbox provider
 * (seed 000) and the CLI Bridge provider (seed 003): an environment is ensured per user, a turn
 * is dispatched detached under caller-chosen ids and answers an exact control ref, which is then
 * enough to replay events from a cursor, read the result, cancel, answer interactions and delete.
 */
import type { AgentExactRunControlRef, InteractionRequest, RequestedInteractions } from "../schemas/contracts";
import type { JsonObject } from "../schemas/common";

/** What the per-user object keeps about the user's environment (no secrets). */
export interface EnvironmentRecord {
  environmentId: string;
  /** Bumped each time a new environment has to replace a gone or failed one; part of the create idempotency key. */
  generation: number;
  /** The environment's capability document as read once when it became ready; null when the read failed. */
  capabilities: JsonObject | null;
  warnings: string[];
  readyAt: string;
}

export interface EnsureEnvironmentInput {
  /** A stable, non-secret key for the owner (derived from the user id). */
  ownerKey: string;
  known: EnvironmentRecord | null;
  /** Skip the status probe of a known environment (it was checked a moment ago). */
  trustKnownForMs?: number;
}

export interface EnsureEnvironmentResult {
  record: EnvironmentRecord;
  /** created: provisioned now; resumed: a stopped environment was resumed; existing: already ready. */
  outcome: "created" | "resumed" | "existing";
}

export interface DispatchInput {
  environmentId: string;
  sessionId: string;
  turnId: string;
  executionId: string;
  message: string;
  model?: string;
  interactions?: RequestedInteractions;
}

export interface DispatchReceipt {
  controlRef: AgentExactRunControlRef;
  /** True when the platform already held this run (a retried dispatch). */
  alreadyExisted: boolean;
}

/** One canonical event read from upstream, with the upstream's own id (opaque, per execution). */
export interface ProviderEvent {
  /** Upstream event id; undefined only when upstream sent none (reported as a warning). */
  upstreamId: string | undefined;
  /** Canonical event type (docs/contracts.md), or a pass-through type for variants we do not know. */
  type: string;
  data: JsonObject;
  /** Present on terminal events: how the run ended. */
  terminal?: { status: "completed" | "failed" | "cancelled"; text?: string; error?: { code?: string; message: string } };
  /** Private events (native.session.observed) are kept out of the browser-facing log. */
  private?: boolean;
}

export interface ProviderResult {
  status: "completed" | "failed" | "cancelled";
  text?: string;
  error?: { code?: string; message: string };
}

export interface EventsOptions {
  /** Exclusive cursor: replay strictly after this upstream id; undefined replays from the first frame. */
  after?: string;
  signal?: AbortSignal;
}

export interface CancelOutcome {
  /** True when the platform stopped the run; false when nothing was running under that ref. */
  cancelled: boolean;
  reason?: string;
}

export interface InteractionAnswer {
  id: string;
  outcome: "accepted" | "declined" | "cancelled";
  data?: Record<string, unknown>;
}

export interface AgentProvider {
  /** The `provider` coordinate of control refs. */
  readonly name: string;
  ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult>;
  dispatch(input: DispatchInput): Promise<DispatchReceipt>;
  events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent>;
  /** The run's result, or null while it is still running. */
  result(ref: AgentExactRunControlRef): Promise<ProviderResult | null>;
  /** Stops exactly the run the ref names. */
  cancel(ref: AgentExactRunControlRef, reason?: string): Promise<CancelOutcome>;
  /** The asks the run is waiting on. */
  interactions(ref: AgentExactRunControlRef): Promise<InteractionRequest[]>;
  /** Delivers one answer upstream; throws UpstreamError when it was refused or its delivery is unknown. */
  respondToInteraction(ref: AgentExactRunControlRef, answer: InteractionAnswer): Promise<void>;
  deleteSession(environmentId: string, sessionId: string): Promise<void>;
}
