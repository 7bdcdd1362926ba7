/**
 * The workspace as a conversation shows it (docs/api.md "The workspace"): a turn's checkpoint, the
 * files it really changed (read from the workspace, not from the agent's tool calls), and the
 * acknowledgement of an undo or a redo. The `workspace.changes` and `workspace.restored` events
 * carry the same shapes.
 */
import { z } from "zod";

const WorkspaceFileChange = z.object({
  path: z.string(),
  status: z.enum(["added", "modified", "deleted", "renamed"]),
  from: z.string().optional().describe("A rename's earlier path"),
  sizeBefore: z.number().int().nonnegative().optional(),
  sizeAfter: z.number().int().nonnegative().optional(),
  binary: z.boolean(),
  diff: z.string().optional().describe("A unified text diff; absent for a binary file, or past the diff's byte bound"),
});

/**
 * What a turn changed. `workspace`: compared from the turn's checkpoint to the next one (or the
 * workspace as the turn left it); `tool-calls`: no checkpoint could be compared, so only what the
 * agent's tool calls said they wrote is known (the message's tool parts), and `reason` says why.
 */
export const TurnChanges = z.discriminatedUnion("source", [
  z.object({
    source: z.literal("workspace"),
    files: z.array(WorkspaceFileChange),
    truncated: z.boolean().describe("More text changed than WORKSPACE_DIFF_MAX_BYTES: files past it have no diff"),
  }),
  z.object({ source: z.literal("tool-calls"), reason: z.string() }),
]);
export type TurnChanges = z.infer<typeof TurnChanges>;

/** A turn's checkpoint, as far as it is known. */
export const CheckpointView = z.object({
  status: z
    .enum(["created", "unknown", "failed", "unavailable", "released", "none"])
    .describe(
      "created: the turn can be undone; unknown: asked for, not confirmed; failed/unavailable: there is none " +
        "(message says why); released: given back by the retention; none: no checkpoint was asked for",
    ),
  message: z.string().optional(),
  inUse: z
    .array(z.number().int().nonnegative())
    .optional()
    .describe("the branches whose own sandbox was made from this checkpoint: it is kept while they live"),
});
export type CheckpointView = z.infer<typeof CheckpointView>;

/** The acknowledgement of an undo or a redo: only an explicit outcome upstream is one. */
export const RestoreAck = z.object({
  operationId: z.string(),
  turnId: z.string(),
  direction: z.enum(["undo", "redo"]),
  status: z.enum(["restored", "replayed"]).describe("replayed: this operation was acknowledged before"),
  restoredAt: z.string(),
});
export type RestoreAck = z.infer<typeof RestoreAck>;

export const RestoreRequest = z.strictObject({
  operationId: z
    .string()
    .min(1)
    .max(200)
    .describe("Names this undo or redo for good: the same request again replays its acknowledgement"),
});
