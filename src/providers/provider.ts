/**
 * The seam between the session and a provider (Tangle Sandbox, agent-provider-tangle; CLI Bridge, agent-provider-cli-bridge).
 *
 * An environment is ensured per user; a turn is dispatched detached under caller-chosen ids and
 * answers an exact control ref, which is then enough to replay events from a cursor, read the
 * result, cancel, answer interactions and delete. Everything a provider reads off its wire reaches
 * the session in the shapes below: a closed ProviderEvent union, ProviderError codes, Claims and
 * acknowledgement statuses. The session knows no provider's frame names or error strings.
 */

import type { AgentCatalog } from "../schemas/agents";
import type { Counts, JsonObject, Provenance } from "../schemas/common";
import type {
  AgentExactRunControlRef,
  ChildTaskEvent,
  InteractionAcknowledgement,
  InteractionRequest,
  RequestedInteractions,
} from "../schemas/contracts";
import type { IdlePolicy, ObservedAccountUsage, ObservedEnvironment } from "../schemas/environment";
import type { WorkspaceCheckpoints } from "./checkpoints";
import type { Claims } from "./claims";

/** What the per-user object keeps about the user's environment (no secrets). */
export interface EnvironmentRecord {
  environmentId: string;
  /** Bumped each time a new environment has to replace a gone or failed one; part of the create idempotency key. */
  generation: number;
  /** The provider's capability document as last read; null when no read has succeeded. Only the provider reads it. */
  capabilities: JsonObject | null;
  /**
   * When the document was last asked for (ISO time; a failed read counts, and keeps the document
   * read before it). Absent on records kept before it was recorded: then `readyAt`.
   */
  capabilitiesCheckedAt?: string;
  warnings: string[];
  readyAt: string;
  /** The idle timeout and lifetime sent when this environment was created; absent on records kept before they were sent, and where the provider creates nothing. */
  requested?: IdlePolicy;
}

/** What the provider reports of the user's environment and of the account (seed 000, "Environment observation"). */
export interface EnvironmentObservation {
  /** null: no environment was given to observe. */
  environment: ObservedEnvironment | null;
  accountUsage: ObservedAccountUsage;
}

/**
 * What an owner's object knows of the create calls it made (agent-interface, idempotent create: a consumer
 * never destroys an environment whose creation it cannot prove). A create key never sent before that answers a
 * fresh environment proves this call made it; a key sent before may answer what an earlier call made.
 */
export interface CreateLedger {
  /** The highest generation whose create was sent (0: none). */
  sent: number;
  /** The highest generation whose bring-up failed (0: none): its key is not used again. */
  failed: number;
}

export interface EnsureEnvironmentInput {
  /** A stable, non-secret key for the owner (derived from the user id). */
  ownerKey: string;
  known: EnvironmentRecord | null;
  /** Read the capability document of a ready environment again (it is read anyway after a resume, or while none was read). */
  rereadCapabilities?: boolean;
  /**
   * The owner's create ledger, and how to write it: written before a create goes out and when a
   * bring-up fails. Absent: this caller knows of no earlier create.
   */
  ledger?: { state: CreateLedger; write(next: CreateLedger): void };
  /**
   * Bring back only what is there: a stopped environment is resumed, but none is created or
   * replaced (a read of the workspace): one that is gone, expired or failed is `environment_gone`.
   */
  resumeOnly?: boolean;
  /**
   * A workspace fork (seed 000, "Workspace branching"): an environment created (or re-created, if
   * gone) from a checkpoint of another one, its files as they were then, under its own `ownerKey`.
   * Only where the provider takes checkpoints.
   */
  fromCheckpoint?: { snapshotId: string; sourceEnvironmentId: string; marker: Record<string, string> };
}

export interface EnsureEnvironmentResult {
  record: EnvironmentRecord;
  /**
   * created: provisioned by this call; found: a create answered an environment this call cannot
   * prove it provisioned (an idempotent replay, or a key an earlier call sent); resumed: a stopped
   * environment was resumed; existing: already ready.
   */
  outcome: "created" | "found" | "resumed" | "existing";
}

