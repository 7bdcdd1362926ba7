/**
 * The public HTTP API's bodies and answers (docs/architecture.md "Public HTTP API"). The OpenAPI
 * document at /openapi.json is generated from these same schemas.
 */

import { z } from "zod";
import { ConversationAgentSchema, ProviderOptions, TurnSettingsFields } from "./agents";
import { CheckpointView, TurnChanges } from "./checkpoints";
import { COUNTERS, ConversationId, Id, Provenance, TokenUsage, TurnId } from "./common";
import {
  CancellationAcknowledgement,
  ChildTaskEvent,
  InteractionAcknowledgement,
  InteractionRequest,
  RequestedInteractions,
} from "./contracts";
import { TurnAttachments } from "./workspace";

export const ErrorBody = z
  .object({ error: z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() }) })
  .meta({ id: "Error" });

export const SubmitTurnBody = z
  .strictObject({
    turnId: TurnId.optional().describe("Required here or as the Idempotency-Key header"),
    message: z.string().min(1, "must not be empty"),
    model: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe(
        "The model for this turn (Tangle: `provider/model`; CLI Bridge: a model route); omitted: the conversation's (docs/api.md#choosing-the-agent)",
      ),
    interactions: RequestedInteractions.optional(),
    providerOptions: ProviderOptions.optional(),
    ...TurnSettingsFields,
    attachments: TurnAttachments,
    whenBusy: z
      .enum(["refuse", "queue"])
      .optional()
      .describe(
        "While another turn runs (or turns wait): refuse (the default) answers 409 session_busy; queue accepts the turn as queued, to start when the turns before it end",
      ),
    parentTurnId: TurnId.nullable()
      .optional()
      .describe(
        "The turn this one follows (docs/api.md#branches): omitted, the active branch's latest turn; a turn that already has a follower starts a branch (an edit of the message after it, or a regenerate of its answer); null sends a first message again. Part of what a retry must repeat",
      ),
  })
  .meta({ id: "SubmitTurn" });
export type SubmitTurnBody = z.infer<typeof SubmitTurnBody>;

export const CancelBody = z
  .strictObject({
    operationId: Id.describe("Repeat the same operationId to retry safely"),
    reason: z.string().min(1).max(2048).optional(),
    queue: z
      .enum(["keep", "clear"])
      .optional()
      .describe("keep (the default): queued turns start after the cancelled one ends; clear: they are removed too"),
  })
  .meta({ id: "Cancel" });

export const EditQueuedTurnBody = z
  .strictObject({ message: z.string().min(1, "must not be empty") })
  .meta({ id: "EditQueuedTurn" });

export const QueueClearedAnswer = z
  .object({ removed: z.array(TurnId).describe("the queued turns removed, in their order") })
  .meta({ id: "QueueCleared" });

export const AnswerBody = z
  .strictObject({
    operationId: Id.describe("Repeat the same operationId to retry safely"),
    outcome: z.enum(["accepted", "declined", "cancelled"]),
    data: z.record(z.string(), z.unknown()).optional().describe("The answer's fields, for an accepted answer"),
  })
  .meta({ id: "Answer" });

export const DevLoginBody = z
  .strictObject({
    user: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9._@:-]+$/, "may contain only A-Z a-z 0-9 . _ @ : -"),
  })
  .meta({ id: "DevLogin" });

const NullableCount = z.number().int().nonnegative().nullable();

const CounterProvenanceView = Provenance.nullable().describe(
  "measured: the provider measured it; estimated: an estimate (never a measurement); unknown: reported without saying which; null: the counter is unknown",
);

const UsageProvenanceSchema = z
  .object({
    inputTokens: CounterProvenanceView,
    outputTokens: CounterProvenanceView,
    reasoningTokens: CounterProvenanceView,
    cacheReadInputTokens: CounterProvenanceView,
    cacheCreationInputTokens: CounterProvenanceView,
    cost: CounterProvenanceView,
  })
  .meta({
    id: "UsageProvenance",
    description:
      "Where each figure comes from. A figure built from several reports (a running total, a conversation total) is as weak as its weakest part: estimated if any part is, else unknown if any part is",
  });

