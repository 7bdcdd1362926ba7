/**
 * The agent's workspace in the user's hands (docs/api.md#the-workspace, issue 40): a directory
 * listed, a file read (bounded, binary marked), a file or a directory downloaded (streamed,
 * bounded). Mounted at `/v1/environment/files`, authenticated by the app. Paths are checked first
 * (../workspace.ts); the sandbox is resumed where it stopped, never created.
 */

import { z } from "zod";
import { ApiError } from "../../errors";
import { attachmentDisposition, limitedStream, textOf, utf8Boundary } from "../../lib/file-bytes";
import { ConversationId } from "../../schemas/common";
import { FileContentSchema, WorkspaceListingSchema, WorkspacePathQuery } from "../../schemas/workspace";
import { bytes, DeclaredRoutes, json } from "../route-declaration";
import { checkedPath, inWorkspace, LIST_MAX_ENTRIES, listingOf } from "../workspace";
import { BranchQuery } from "./conversations";

/** The largest file `…/content` answers; a larger one is 413 `file_too_large` (download it instead). */
const FILE_CONTENT_MAX_BYTES = 1024 * 1024;

/** Whose files: the user's sandbox, or with `conversation` (and `branch`) the sandbox that branch runs on. */
const whose = {
  conversation: ConversationId.optional().describe(
    "Read the files of this conversation's branch (the active one, or `branch`): a branch from an earlier turn has a sandbox of its own",
  ),
  branch: BranchQuery.optional(),
};
const query = { path: WorkspacePathQuery.optional(), ...whose };

function base64Of(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export const workspaceRoutes = new DeclaredRoutes();

workspaceRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: `List a directory of the workspace (absent path: its root): directories first, at most ${LIST_MAX_ENTRIES} entries`,
    query,
    answers: { 200: json(WorkspaceListingSchema, "The directory's entries") },
    errors: [400, 401, 404, 501, 502, 503, 504],
  },
  async (c) => {
    const path = checkedPath(c.req.query("path"));
    return c.json(listingOf(path, await inWorkspace(c, path, (files, id) => files.list(id, path))));
  },
);

workspaceRoutes.serve(
  {
    method: "get",
    path: "/content",
    summary: `A file of the workspace: UTF-8 text as text, anything else base64 and marked binary; at most ${FILE_CONTENT_MAX_BYTES} bytes`,
    query: { path: WorkspacePathQuery, ...whose },
    answers: { 200: json(FileContentSchema, "The file") },
    errors: [400, 401, 404, 413, 501, 502, 503, 504],
  },
  async (c) => {
    const path = checkedPath(c.req.query("path") ?? "");
    if (path === ".") throw new ApiError(400, "not_a_file", "path names the workspace's root, not a file", { path });
    const read = await inWorkspace(c, path, async (files, id) => {
      // Stat first: nothing over the bound is read.
      const entry = await files.stat(id, path);
      if (entry.kind === "dir")
        throw new ApiError(400, "not_a_file", `${path} is a directory: list it with GET /v1/environment/files`, {
          path,
        });
      if (entry.size !== null && entry.size > FILE_CONTENT_MAX_BYTES)
        throw new ApiError(
          413,
          "file_too_large",
          `${path} is ${entry.size} bytes; this route answers files of at most ${FILE_CONTENT_MAX_BYTES} bytes (download it instead)`,
          { path, size: entry.size, maxBytes: FILE_CONTENT_MAX_BYTES },
        );
      return { entry, ...(await files.read(id, path, FILE_CONTENT_MAX_BYTES)) };
    });
    // A file that grew past the bound while it was read: its start, cut where a UTF-8 character begins.
    const shown = read.truncated ? read.bytes.subarray(0, utf8Boundary(read.bytes)) : read.bytes;
    const text = textOf(shown);
    // A file that grew while it was read has no size this read can state.
    const size = read.truncated ? null : read.bytes.length;
    return c.json({
      path,
      size,
      binary: text === null,
      encoding: text === null ? "base64" : "utf8",
      content: text ?? base64Of(read.bytes),
      ...(read.truncated ? { truncated: true } : {}),
    });
  },
);

workspaceRoutes.serve(
  {
    method: "get",
    path: "/download",
    summary:
      "Download a file of the workspace, or a directory (absent path: the whole workspace) as a tar.gz; streamed, at most WORKSPACE_DOWNLOAD_MAX_BYTES",
    query,
    answers: {
      200: bytes(
        z.string().meta({ format: "binary" }),
        "The file's bytes, or the directory as application/gzip (<name>.tar.gz); content-disposition: attachment",
      ),
    },
    errors: [400, 401, 404, 413, 501, 502, 503, 504],
  },
  async (c) => {
    const path = checkedPath(c.req.query("path"));
    const max = c.get("config").WORKSPACE_DOWNLOAD_MAX_BYTES;
    const { entry, download } = await inWorkspace(c, path, async (files, id) => {
      const entry = await files.stat(id, path);
      const what = entry.kind === "dir" ? "dir" : "file";
      if (what === "file" && entry.size !== null && entry.size > max)
        throw new ApiError(413, "file_too_large", `${path} is ${entry.size} bytes; downloads stream at most ${max}`, {
          path,
          size: entry.size,
          maxBytes: max,
        });
      return { entry, download: await files.download(id, path, what) };
    });
    const dir = entry.kind === "dir";
    const name = path === "." ? "workspace" : entry.name;
    const headers: Record<string, string> = {
      "content-type": dir ? "application/gzip" : "application/octet-stream",
      "content-disposition": attachmentDisposition(dir ? `${name}.tar.gz` : name),
      "cache-control": "no-store",
    };
    if (download.size !== null && download.size <= max) headers["content-length"] = String(download.size);
    return new Response(limitedStream(download.body, max), { status: 200, headers });
  },
);