export interface DispatchInput {
  environmentId: string;
  sessionId: string;
  turnId: string;
  executionId: string;
  message: string;
  model?: string;
  /** The backend options the turn runs on (Tangle: the prompt's `backend` type and model object; ../http/agent-options.ts). */
  backend?: { type?: string; model?: { provider?: string; model: string } };
  /** The user's model credential the turn names, opened (the key goes upstream only: never in a digest). */
  credential?: { provider: string; key: string; baseUrl?: string };
  /** The MCP servers the turn enables, opened (their auth headers' values never in a digest). */
  attachments?: Array<{ name: string; url: string; headers?: Record<string, string> }>;
  /**
   * Images among the turn's attachments that the backend can see (its catalog says `attachments`),
   * by their repository-relative path in the workspace; the message itself says where every
   * attachment is.
   */
  images?: Array<{ path: string; mediaType: string; name: string }>;
  /** What the profile adds to the agent's system prompt: the user's and the conversation's instructions, or a replacement. */
  systemPrompt?: { replace?: string; append?: string };
  interactions?: RequestedInteractions;
  /** The conversation's previous run, if any: a provider may continue its upstream session. */
  previous?: AgentExactRunControlRef;
  /**
   * The latest run of each upstream session the conversation has run in, oldest first: a provider
   * that keeps a session per model route continues the one a route used last, however long ago.
   */
  sessions?: AgentExactRunControlRef[];
}

/** A fork of an agent session at one of its runs (the Sandbox sessions guide: `session(id).fork({ messageId })`). */
export interface ForkInput {
  environmentId: string;
  /** The agent session to copy. */
  sessionId: string;
  /** The run whose answer is the last message the copy keeps. */
  at: AgentExactRunControlRef;
  /** The new session's id, chosen by the caller (derived from the conversation and the branch). */
  newSessionId: string;
}

export interface DispatchReceipt {
  controlRef: AgentExactRunControlRef;
  /** True when the platform already held this run (a retried dispatch). */
  alreadyExisted: boolean;
  /** Something the conversation must be told (the agent's memory starts afresh, say). */
  notice?: { code: string; message: string };
}

/** A canonical runtime event as viewers see it (docs/contracts.md "stream events"). */
export interface ShownEvent {
  type: string;
  data: JsonObject;
}

/**
 * Usage read off the wire. `delta`: this report's own usage, added (a `key` makes a repeat count
 * once); `cumulative`: the run's total so far, replacing. A counter not in `counts` is unknown,
 * never zero. A delta without both input and output leaves no running total past it.
 *
 * `provenance` says whether the counts were measured, estimated, or reported without saying which
 * (agent-provider-cli-bridge: "absent provenance remains unknown"); `costProvenance`, when given, is the cost's own (a
 * wire that measures tokens may still price them from a catalog). Request counts and served
 * models are what the provider reported, never derived from the request.
 */
export interface UsageReport {
  mode: "delta" | "cumulative";
  /** null: the report says nothing about tokens (only request counts or served models); the token fold is untouched. */
  counts: Counts | null;
  provenance: Provenance;
  costProvenance?: Provenance;
  key?: string;
  /** The report was unreadable (a negative count, say): nothing past it is known; reported as a warning. */
  problem?: string;
  /** Model requests this report covers (added or replacing, as `mode` says); null: a count was reported but is not an exact measurement, so the run's count is unknown. */
  modelRequests?: number | null;
  /** Models the provider reported serving (provider response observations, CLI Bridge `provider_models`); null: malformed or overflowing evidence, so no served model can be stated for the run. */
  servedModels?: string[] | null;
}

/** What a terminal receipt's figures are: measured, estimated or unknown, for its counts and (when it differs) its cost. */
export interface ReceiptProvenance {
  provenance: Provenance;
  costProvenance?: Provenance;
}

export type TerminalStatus = "completed" | "failed" | "cancelled";

export interface RunError {
  code?: string;
  message: string;
}

interface EventBase {
  /** Upstream event id (opaque, per execution), the replay cursor; undefined when upstream sent none. */
  upstreamId: string | undefined;
}

