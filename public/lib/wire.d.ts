/**
 * The gateway's answers as the page reads them, inferred from the server's own schemas
 * (src/schemas/api.ts, the same ones the OpenAPI document at /openapi.json is generated from, and
 * src/schemas/contracts.ts): no shape of the API is written a second time for the page. Types only:
 * the page's JSDoc imports them (`import("./wire").…`), the browser never loads this file.
 *
 * Where the page deliberately takes less than the schema promises (an older server's usage view
 * without provenance, a stream event whose data no schema names), the type says so here, as a
 * change of the schema's type, so it follows the schema when that changes.
 */
import type { z } from "zod";
import type { PutCredentialAnswer, PutMcpServerAnswer } from "../../src/schemas/agent-settings";
import type * as api from "../../src/schemas/api";
import type { Provenance } from "../../src/schemas/common";
import type {
  CancellationAcknowledgement,
  InteractionAcknowledgement,
  InteractionField,
  InteractionRequest,
} from "../../src/schemas/contracts";
import type { EnvironmentAnswer } from "../../src/schemas/environment";
import type { FileContentSchema, WorkspaceListingSchema } from "../../src/schemas/workspace";

export type { CredentialView, InstructionsView, McpServerView } from "../../src/schemas/agent-settings";
export type { AgentBackend, AgentCatalog, CatalogFact, ConversationAgent } from "../../src/schemas/agents";
/** PUT /v1/credentials/:name */
export type CredentialSaved = z.infer<typeof PutCredentialAnswer>;
/** PUT /v1/mcp-servers/:name */
export type McpServerSaved = z.infer<typeof PutMcpServerAnswer>;

export type { TurnView } from "../../src/schemas/api";
export type { CheckpointView, TurnChanges } from "../../src/schemas/checkpoints";
export type { Attachment } from "../../src/schemas/workspace";
/** GET /v1/environment/files */
export type WorkspaceListing = z.infer<typeof WorkspaceListingSchema>;
/** GET /v1/environment/files/content */
export type FileContent = z.infer<typeof FileContentSchema>;
export type {
  CancellationAcknowledgement,
  InteractionAcknowledgement,
  InteractionField,
  InteractionRequest,
  Provenance,
};

/** GET /healthz */
export type Health = z.infer<typeof api.HealthSchema>;
/** POST /v1/dev/login */
export type DevLoginAnswer = z.infer<typeof api.DevLoginAnswer>;
/** POST …/stream-token */
export type StreamToken = z.infer<typeof api.StreamTokenAnswer>;
/** GET /v1/environment */
export type EnvironmentView = z.infer<typeof EnvironmentAnswer>;
/** DELETE /v1/conversations/:id */
export type Deleted = z.infer<typeof api.DeletedAnswer>;
/** One entry of GET /v1/conversations. */
export type ConversationEntry = z.infer<typeof api.ConversationListSchema>["conversations"][number];
/** GET /v1/conversations/:id */
export type ConversationSummary = z.infer<typeof api.ConversationSummarySchema>;
/** GET …/usage */
export type ConversationUsage = z.infer<typeof api.ConversationUsageSchema>;
/** A conversation's token budget, as GET …/usage reports it. */
type Budget = NonNullable<ConversationUsage["budget"]>;
/** GET …/messages */
export type Messages = z.infer<typeof api.MessagesSchema>;
/** GET …/branches */
export type Branches = z.infer<typeof api.BranchListSchema>;
/** The first event of GET …/events?snapshot=1: what GET …/bootstrap answers but its stream token. */
export type Snapshot = Omit<z.infer<typeof api.ConversationBootstrapSchema>, "streamToken">;
/** A turn's status on the server. */
export type TurnStatus = z.infer<typeof api.TurnStatus>;

/**
 * A stream event as the page reads it: an EventEnvelope's seq, turn id, type and time. Its data is
 * any record: each event type's data has no schema of its own (docs/sse-protocol.md describes
 * them), so the reducer checks what it reads of it.
 */
export type StreamEvent = Pick<z.infer<typeof api.EventEnvelopeSchema>, "seq" | "turnId" | "type" | "at"> & {
  // biome-ignore lint/suspicious/noExplicitAny: each event type's fields are read where its type is known
  data: Record<string, any>;
};

/** An ask of the agent where the transcript has it, and how it ended. */
export type TranscriptInteractionPart = Extract<z.infer<typeof api.TranscriptPartSchema>, { type: "interaction" }>;

/** The transcript the page rebuilds from: GET …/messages without the conversation id. */
export type Transcript = Pick<Messages, "messages" | "lastEventId">;

/** `T` with the keys `K` optional. */
type Lenient<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

/**
 * A turn's usage as the page takes it (UsageView): the three figures it shows are required (null:
 * unknown), the rest may be missing, as from an older server — whose figures, without provenance,
 * the page then calls unverified.
 */
export type UsageReading = Lenient<
  Omit<api.UsageView, "provenance">,
  | "reasoningTokens"
  | "cacheReadInputTokens"
  | "cacheCreationInputTokens"
  | "source"
  | "conflict"
  | "modelRequests"
  | "servedModels"
> & {
  provenance?: Partial<api.UsageView["provenance"]>;
};

/** A conversation's usage total as the page takes it (TotalView), likewise. */
export type TotalReading = Lenient<
  Omit<api.TotalView, "provenance">,
  "reasoningTokens" | "cacheReadInputTokens" | "cacheCreationInputTokens" | "conflict" | "unknown"
> & {
  provenance?: Partial<api.TotalView["provenance"]>;
};

/** A budget as the page takes it: without provenance from an older server. */
export type BudgetReading = Lenient<Budget, "provenance">;
