/**
 * Terminals as the API shows them (docs/api.md#terminals, issue 41): the request that opens one, the
 * seed's terminal ref, and the answers carrying a socket token.
 */
import { z } from "zod";

export const TerminalId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1 to 64 letters, digits, - or _")
  .describe("The terminal's id, the user's own");

const Cols = z.number().int().min(1).max(500).describe("Columns (1 to 500)");
const Rows = z.number().int().min(1).max(200).describe("Rows (1 to 200)");

export const OpenTerminalRequest = z
  .strictObject({
    terminalId: TerminalId.optional().describe("A terminal the user has (reattached) or a new id; absent: a new one"),
    cols: Cols.optional(),
    rows: Rows.optional(),
    mode: z
      .enum(["attach", "logical"])
      .optional()
      .describe('"attach" (the default); "logical" is refused: the Sandbox keeps no logical terminal to resume'),
  })
  .meta({ id: "OpenTerminalRequest" });

export const OpenInteractiveRequest = z
  .strictObject({ cols: Cols.optional(), rows: Rows.optional() })
  .meta({ id: "OpenInteractiveRequest" });

const Unknown = <T extends z.ZodType>(schema: T, what: string) =>
  schema.nullable().describe(`${what}; null where nothing proves it`);

export const TerminalRefSchema = z
  .object({
    terminalId: TerminalId,
    kind: z.enum(["shell", "agent"]).describe("A shell, or the agent's own terminal UI (interactive mode)"),
    conversationId: z.string().optional().describe("The conversation whose agent session it shows (kind agent)"),
    name: Unknown(z.string(), "The terminal's name in the sandbox"),
    shell: Unknown(z.string(), "Its shell"),
    cwd: Unknown(z.string(), "Its working directory"),
    cols: Unknown(z.number().int(), "Columns"),
    rows: Unknown(z.number().int(), "Rows"),
    createdAt: Unknown(z.string(), "When the sandbox started it (ISO 8601)"),
    lastActivityAt: Unknown(z.string(), "The newest input or output anyone can prove (ISO 8601)"),
    expiresAt: Unknown(z.string(), "One detach window past lastActivityAt: the sandbox ends it then, unattached"),
    isRunning: z.boolean().describe("Attached and live: it takes input"),
    exitCode: z.number().int().optional().describe("Its exit status, once an exit was delivered"),
    exitSignal: z.string().optional(),
    attachCount: z
      .number()
      .int()
      .describe("The gateway's attaches to the sandbox's terminal since this object started"),
    viewers: z.number().int().describe("Sockets open on it now"),
    cursors: z
      .object({ earliest: z.number().int().nullable(), latest: z.number().int().nullable() })
      .describe("The output seqs retained (earliest) and given (latest); null when none"),
  })
  .meta({ id: "Terminal" });

export const TerminalOpenedSchema = z
  .object({
    status: z.enum(["attached", "reattached"]),
    terminal: TerminalRefSchema,
    token: z.string().describe("A short-lived token for this terminal's socket only"),
    expiresIn: z.number().int().describe("Seconds the token is good for"),
    url: z.string().describe("The socket's path, with the token: open it as ws(s)://<host><url>"),
    generation: z.number().int().optional().describe("The control generation (interactive mode)"),
  })
  .meta({ id: "TerminalOpened" });

export const TerminalListSchema = z.object({ terminals: z.array(TerminalRefSchema) }).meta({ id: "TerminalList" });

export const TerminalClosedSchema = z
  .union([
    z.object({ status: z.literal("closed"), exitCode: z.number().int().optional(), exitSignal: z.string().optional() }),
    z.object({ status: z.literal("unknown"), message: z.string() }),
  ])
  .meta({
    id: "TerminalClosed",
    description: "closed only when the terminal's exit was delivered; unknown otherwise (the Sandbox has no delete)",
  });

export const SinceQuery = z
  .string()
  .regex(/^\d{1,15}$/, "must be a non-negative whole number")
  .describe("Resume after this output seq (exclusive): the frames after it are replayed, then live");