/**
 * One event read from upstream, normalized. The session switches on `kind` only. `shown` is the
 * canonical event viewers see for it, where the provider has one.
 */
export type ProviderEvent = EventBase &
  (
    | {
        /** A message part (text, reasoning, tool, file, …): shown as `message.part.updated`. */
        kind: "part";
        part: JsonObject & { id: string; type: string };
        /** The text appended since the previous update of this part. */
        delta?: string;
      }
    | { kind: "interaction.requested"; request: InteractionRequest; shown?: ShownEvent }
    | {
        kind: "interaction.ended";
        interactionId: string;
        /** expired: nobody answered in time; cancelled: the run stopped waiting. */
        why: "expired" | "cancelled";
        reason?: string;
        shown?: ShownEvent;
      }
    | { kind: "usage"; usage: UsageReport; shown?: ShownEvent }
    | {
        /** The run ended. `usage` is a last report carried by the terminal frame; `receipt` the run's authoritative usage. */
        kind: "terminal";
        status: TerminalStatus;
        /** The frame did not say how the run ended (the status is a guess): a stop the session asked for wins. */
        assumed?: true;
        text?: string;
        error?: RunError;
        usage?: UsageReport;
        receipt?: Counts;
        /** What the receipt's figures are; without it they are of unknown provenance. */
        receiptProvenance?: ReceiptProvenance;
        shown?: ShownEvent;
      }
    | { kind: "warning"; code: string; message: string }
    /**
     * One update of a child task (docs/contracts.md `child-task`): shown as `child-task`, applied
     * once per `sourceEventId` whatever frame carried it. A provider that reports no stable
     * `childId` emits none.
     */
    | { kind: "child-task"; task: ChildTaskEvent }
    /** A frame with no normalized meaning (status, progress, plans, raw harness events, new variants): shown as is. */
    | { kind: "passthrough"; shown: ShownEvent }
    /** A frame that never leaves the server (admission, native session ids). */
    | { kind: "private"; type: string }
  );

/**
 * A run's end as read after the fact (its result). `unknown`: the run ended upstream, but nothing
 * says how (`error.message` says why not); the session never reports that as a success.
 */
export interface ProviderResult {
  status: TerminalStatus | "unknown";
  text?: string;
  error?: RunError;
  /** The run's authoritative usage, as a terminal event's `receipt` (a counter not in it is unknown). */
  receipt?: Counts;
  /** What the receipt's figures are; without it they are of unknown provenance. */
  receiptProvenance?: ReceiptProvenance;
}

export interface EventsOptions {
  /** Exclusive cursor: replay strictly after this upstream id; undefined replays from the first frame. */
  after?: string;
  signal?: AbortSignal;
}

export interface CancelOutcome {
  /** cancelled: confirmed stopped; cancel_requested: accepted, not yet confirmed; not_live: nothing ran under that ref. */
  effect: "cancelled" | "cancel_requested" | "not_live";
  reason?: string;
}

/** One answer, as the full command (agent-interface): some wires need the binding and digests. */
export interface InteractionCommand {
  operationId: string;
  binding: InteractionAcknowledgement["binding"];
  commandDigest: InteractionAcknowledgement["commandDigest"];
  request: InteractionRequest;
  outcome: "accepted" | "declined" | "cancelled";
  data?: Record<string, unknown>;
}

/** What upstream said to an answer, as an acknowledgement status. Unconfirmed delivery is transport_failure, never accepted. */
export interface AnswerDelivery {
  status: Exclude<InteractionAcknowledgement["status"], "binding_mismatch">;
  message?: string;
  retryable?: boolean;
}

/** One entry of the workspace as the gateway shows it: its path repository-relative (src/lib/workspace-path.ts). */
export interface WorkspaceEntry {
  name: string;
  path: string;
  kind: "file" | "dir" | "symlink";
  /** Bytes; null where the provider did not say. */
  size: number | null;
  /** ISO time; null where the provider did not say. */
  modified: string | null;
}