export const UsageViewSchema = z
  .object({
    inputTokens: NullableCount,
    outputTokens: NullableCount,
    reasoningTokens: NullableCount,
    cacheReadInputTokens: NullableCount,
    cacheCreationInputTokens: NullableCount,
    cost: z.number().nonnegative().nullable().describe("USD"),
    provenance: UsageProvenanceSchema,
    source: z
      .enum(["receipt", "running", "none"])
      .describe("receipt: the run's authoritative total; running: observed so far"),
    conflict: z.boolean().describe("a cumulative total fell, or the receipt disagreed with the streamed total"),
    modelRequests: NullableCount.describe(
      "model requests the provider reported for the run (CLI Bridge model_requests); null: not reported, or not an exact measurement",
    ),
    servedModels: z
      .array(z.string())
      .nullable()
      .describe(
        "the models the provider reported serving the run (CLI Bridge provider_models); null: not reported. Never taken from the requested model",
      ),
  })
  .meta({ id: "Usage", description: "Token usage; null means unknown (never reported), not zero" });
export type UsageView = z.infer<typeof UsageViewSchema>;

const UsageTotalSchema = UsageViewSchema.omit({ source: true, modelRequests: true, servedModels: true })
  .extend({
    complete: z.boolean().describe("false: some turn's usage is unknown, so every figure is a floor (at least)"),
    unknown: z.array(z.enum(COUNTERS)).describe("counters some turn did not report"),
  })
  .meta({ id: "UsageTotal" });
export type TotalView = z.infer<typeof UsageTotalSchema>;

export const TurnStatus = z.enum(["pending", "running", "completed", "failed", "cancelled"]);
/** A turn's status as the API answers it: a turn that waits in the queue is `queued` (it has no record of a run yet). */
const TurnViewStatus = z.enum([...TurnStatus.options, "queued"]);

/**
 * What a running turn waits for while an ask of the agent is open (the Sandbox's names: a turn
 * reports a status such as `awaiting_question` or `awaiting_plan_decision`); `awaiting_interaction`
 * for a namespaced kind of ask. Null when nobody is waited for.
 */
export const WaitingFor = z
  .enum(["awaiting_question", "awaiting_permission", "awaiting_plan_decision", "awaiting_interaction"])
  .meta({
    id: "WaitingFor",
    description:
      "What the turn waits for: the kind of the oldest open ask (question, permission, plan, or another kind)",
  });
export type WaitingFor = z.infer<typeof WaitingFor>;

export const TurnViewSchema = z
  .object({
    turnId: TurnId,
    executionId: z.string(),
    status: TurnViewStatus,
    queuePosition: z.number().int().positive().optional().describe("a queued turn's place in the queue: 1 starts next"),
    waitingFor: WaitingFor.nullable().describe(
      "while the turn runs: what it waits for (an ask of the agent is open), else null; back to null once answered, expired or ended",
    ),
    message: z.string(),
    parentTurnId: TurnId.nullable()
      .optional()
      .describe(
        "the turn this one follows; null for a first message; absent while the turn is queued (it takes its place in the tree when it starts)",
      ),
    branch: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("the branch (agent session) the turn runs in; absent while the turn is queued"),
    model: z.string().optional().describe("the model route the turn asked for (absent: the provider's default)"),
    servedModels: z
      .array(z.string())
      .nullable()
      .describe(
        "the models the provider reported serving this turn; null: not reported (unknown). Never inferred from the requested model",
      ),
    result: z.object({ text: z.string() }).optional(),
    error: z.object({ code: z.string(), message: z.string() }).optional(),
    usage: UsageViewSchema.optional(),
    cancelReason: z.string().optional(),
    checkpoint: CheckpointView.optional().describe(
      "the workspace's checkpoint taken before the turn (GET …/turns/:turnId only): what undo restores",
    ),
    after: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("Open the event stream with ?after= this to see the turn from its start"),
    cached: z.boolean().optional(),
    createdAt: z.string().describe("when the turn was sent (a queued turn: when it was queued, not when it started)"),
    startedAt: z
      .string()
      .optional()
      .describe(
        "when the turn started: when it was sent, or for a turn that waited in the queue, when it left it; absent while it waits (or if it never started)",
      ),
    completedAt: z.string().optional(),
  })
  .meta({ id: "Turn" });
