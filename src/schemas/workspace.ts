/**
 * The agent's workspace as the API shows it (docs/api.md#the-workspace, issue 40): a directory's
 * entries, a file's content, an attachment. Paths are repository-relative (`.` the root:
 * src/lib/workspace-path.ts).
 */
import { z } from "zod";

export const WorkspacePathQuery = z
  .string()
  .max(4096)
  .describe("A repository-relative path (`.` or absent: the workspace's root); no `..`, no leading /");

const WorkspaceEntrySchema = z
  .object({
    name: z.string(),
    path: z.string().describe("Repository-relative"),
    kind: z.enum(["file", "dir", "symlink"]),
    size: z.number().int().nonnegative().nullable().describe("Bytes; null where the provider did not say"),
    modified: z.string().nullable().describe("ISO 8601 time; null where the provider did not say"),
  })
  .meta({ id: "WorkspaceEntry" });

export const WorkspaceListingSchema = z
  .object({
    path: z.string(),
    entries: z.array(WorkspaceEntrySchema).describe("Directories first, then files, each by name"),
    truncated: z.boolean().describe("More entries than the bound (1,000) were there: the first 1,000 are listed"),
  })
  .meta({ id: "WorkspaceListing" });

export const FileContentSchema = z
  .object({
    path: z.string(),
    size: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .describe("The file's size in bytes; null when it grew while it was read (truncated)"),
    binary: z.boolean().describe("Not UTF-8 text (a NUL byte or an invalid sequence): content is base64"),
    encoding: z.enum(["utf8", "base64"]),
    content: z.string(),
    truncated: z.boolean().optional().describe("The file grew past the bound while it was read: content is its start"),
  })
  .meta({ id: "FileContent" });

export const AttachmentSchema = z
  .object({
    id: z.string().describe("Named by a turn's `attachments`"),
    path: z.string().describe("Where it was written in the workspace (repository-relative, under uploads/)"),
    name: z.string().describe("The file's name as sanitized"),
    size: z.number().int().nonnegative(),
    mediaType: z
      .string()
      .describe("Sniffed from the bytes (png, jpeg, gif, webp, pdf, UTF-8 text), else application/octet-stream"),
  })
  .meta({ id: "Attachment" });
export type Attachment = z.infer<typeof AttachmentSchema>;

const AttachmentId = z
  .string()
  .regex(/^att_[A-Za-z0-9]{12}$/, "must be an attachment id (att_ and 12 letters or digits)");

/** The `attachments` field of a turn: the ids its upload answered, each once. */
export const TurnAttachments = z
  .array(AttachmentId)
  .max(20)
  .refine((ids) => new Set(ids).size === ids.length, "must not name an attachment twice")
  .optional()
  .describe(
    "Attachments of this conversation (POST …/attachments) the turn hands the agent: the message says where each is (Tangle only)",
  );
