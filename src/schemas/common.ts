import { z } from "zod";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/** contracts.md `Id`: 1–512 chars, no surrounding whitespace, no control characters (ids travel in headers). */
export const Id = z
  .string()
  .min(1)
  .max(512)
  .refine((s) => s.trim() === s, "must not start or end with whitespace")
  .refine((s) => !CONTROL_CHARS.test(s), "must not contain control characters");

export const Sha256Digest = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, "must be sha256: followed by 64 lowercase hex digits");
export type Sha256Digest = z.infer<typeof Sha256Digest>;

/** Client-chosen ids in our public API: conversation ids and turn ids. */
const ClientId = z
  .string()
  .min(1, "must be 1–128 characters")
  .max(128, "must be 1–128 characters")
  .regex(/^[A-Za-z0-9._:-]+$/, "may contain only A-Z a-z 0-9 . _ : -");

export const ConversationId = ClientId.describe("The client's conversation id");
export const TurnId = ClientId.describe("The client's turn id: a retry with the same id never runs the turn twice");

const Count = z.number().int().nonnegative();

/** contracts.md TokenUsage: input includes cache reads and writes; output includes reasoning. */
export const TokenUsage = z.strictObject({
  inputTokens: Count,
  outputTokens: Count,
  totalTokens: Count.optional(),
  cacheReadInputTokens: Count.optional(),
  cacheCreationInputTokens: Count.optional(),
  reasoningTokens: Count.optional(),
  cost: z.number().nonnegative().refine(Number.isFinite).optional(),
});
export type TokenUsage = z.infer<typeof TokenUsage>;

/** A JSON object read back from storage or the wire. */
export const JsonObject = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObject>;

/** The usage counters the gateway folds (docs/contracts.md TokenUsage, less the derived total). */
export const COUNTERS = [
  "inputTokens",
  "outputTokens",
  "reasoningTokens",
  "cacheReadInputTokens",
  "cacheCreationInputTokens",
  "cost",
] as const;
export type Counter = (typeof COUNTERS)[number];
/** Usage counts as reported: a counter that is absent is unknown, never zero. */
export const Counts = z.strictObject({
  inputTokens: Count.optional(),
  outputTokens: Count.optional(),
  reasoningTokens: Count.optional(),
  cacheReadInputTokens: Count.optional(),
  cacheCreationInputTokens: Count.optional(),
  cost: z.number().nonnegative().refine(Number.isFinite).optional(),
});
export type Counts = z.infer<typeof Counts>;

/**
 * Where a usage figure comes from (agent-interface: "Unknown identity, usage, or cost stays
 * unknown"; agent-provider-cli-bridge: "Measured usage requires explicit estimated: false"):
 * measured by the provider, an estimate, or reported without saying which.
 */
export const Provenance = z.enum(["measured", "estimated", "unknown"]);
export type Provenance = z.infer<typeof Provenance>;
/** The provenance of each counter's value; a counter that is absent has no value, so no provenance. */
export const CounterProvenance = z.partialRecord(z.enum(COUNTERS), Provenance);
export type CounterProvenance = z.infer<typeof CounterProvenance>;