export type TurnView = z.infer<typeof TurnViewSchema>;

export const EventEnvelopeSchema = z
  .object({
    seq: z.number().int().positive(),
    turnId: z.string().nullable(),
    executionId: z.string().nullable(),
    type: z.string(),
    data: z.record(z.string(), z.unknown()),
    usage: TokenUsage.optional(),
    usageMode: z.enum(["delta", "cumulative"]).optional(),
    at: z.string(),
  })
  .meta({ id: "Event", description: "The data of one SSE frame; the frame's id is seq and its event name is type" });
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;

export const ConversationSummarySchema = z
  .object({
    conversationId: ConversationId,
    state: z.enum(["idle", "running"]),
    waitingFor: WaitingFor.nullable().describe("what the running turn waits for (its waitingFor), else null"),
    title: z.string().nullable(),
    agent: ConversationAgentSchema.describe("the agent it runs (docs/api.md#choosing-the-agent)"),
    activeTurn: TurnViewSchema.nullable(),
    lastTurn: TurnViewSchema.nullable(),
    queue: z.array(TurnViewSchema).describe("turns that wait to start, in order (status queued)"),
    turnCount: z.number().int().describe("turns on the active branch"),
    branch: z
      .number()
      .int()
      .nonnegative()
      .describe("the active branch: lastTurn is its latest turn, /messages its conversation"),
    branchCount: z.number().int().nonnegative(),
    interactive: z
      .object({ terminalId: z.string(), generation: z.number().int(), startedAt: z.string() })
      .nullable()
      .describe(
        "The agent's own terminal UI drives the session (interactive mode, docs/api.md#terminals): no turn is sent meanwhile; null otherwise",
      ),
    lastEventId: z.number().int(),
    interactions: z.array(z.unknown()),
    usage: UsageTotalSchema,
    createdAt: z.string().nullable(),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: "ConversationSummary" });

/** What a budget's `used` is made of. */
const BUDGET_PROVENANCE =
  "the weakest provenance of the input and output tokens counted in `used`: estimated means the budget stopped (or will stop) on spend that is at least in part an estimate";

export const ConversationUsageSchema = z
  .object({
    conversationId: ConversationId,
    total: UsageTotalSchema,
    turns: z.array(
      z.object({
        turnId: TurnId,
        executionId: z.string(),
        status: z.enum(["pending", "running", "completed", "failed", "cancelled"]),
        model: z
          .string()
          .optional()
          .describe("the model route the turn asked for; the model that served it is usage.servedModels"),
        usage: UsageViewSchema,
        conflicts: z.array(
          z.object({ counter: z.string(), previous: z.number(), next: z.number(), source: z.string() }),
        ),
        receiptDisagreements: z.array(z.object({ counter: z.string(), streamed: z.number(), receipt: z.number() })),
      }),
    ),
    budget: z
      .object({
        tokens: z.number().int().positive(),
        used: z.number().int().nonnegative(),
        complete: z.boolean(),
        exceeded: z.boolean(),
        scope: z.enum(["conversation", "user"]).describe("the tightest budget that applies"),
        provenance: Provenance.describe(BUDGET_PROVENANCE),
      })
      .nullable(),
  })
  .meta({ id: "ConversationUsage" });

export const ConversationEntrySchema = z
  .object({
    conversationId: ConversationId,
    title: z.string(),
    state: z.enum(["idle", "running"]),
    waitingFor: WaitingFor.nullable().describe("what the running turn waits for, else null"),
    branch: z.number().int().nonnegative().describe("the branch the conversation shows (its summary's branch)"),
    agent: ConversationAgentSchema.nullable().describe(
      "the agent it runs (docs/api.md#choosing-the-agent); null: not listed since its last turn",
    ),
    lastEventId: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: "ConversationEntry" });
export type ConversationEntry = z.infer<typeof ConversationEntrySchema>;

export const ConversationListSchema = z
  .object({ conversations: z.array(ConversationEntrySchema) })
  .meta({ id: "ConversationList" });

