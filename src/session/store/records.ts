/**
 * The session's records: what its stores read and write (./store.ts), and what every room of the
 * session passes around. Shapes only; the tables they live in are ./schema.ts.
 */

import { z } from "zod";
import type {
  EventEnvelopeSchema,
  TranscriptPartSchema,
  TurnStatus as TurnStatusSchema,
  UsageView,
} from "../../schemas/api";
import type { RestoreAck } from "../../schemas/checkpoints";
import type {
  AgentExactRunControlRef,
  CancellationAcknowledgement,
  InteractionAcknowledgement,
  InteractionRequest,
} from "../../schemas/contracts";

export type TurnStatus = z.infer<typeof TurnStatusSchema>;
export type TranscriptPart = z.infer<typeof TranscriptPartSchema>;
export const TERMINAL_TURN_STATUSES: ReadonlySet<TurnStatus> = new Set(["completed", "failed", "cancelled"]);

export const SessionContextSchema = z.strictObject({
  sessionId: z.string(),
  conversationId: z.string(),
  ownerKey: z.string(),
});
/** Who a conversation RPC is for: session id and owner key, derived by the Worker from the user and the conversation id. */
export type SessionContext = z.infer<typeof SessionContextSchema>;

export const TurnRequest = z.strictObject({
  message: z.string(),
  model: z.string().optional(),
  interactions: z.record(z.string(), z.boolean()).optional(),
  /** The backend options the turn named (its posture is `interactions`; never a key): ../../http/agent-options.ts. */
  backend: z
    .strictObject({
      type: z.string().optional(),
      model: z.strictObject({ provider: z.string().optional(), model: z.string() }).optional(),
    })
    .optional(),
  /** The user's model credential the turn names (its key is never here: ../../user/agent-settings.ts). */
  credential: z.string().optional(),
  /** The user's MCP servers the turn enables, by name. */
  mcpServers: z.array(z.string()).optional(),
  /** The conversation's instructions, appended to the agent's system prompt. */
  instructions: z.string().optional(),
  /** A replacement of the agent's system prompt (refused where the backend can only append). */
  systemPrompt: z.string().optional(),
  /** The conversation's attachments the turn names, by id (./attachments.ts); part of the request digest. */
  attachments: z.array(z.string()).optional(),
  /** The turn this one follows, as the client named it (null: a first message sent again); absent: the active branch's tip. Part of the request digest. */
  parentTurnId: z.string().nullable().optional(),
});
export type TurnRequest = z.infer<typeof TurnRequest>;

export const TurnError = z.strictObject({ code: z.string(), message: z.string() });
export type TurnError = z.infer<typeof TurnError>;

export interface TurnRecord {
  turnId: string;
  ordinal: number;
  /** The turn it follows (null: a first message). */
  parentTurnId: string | null;
  /** The branch (agent session) it runs in (../turn-tree.ts). */
  branch: number;
  requestDigest: string;
  request: TurnRequest;
  executionId: string;
  status: TurnStatus;
  controlRef: AgentExactRunControlRef | null;
  upstreamCursor: string | null;
  /** Its result's text, as stored: null when it has none, or when `answerInParts` (read it with ../transcript.ts withAnswer). */
  resultText: string | null;
  /** Its result is its message's text (its text parts joined), held once, in its parts: not stored again. */
  answerInParts: boolean;
  error: TurnError | null;
  usage: UsageView | null;
  cancelReason: string | null;
  acceptedSeq: number | null;
  /** Since when the reader has not been able to reach the run (null while it reads). */
  lostAt: number | null;
  /** The finished message's parts, kept when the log was trimmed into the turn (null otherwise). */
  parts: TranscriptPart[] | null;
  /** When it was sent (a turn that waited in the queue: when it was queued). */
  createdAt: number;
  /** When it started: recorded pending, to be dispatched (its time limit counts from here). */
  startedAt: number;
  updatedAt: number;
  completedAt: number | null;
}

/** A turn's place in the conversation's tree (../turn-tree.ts). */
export interface TreeTurn {
  turnId: string;
  parentTurnId: string | null;
  branch: number;
  ordinal: number;
}

/** A branch as stored: where it was forked from (branch 0 is implicit and never stored). */
export interface BranchRecord {
  branch: number;
  /** The branch whose agent session it was forked from; null for one started afresh (a first message sent again). */
  forkOf: number | null;
  /** The turn it follows (the fork point: the last turn its conversation copies); null for one started afresh. */
  at: string | null;
}

/** A branch other than 0: where it was forked from, and its agent session upstream. */
export interface StoredBranch extends BranchRecord {
  agentSessionId: string;
  /** Whether its agent session exists upstream (forked, or started afresh by its first turn). */
  forked: boolean;
  createdAt: number;
}

/** An upstream session's latest run (`SessionStore.upstreamRuns`). */
export interface UpstreamRun {
  ref: AgentExactRunControlRef;
  status: TurnStatus;
  completedAt: number | null;
}

/**
 * Where a queued turn is (../turn-queue.ts): waiting (`queued`); recorded pending in `turns` and
 * being dispatched (`starting`); dispatched (`started`: its record is the turn's from then on);
 * removed before it started (`removed`); refused at its start (`refused`, with its error).
 */
export const QueueState = z.enum(["queued", "starting", "started", "removed", "refused"]);
export type QueueState = z.infer<typeof QueueState>;

export interface QueuedTurn {
  turnId: string;
  /** Its place: queued turns start in ascending position. */
  position: number;
  /** The digest of the send that queued it: a retry of that send finds it, an edit keeps it. */
  requestDigest: string;
  /** What it will send, as last edited. */
  request: TurnRequest;
  executionId: string;
  state: QueueState;
  /** Why it was removed or refused. */
  error: TurnError | null;
  createdAt: number;
  updatedAt: number;
}

/** A row of the session's event log as readers get it: one event, its seq, type and envelope JSON. */
export interface EventRow extends Record<string, SqlStorageValue> {
  seq: number;
  type: string;
  envelope: string;
}

/** What a browser receives as `data:` of one SSE frame. */
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

/** An event to append: the envelope less what the log assigns. */
export type NewEvent = Omit<EventEnvelope, "seq" | "at"> & { upstreamId?: string | null; now: number };

export type InteractionStatus = "outstanding" | "answered" | "expired" | "cancelled";

export interface InteractionRecord {
  interactionId: string;
  turnId: string;
  executionId: string;
  request: InteractionRequest;
  status: InteractionStatus;
  outcome: string | null;
  answerHmac: string | null;
  operationId: string | null;
  createdAt: number;
  resolvedAt: number | null;
}

export type StoredOperation =
  | { kind: "cancel"; requestDigest: string; ack: CancellationAcknowledgement }
  | { kind: "answer"; requestDigest: string; ack: InteractionAcknowledgement }
  | { kind: "restore"; requestDigest: string; ack: RestoreAck };
