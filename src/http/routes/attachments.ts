/**
 * Attachments (docs/api.md#attachments, issue 40): `POST /v1/conversations/:cid/attachments`, one
 * file (multipart, one `file` field) written into the user's workspace under
 * `uploads/<id>-<name>` and recorded by the conversation, which a later turn names by id. Bounded
 * in size (`ATTACHMENT_MAX_BYTES`, 413) and count (`ATTACHMENTS_PER_CONVERSATION`, 409); its type
 * sniffed from its bytes, never taken from the client; its name sanitized (../../lib/file-bytes.ts).
 */
import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../errors";
import { safeFileName, sniffMediaType } from "../../lib/file-bytes";
import { ConversationId } from "../../schemas/common";
import { type Attachment, AttachmentSchema } from "../../schemas/workspace";
import type { SessionContext } from "../../session/session";
import { type AppEnv, session } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";
import { checkedPath, inWorkspace, workspaceFilesOf } from "../workspace";

/** The folder attachments are written to, repository-relative. */
const UPLOADS_FOLDER = "uploads";
/** What a multipart body may hold beyond its file (the boundaries, the part headers). */
const FORM_OVERHEAD_BYTES = 16 * 1024;
const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A new attachment id: `att_` and 12 random letters or digits. */
function newAttachmentId(): string {
  const random = crypto.getRandomValues(new Uint8Array(12));
  return `att_${Array.from(random, (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join("")}`;
}

/**
 * The id of the `index`th file of a message sent as turn `turnId` (the AI SDK route): derived from
 * the turn, the place and the bytes, so a retried message names the same attachments.
 */
export async function derivedAttachmentId(turnId: string, index: number, bytes: Uint8Array): Promise<string> {
  const content = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const hex = [...content].map((b) => b.toString(16).padStart(2, "0")).join("");
  const key = new TextEncoder().encode(`attachment/v1|${turnId.length}:${turnId}|${index}|${hex}`);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", key));
  return `att_${Array.from(digest.subarray(0, 12), (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join("")}`;
}

const UploadForm = z
  .object({ file: z.string().meta({ format: "binary" }).describe("The file, with its name") })
  .meta({ id: "AttachmentUpload" });

const tooLarge = (size: number | string, max: number) =>
  new ApiError(413, "attachment_too_large", `the file is ${size} bytes; attachments are at most ${max} bytes`, {
    maxBytes: max,
  });

/** The one `file` field of a multipart body, bounded; 400 naming what is wrong otherwise. */
async function uploadedFile(c: Context<AppEnv>, max: number): Promise<File> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "multipart/form-data")
    throw new ApiError(415, "unsupported_media_type", "the body must be multipart/form-data with one file field");
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > max + FORM_OVERHEAD_BYTES) throw tooLarge(`more than ${max}`, max);
  let form: FormData;
  try {
    form = await c.req.formData();
  } catch {
    throw new ApiError(400, "invalid_request", "the body is not a readable multipart/form-data body", {
      issues: [{ path: "(body)", message: "not multipart/form-data" }],
    });
  }
  const names = [...new Set([...form.keys()])];
  const unknown = names.filter((n) => n !== "file");
  const files = form.getAll("file");
  if (unknown.length > 0 || files.length !== 1 || typeof files[0] === "string") {
    const message =
      unknown.length > 0
        ? `unknown field ${unknown.join(", ")}: the body holds one file field`
        : "the body must hold exactly one file field, a file";
    throw new ApiError(400, "invalid_request", `the body is invalid: ${message}`, {
      issues: [{ path: unknown.length > 0 ? unknown.join(", ") : "file", message }],
    });
  }
  const file = files[0] as File;
  if (file.size > max) throw tooLarge(file.size, max);
  return file;
}

type SessionStub = Awaited<ReturnType<typeof session>>["stub"];

/**
 * Writes one file into the workspace and records it as the conversation's attachment. `id`: the
 * attachment's id where the caller derives it (the AI SDK route: a retried message names the same
 * files), else a new one; an id already recorded is answered again, its file written again.
 */
export async function attachFile(
  c: Context<AppEnv>,
  { stub, context, conversationId }: { stub: SessionStub; context: SessionContext; conversationId: string },
  file: { name: string; bytes: Uint8Array },
  id: string = newAttachmentId(),
): Promise<Attachment> {
  workspaceFilesOf(c);
  const config = c.get("config");
  const max = config.ATTACHMENT_MAX_BYTES;
  const { bytes } = file;
  if (bytes.length > max) throw tooLarge(bytes.length, max);
  // A conversation's first act may be an upload: its object binds it (admitted) if it holds none yet.
  const held = unwrapRpc(await stub.attachmentCount(context, c.get("identity").issuedAt));
  const name = safeFileName(file.name);
  const path = checkedPath(`${UPLOADS_FOLDER}/${id.slice("att_".length)}-${name}`);
  const attachment: Attachment = { id, path, name, size: bytes.length, mediaType: sniffMediaType(bytes) };
  // The count is checked again when it is recorded; this check spares the upload.
  if (held >= config.ATTACHMENTS_PER_CONVERSATION) limitReached(held, config.ATTACHMENTS_PER_CONVERSATION);
  // Into the sandbox the conversation's active branch runs on (a branch from an earlier turn has its own).
  const written = await inWorkspace(
    c,
    path,
    (files, environmentId) => files.upload(environmentId, path, bytes, name),
    conversationId,
  );
  if (written.size !== null && written.size !== bytes.length)
    throw new ApiError(
      502,
      "upstream_error",
      `the sandbox says it wrote ${written.size} bytes of the ${bytes.length} sent`,
      {
        upstreamSize: written.size,
        size: bytes.length,
      },
    );
  return unwrapRpc(await stub.recordAttachment(conversationId, attachment, config.ATTACHMENTS_PER_CONVERSATION));
}

function limitReached(held: number, max: number): never {
  throw new ApiError(
    409,
    "attachment_limit_reached",
    `the conversation holds ${held} attachments, as many as allowed (${max})`,
    {
      max,
    },
  );
}

export const attachmentRoutes = new DeclaredRoutes();

attachmentRoutes.serve(
  {
    method: "post",
    path: "/:cid/attachments",
    summary:
      "Attach a file: written into the workspace under uploads/ and named by a later turn's attachments (multipart, one file field)",
    params: { cid: ConversationId },
    form: UploadForm,
    answers: { 201: json(AttachmentSchema, "Written into the workspace and recorded") },
    errors: [400, 401, 404, 409, 413, 415, 501, 502, 503, 504],
  },
  async (c) => {
    // A provider without workspace files takes none, before anything is read.
    workspaceFilesOf(c);
    const conversation = await session(c);
    const file = await uploadedFile(c, c.get("config").ATTACHMENT_MAX_BYTES);
    const bytes = new Uint8Array(await file.arrayBuffer());
    return c.json(await attachFile(c, conversation, { name: file.name, bytes }), 201);
  },
);