/** A streamed download: the bytes as they come, and their length where the provider said it. */
export interface WorkspaceDownload {
  body: ReadableStream<Uint8Array>;
  size: number | null;
}

/**
 * The agent's workspace files (issue 40; docs/sandbox-wire.md §10): every path is repository-relative
 * and checked by the caller first (`.` the root). Failures are ProviderErrors: `not_found` with
 * `details.missing: "file"` for a path that is not there, `invalid_request` with
 * `details.notADirectory` for a listing of a file, `capability_denied` (`details.missing:
 * ["workspace.files"]`) where the deployment has no such route, `environment_not_running` /
 * `environment_gone` as for any call into the sandbox.
 */
export interface WorkspaceFiles {
  list(environmentId: string, path: string): Promise<WorkspaceEntry[]>;
  stat(environmentId: string, path: string): Promise<WorkspaceEntry>;
  /** The file's first `maxBytes` bytes at most; `truncated` when it held more. */
  read(environmentId: string, path: string, maxBytes: number): Promise<{ bytes: Uint8Array; truncated: boolean }>;
  /** A file's bytes, or a directory (the root included) as a tar.gz, streamed. */
  download(environmentId: string, path: string, what: "file" | "dir"): Promise<WorkspaceDownload>;
  /** Writes `bytes` at `path` (parent folders made); answers the size written where the provider said it. */
  upload(environmentId: string, path: string, bytes: Uint8Array, name: string): Promise<{ size: number | null }>;
}

/** What the sandbox says on a terminal's socket (docs/sandbox-wire.md §12), in the project's terms. */
export type UpstreamTerminalFrame =
  | { type: "ready"; sessionId?: unknown; restored?: unknown; detachTimeoutMs?: unknown }
  | { type: "output"; data: string }
  | { type: "exit"; exitCode?: number; exitSignal?: string }
  | { type: "error"; message: string };

/** One socket to a terminal in the sandbox (a PTY), opened and accepted; frames until it closes. */
export interface TerminalConnection {
  /**
   * Each frame, in order: output decoded as UTF-8 across frames (a character split in two is whole).
   * Frames that arrived before the first listener are kept for it (the `ready` comes at once).
   */
  onFrame(listener: (frame: UpstreamTerminalFrame) => void): void;
  /** Once, when the socket is gone (closed by either side, or dropped); at once for a listener that comes after. */
  onClose(listener: (code: number, reason: string) => void): void;
  input(data: string): void;
  resize(cols: number, rows: number): void;
  close(): void;
}

/**
 * The sandbox's terminals (issue 41; docs/sandbox-wire.md §11, §12): one PTY per connection id, the
 * same id reattaching. Failures are ProviderErrors: `capability_denied` (`details.missing:
 * ["interactiveTerminal"]`) where the deployment has no terminal routes, `environment_not_running` /
 * `environment_gone` as for any call into the sandbox.
 */
export interface SandboxTerminals {
  connect(
    environmentId: string,
    connectionId: string,
    open: { cols: number; rows: number; generation?: number },
  ): Promise<TerminalConnection>;
  /** The terminal's metadata as the sandbox reports it (unchecked); null for a terminal it does not know. */
  metadata(environmentId: string, sessionId: string): Promise<Record<string, unknown> | null>;
}

/**
 * The agent's own terminal UI for a session (interactive mode; docs/sandbox-wire.md §12), where the
 * provider has it and the claims say so (`interactiveAgent`). Its PTY is a terminal like any other
 * (SandboxTerminals), reached under the connection id `start` answers, its input fenced by the
 * control generation `claim` answers.
 */
export interface InteractiveAgent {
  start(
    environmentId: string,
    sessionId: string,
    request: { cols: number; rows: number; idempotencyKey: string },
  ): Promise<{ connectionId: string }>;
  /** Claims control under compare-and-swap on `expectedGeneration` (0 when unheld). */
  claim(
    environmentId: string,
    sessionId: string,
    request: { operationId: string; holderId: string; expectedGeneration: number },
  ): Promise<{ status: "accepted" | "replayed" | "conflict"; generation: number }>;
  /** Whether the TUI still runs: null when the sandbox knows none for the session. */
  status(environmentId: string, sessionId: string): Promise<{ status: "running" | "exited" } | null>;
  /** Stops the TUI (the coding process); a stale generation is refused upstream. */
  stop(environmentId: string, sessionId: string, generation: number): Promise<void>;
}

