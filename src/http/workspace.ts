/**
 * What the workspace's routes share (docs/api.md#the-workspace): a path checked
 * (../lib/workspace-path.ts), the provider's workspace files (501 `capability_denied` naming
 * `workspace.files` where it has none), and the user's sandbox brought back for the call, resumed
 * where it stopped but never created (404 `environment_not_found` where there is none). A call that
 * finds the sandbox stopped meanwhile resumes it once and is made again; the provider's failures
 * become the API's errors here.
 */
import type { Context } from "hono";
import { ApiError, Refusal, type RpcResult } from "../errors";
import { workspacePath } from "../lib/workspace-path";
import { createProvider } from "../providers";
import { ProviderError } from "../providers/errors";
import type { EnvironmentRecord, WorkspaceEntry, WorkspaceFiles } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import { ConversationId } from "../schemas/common";
import { type AppEnv, knownSession, session, userObject } from "./app-context";
import { invalid } from "./body";
import { apiErrorOf, unwrapRpc } from "./errors";
import { branchOf } from "./routes/conversations";

const CAPABILITY = "workspace.files";

/** The most entries a listing answers (`truncated` says when there were more). */
export const LIST_MAX_ENTRIES = 1000;

/** Directories first, then the rest, each by name (code units: the same order on every client). */
function byKindThenName(a: WorkspaceEntry, b: WorkspaceEntry): number {
  const dir = Number(b.kind === "dir") - Number(a.kind === "dir");
  return dir !== 0 ? dir : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** A directory's listing as answered: sorted, at most `max` entries, `truncated` when there were more. */
export function listingOf(path: string, entries: readonly WorkspaceEntry[], max = LIST_MAX_ENTRIES) {
  const sorted = [...entries].sort(byKindThenName);
  return { path, entries: sorted.slice(0, max), truncated: sorted.length > max };
}

/** `raw` as a workspace path (absent: the root), or 400 `path_invalid` saying why. */
export function checkedPath(raw: string | undefined, field = "path"): string {
  const checked = workspacePath(raw ?? ".");
  if (!checked.ok) throw new ApiError(400, "path_invalid", `${field} ${checked.reason}`, { field });
  return checked.path;
}

/** A provider's failure on a workspace call as the API's error. */
function workspaceError(err: unknown, path: string): unknown {
  if (!(err instanceof ProviderError)) return err;
  const details = err.options.details ?? {};
  if (err.code === "not_found" && details.missing === "file")
    return new ApiError(404, "file_not_found", `${path}: no such file or directory in the workspace`, { path });
  if (err.code === "capability_denied")
    return new ApiError(501, "capability_denied", err.message, { missing: [CAPABILITY] });
  if (err.code === "invalid_request" && details.notADirectory)
    return new ApiError(400, "not_a_directory", `${path} is a file, not a directory`, { path });
  if (err.code === "invalid_request" && details.payloadTooLarge)
    return new ApiError(413, "attachment_too_large", "the sandbox refused the file as larger than it takes", { path });
  if (err.code === "environment_gone")
    return apiErrorOf(new Refusal("environment_not_found", "the sandbox is gone: the next turn creates another"));
  const refusal = providerRefusal(err);
  return refusal instanceof Refusal ? apiErrorOf(refusal) : refusal;
}

/** The provider's workspace files, or 501 `capability_denied` naming `workspace.files`. */
export function workspaceFilesOf(c: Context<AppEnv>): WorkspaceFiles {
  const config = c.get("config");
  const files = createProvider(config, c.env).workspaceFiles;
  if (!files)
    throw new ApiError(
      501,
      "capability_denied",
      `this deployment's provider (${config.provider}) has no workspace files to offer`,
      { missing: [CAPABILITY] },
    );
  return files;
}

/**
 * The sandbox whose files a request reads: with `?conversation=` the one its branch runs on (the
 * active branch, or `?branch=`): a branch from an earlier turn has a sandbox of its own
 * (docs/api.md#a-turns-changes-undo-and-redo); otherwise, and for the others, the user's.
 */
async function sandboxOf(c: Context<AppEnv>, stale?: string, writer?: string): Promise<EnvironmentRecord> {
  const conversation = writer ?? c.req.query("conversation");
  if (conversation !== undefined) {
    const id = ConversationId.safeParse(conversation);
    if (!id.success) throw invalid("conversation", id.error);
    const branch = branchOf(c.req.query("branch"));
    // A read names a conversation of the user's list; a write (an upload) may be a conversation's
    // first act, before any turn lists it: its object says whether it holds it.
    const { stub } = writer === undefined ? await knownSession(c, id.data) : await session(c, id.data);
    // RPC typing drops the record's JSON document; the shape is the session object's own.
    const own = unwrapRpc(
      (await stub.branchEnvironment(id.data, branch)) as unknown as RpcResult<EnvironmentRecord | null>,
    );
    if (own) return own;
  }
  return writer === undefined ? existing(c, stale) : ensured(c, writer, stale);
}

/** The user's sandbox for a write a conversation makes: brought up as its turn would (created if there is none). */
async function ensured(c: Context<AppEnv>, conversationId: string, stale?: string): Promise<EnvironmentRecord> {
  // RPC typing drops the record's JSON document; the shape is UserObject's own.
  const answer = (await userObject(c).ensureEnvironment(
    c.get("identity").ownerKey,
    conversationId,
    stale,
  )) as unknown as RpcResult<EnvironmentRecord>;
  return unwrapRpc(answer);
}

async function existing(c: Context<AppEnv>, stale?: string): Promise<EnvironmentRecord> {
  // RPC typing drops the record's JSON document; the shape is UserObject's own.
  const answer = (await userObject(c).existingEnvironment(
    c.get("identity").ownerKey,
    stale,
  )) as unknown as RpcResult<EnvironmentRecord>;
  return unwrapRpc(answer);
}

/**
 * Runs `call` against the user's sandbox (resumed if stopped, never created); a sandbox found
 * stopped meanwhile is resumed and the call made once more. `path` names the file in errors.
 */
export async function inWorkspace<T>(
  c: Context<AppEnv>,
  path: string,
  call: (files: WorkspaceFiles, environmentId: string) => Promise<T>,
  /**
   * A write for this conversation: into the sandbox its active branch runs on, the user's brought
   * up (created if there is none) as its turn would. Else a read: `?conversation=`, or the user's
   * sandbox, never created.
   */
  conversation?: string,
): Promise<T> {
  const files = workspaceFilesOf(c);
  let environment = await sandboxOf(c, undefined, conversation);
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(files, environment.environmentId);
    } catch (err) {
      if (attempt === 1 && err instanceof ProviderError && err.code === "environment_not_running") {
        environment = await sandboxOf(c, environment.environmentId, conversation);
        continue;
      }
      throw workspaceError(err, path);
    }
  }
}