/** The longest title a conversation can be given (the title from a first message is at most 80). */
const TITLE_MAX_CHARS = 200;

/** Control characters (C0, DEL, C1) and the line and paragraph separators: a title is one line of text. */
const TITLE_FORBIDDEN = /[\p{Cc}\u2028\u2029]/u;

export const RenameConversationBody = z
  .strictObject({
    title: z
      .string()
      .trim()
      .min(1, "must not be empty (after trimming spaces)")
      .max(TITLE_MAX_CHARS, `must be at most ${TITLE_MAX_CHARS} characters`)
      .refine((title) => !TITLE_FORBIDDEN.test(title), "must be one line with no control characters")
      .describe("The conversation's new title: trimmed, 1 to 200 characters, one line with no control characters"),
  })
  .meta({ id: "RenameConversation" });

const TranscriptContentPartSchema = z.looseObject({
  id: z.string(),
  type: z.enum(["text", "reasoning", "tool", "file", "subtask"]),
  text: z.string().optional(),
  tool: z.string().optional(),
  state: z.record(z.string(), z.unknown()).optional(),
});

const TranscriptInteractionPartSchema = z
  .object({
    id: z.string().describe("the interaction id"),
    type: z.literal("interaction"),
    request: InteractionRequest.describe("what was asked, as interaction.requested carried it"),
    status: z.enum(["outstanding", "answered", "expired", "cancelled"]),
    outcome: z
      .enum(["accepted", "declined", "cancelled"])
      .optional()
      .describe("how it was answered; never the answer's values"),
    reason: z.string().optional().describe("why it ended unanswered, when known"),
    askedAt: z.string(),
    resolvedAt: z.string().optional(),
  })
  .meta({ id: "TranscriptInteractionPart", description: "An ask of the agent, where it was asked, and how it ended" });

const TranscriptWarningPartSchema = z
  .object({
    id: z.string().describe("`warning:` and the id (seq) of the event that carried it"),
    type: z.literal("warning"),
    code: z
      .string()
      .describe(
        "as the `warning` event said: `agent_memory_reset` (the agent started without the earlier conversation in its memory), `stream_incomplete`, …",
      ),
    message: z.string(),
  })
  .meta({
    id: "TranscriptWarningPart",
    description: "A warning the turn's events carried, where it came: what the stream showed, kept for a reload",
  });

const TranscriptSubagentPartSchema = ChildTaskEvent.omit({ sourceEventId: true })
  .extend({ id: z.string().describe("the child task's id (its `childId`)"), type: z.literal("subagent") })
  .meta({
    id: "TranscriptSubagentPart",
    description:
      "A child task the agent started (a subagent), where its first update came, as its latest update says: nested under the one its `parentChildId` names",
  });

const TranscriptChangesPartSchema = z
  .intersection(
    z.object({
      id: z.string().describe("`changes:` and the id (seq) of the `workspace.changes` event"),
      type: z.literal("changes"),
    }),
    TurnChanges,
  )
  .meta({
    id: "TranscriptChangesPart",
    description:
      "What the turn really changed in the workspace (source workspace), or why only its tool calls can say (source tool-calls)",
  });

const TranscriptRestorePartSchema = z
  .object({
    id: z.string().describe("`restore:` and the id (seq) of the `workspace.restored` event"),
    type: z.literal("restore"),
    direction: z.enum(["undo", "redo"]),
    operationId: z.string(),
    restoredAt: z.string(),
  })
  .meta({ id: "TranscriptRestorePart", description: "The turn's file changes undone, or redone" });

export const TranscriptPartSchema = z.union([
  z.discriminatedUnion("type", [
    TranscriptContentPartSchema,
    TranscriptInteractionPartSchema,
    TranscriptWarningPartSchema,
    TranscriptSubagentPartSchema,
    TranscriptRestorePartSchema,
  ]),
  TranscriptChangesPartSchema,
]);