export interface AgentProvider {
  /** The `provider` coordinate of control refs. */
  readonly name: string;
  ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult>;
  /** What this deployment can run: its backends, their models and what each supports (GET /v1/agents); a failed read throws the provider's error unchanged. */
  catalog(): Promise<AgentCatalog>;
  /**
   * What the environment lets the gateway offer for a turn on `model` (the provider's default when
   * omitted). `recheck`: a claim was missing, so a document the provider keeps itself is read again
   * where `capabilityReadDue` allows (one kept in the record is read again by `ensureEnvironment`).
   */
  claimsFor(environment: EnvironmentRecord, model?: string, options?: { recheck?: boolean }): Promise<Claims>;
  dispatch(input: DispatchInput): Promise<DispatchReceipt>;
  events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent>;
  /** The run's result, or null while it is still running. */
  result(ref: AgentExactRunControlRef): Promise<ProviderResult | null>;
  /** Stops exactly the run the ref names; `operationId` makes a repeat the same request. */
  cancel(ref: AgentExactRunControlRef, request?: { operationId?: string; reason?: string }): Promise<CancelOutcome>;
  /** Delivers one answer upstream and says what upstream made of it. */
  respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery>;
  /**
   * Copies an agent session up to one of its runs into a new session sharing the environment's
   * files; answers the new session's id. Safe to repeat: the same new id and origin is the same
   * session. A provider whose claims say no fork is never asked; one whose route proves missing
   * throws `capability_denied` with `details.missing: ["session.fork"]`; `not_found` when the
   * session to copy (or its run) is no longer there, and `environment_not_running` /
   * `environment_gone` when the environment is stopped or gone, as a dispatch would.
   */
  fork(input: ForkInput): Promise<{ sessionId: string }>;
  /** Ends the conversation's session upstream; `lastRun` is its latest run, if any. */
  deleteSession(input: { environmentId: string; sessionId: string; lastRun?: AgentExactRunControlRef }): Promise<void>;
  /**
   * How long the upstream session `ref` ran in may stay idle before the gateway releases it:
   * defined where an idle session holds something upstream others need (a CLI Bridge retained
   * session keeps one of the bridge's process slots until it is closed).
   */
  idleReleaseMs?(ref: AgentExactRunControlRef): number | undefined;
  /**
   * Releases (closes) the upstream session `ref` ran in; safe to repeat. False when upstream kept
   * it because a turn runs there. The next turn there opens another (its receipt says whether the
   * agent remembers).
   */
  releaseSession?(ref: AgentExactRunControlRef): Promise<boolean>;
  /** The workspace's checkpoints (./checkpoints.ts), where the provider can take them. */
  readonly checkpoints?: WorkspaceCheckpoints;
  /** What the provider reports of the environment (each surface reported or unavailable, never a made-up value) and of the account. */
  observe(environment: EnvironmentRecord | null): Promise<EnvironmentObservation>;
  /** Whether a user may stop and delete their environment here (an environment shared by every user may not be). */
  readonly environmentControl: { stop: boolean; delete: boolean };
  /** Stops the environment now (the next turn resumes it). Only where `environmentControl.stop`. */
  stopEnvironment(environment: EnvironmentRecord): Promise<void>;
  /** Deletes the environment upstream; one already gone is deleted. Only where `environmentControl.delete`. */
  deleteEnvironment(environment: EnvironmentRecord): Promise<void>;
  /** The workspace's files, where the provider has routes for them (the CLI Bridge has none). */
  readonly workspaceFiles?: WorkspaceFiles;
  /** The sandbox's terminals, where the provider has them (the CLI Bridge has none). */
  readonly terminals?: SandboxTerminals;
  /** The agent's own terminal UI (interactive mode), where the provider has it. */
  readonly interactive?: InteractiveAgent;
}