const TranscriptMessageSchema = z
  .discriminatedUnion("role", [
    z.object({
      role: z.literal("user"),
      turnId: TurnId,
      text: z.string(),
      at: z.string(),
      siblings: z
        .object({ index: z.number().int().nonnegative(), turnIds: z.array(TurnId) })
        .optional()
        .describe(
          "where branches split at this message: every turn that follows the same turn, oldest first, and which one this is (the page's < n/m > picker)",
        ),
    }),
    z.object({
      role: z.literal("assistant"),
      turnId: TurnId,
      executionId: z.string(),
      status: TurnStatus,
      parts: z.array(TranscriptPartSchema),
      text: z.string(),
      error: z.object({ code: z.string(), message: z.string() }).optional(),
      cancelReason: z
        .string()
        .optional()
        .describe("why a cancelled turn was cancelled (the user's reason, or budget_exceeded)"),
      at: z.string(),
    }),
  ])
  .meta({ id: "TranscriptMessage" });
export type TranscriptMessage = z.infer<typeof TranscriptMessageSchema>;

const BranchViewSchema = z
  .object({
    branch: z.number().int().nonnegative(),
    active: z.boolean(),
    forkedFrom: z
      .object({ branch: z.number().int().nonnegative(), turnId: TurnId })
      .nullable()
      .describe(
        "the branch whose agent session it was forked from, and the last turn copied; null for branch 0, for a first message sent again, and for a branch started afresh because the session to fork was gone (its sandbox replaced)",
      ),
    firstTurnId: TurnId,
    parentTurnId: TurnId.nullable().describe("the turn its first turn follows (where it splits from its siblings)"),
    tipTurnId: TurnId,
    turnIds: z.array(TurnId).describe("its conversation: every turn on its path, first message first"),
  })
  .meta({ id: "Branch" });
export type BranchView = z.infer<typeof BranchViewSchema>;

export const BranchListSchema = z
  .object({
    conversationId: ConversationId,
    active: z.number().int().nonnegative(),
    branches: z.array(BranchViewSchema),
  })
  .meta({ id: "Branches" });

export const SwitchBranchBody = z
  .strictObject({
    branch: z.number().int().nonnegative().optional().describe("the branch to show"),
    turnId: TurnId.optional().describe(
      "or a turn to show: the active branch when it goes through it, else the newest branch that does",
    ),
  })
  .meta({ id: "SwitchBranch", description: "Names exactly one of branch and turnId" });

export const MessagesSchema = z
  .object({
    conversationId: ConversationId,
    branch: z.number().int().nonnegative().describe("the branch these messages are the conversation of"),
    lastEventId: z.number().int(),
    messages: z.array(TranscriptMessageSchema),
  })
  .meta({ id: "Messages" });

export const HealthSchema = z
  .object({
    ok: z.literal(true),
    version: z.string(),
    provider: z.string(),
    devLogin: z.boolean().describe("dev login is available to this caller"),
  })
  .meta({ id: "Health" });
export const StreamTokenAnswer = z
  .object({ token: z.string(), expiresIn: z.number().int(), eventsUrl: z.string() })
  .meta({
    id: "StreamToken",
    description:
      "A short-lived token for EventSource, accepted only as ?access_token= on this conversation's events route",
  });
export const ConversationBootstrapSchema = z
  .object({
    summary: ConversationSummarySchema,
    messages: MessagesSchema.describe("the active branch's messages (GET …/messages)"),
    branches: BranchListSchema,
    usage: ConversationUsageSchema,
    streamToken: StreamTokenAnswer.nullable().describe(
      "a stream token for this conversation's events (POST …/stream-token); null where this deployment signs none (no AUTH_JWT_SECRET)",
    ),
  })
  .meta({
    id: "ConversationBootstrap",
    description:
      "What a page needs to show a conversation and follow it, in one answer: the summary, messages, branches and usage as their own routes answer them, read at once (all four of the same last event), and a stream token; follow the events strictly after messages.lastEventId",
  });
export const DevLoginAnswer = z
  .object({ token: z.string(), user: z.string(), expiresIn: z.number().int() })
  .meta({ id: "DevLoginAnswer" });
export const DeletedAnswer = z.object({ deleted: z.literal(true) }).meta({ id: "Deleted" });

export const CancelAckSchema = CancellationAcknowledgement.meta({ id: "CancellationAcknowledgement" });
export const InteractionAckSchema = InteractionAcknowledgement.meta({ id: "InteractionAcknowledgement" });
