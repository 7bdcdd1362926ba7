/**
 * The workspace's files on the Sandbox's runtime (docs/sandbox-wire.md §10, issue 40): list a
 * directory, stat, read a file bounded, download a file or a directory (a tar.gz) streamed,
 * upload a file. Paths come in repository-relative, already checked (src/lib/workspace-path.ts),
 * and go out absolute under the workspace root (`SANDBOX_WORKSPACE_ROOT`). Answers are read
 * wrapped (`{ success, data }`) or flat, errors in either body shape the transport reads.
 *
 * A 404 means one of three things: the sandbox is gone (`SANDBOX_NOT_FOUND`), the file is not
 * there (`FILE_NOT_FOUND`), or the deployment has no such route (`NOT_FOUND`, §10: "this
 * deployment cannot do it"). A 404 that names none of them is told apart by a stat of the root:
 * a root that cannot be stated either says the route is missing, else the file is.
 */
import { z } from "zod";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { WorkspaceDownload, WorkspaceEntry, WorkspaceFiles } from "../provider";
import { sandboxRoutes as routes } from "./routes";
import { refine } from "./wire-errors";

const WireEntry = z.looseObject({
  name: z.string().optional(),
  path: z.string().optional(),
  size: z.number().nonnegative().optional().catch(undefined),
  isDir: z.boolean().optional().catch(undefined),
  isFile: z.boolean().optional().catch(undefined),
  isSymlink: z.boolean().optional().catch(undefined),
  modTime: z.union([z.number(), z.string()]).optional().catch(undefined),
});
type WireEntry = z.infer<typeof WireEntry>;

/** `{ success, data: X }` or X flat: read both. */
const wrapped = <S extends z.ZodType>(inner: S) =>
  z.union([z.looseObject({ data: inner }).transform((v) => v.data as z.output<S>), inner]);

const ListAnswer = wrapped(z.looseObject({ entries: z.array(z.unknown()) }));
const StatAnswer = wrapped(WireEntry);
const UploadAnswer = wrapped(z.looseObject({ size: z.number().nonnegative().optional().catch(undefined) })).catch({});

/** Reads are retried when they failed for a moment, never for a 501 (an answer: the route is not there). */
const RETRY = { retry: true, retryIf: (err: ProviderError) => err.status !== 501 } as const;

/** The capability a deployment without these routes lacks (501 `capability_denied`). */
const WORKSPACE_FILES_CAPABILITY = "workspace.files";

const missingRoute = (err: ProviderError, what: string) =>
  err.as("capability_denied", `this deployment cannot ${what} (its route answered ${err.status})`, {
    retryable: false,
    details: { missing: [WORKSPACE_FILES_CAPABILITY] },
  });

const missingFile = (err: ProviderError, path: string) =>
  err.as("not_found", `${path} is not in the workspace`, { retryable: false, details: { missing: "file" } });

function modifiedOf(value: WireEntry["modTime"]): string | null {
  if (value === undefined) return null;
  const ms = typeof value === "number" ? value : Date.parse(value);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

function entryOf(wire: WireEntry, name: string, path: string): WorkspaceEntry {
  return {
    name,
    path,
    kind: wire.isSymlink ? "symlink" : wire.isDir ? "dir" : "file",
    size: wire.size ?? null,
    modified: modifiedOf(wire.modTime),
  };
}

const lastSegment = (path: string) => path.split("/").filter(Boolean).pop() ?? ".";
const joinRel = (dir: string, name: string) => (dir === "." ? name : `${dir}/${name}`);

export class TangleWorkspaceFiles implements WorkspaceFiles {
  private readonly root: string;

  constructor(
    private readonly client: HttpTransport,
    root: string,
  ) {
    this.root = root.replace(/\/+$/, "") || "/";
  }

  private abs(path: string): string {
    if (path === ".") return this.root;
    return this.root === "/" ? `/${path}` : `${this.root}/${path}`;
  }

  /** A failed call's error in the seam's codes (see the header for 404s). */
  private async failure(err: unknown, environmentId: string, path: string, what: string): Promise<unknown> {
    if (!(err instanceof ProviderError)) return err;
    const wire = err.options.wireCode?.toUpperCase();
    if (err.status === 501) return missingRoute(err, what);
    if (err.status === 404) {
      if (wire === "SANDBOX_NOT_FOUND") return refine(err);
      if (wire === "FILE_NOT_FOUND" || wire === "ENOENT") return missingFile(err, path);
      if (wire === "NOT_FOUND") return missingRoute(err, what);
      if (path === ".") return missingRoute(err, what);
      const rootThere = await this.client
        .send(routes.statFile(environmentId, this.root), RETRY, "stat the workspace root")
        .then(() => true)
        .catch(() => false);
      return rootThere ? missingFile(err, path) : missingRoute(err, what);
    }
    if (err.status === 400 && wire === "NOT_A_DIRECTORY")
      return err.as("invalid_request", `${path} is not a directory`, { details: { notADirectory: true } });
    if (err.status === 413)
      return err.as("invalid_request", `the sandbox refused the file as too large`, {
        details: { payloadTooLarge: true },
      });
    return refine(err);
  }

  private async guarded<T>(environmentId: string, path: string, what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw await this.failure(err, environmentId, path, what);
    }
  }

  list(environmentId: string, path: string): Promise<WorkspaceEntry[]> {
    return this.guarded(environmentId, path, "list the workspace's files", async () => {
      const answer = await this.client.json(
        routes.listFiles(environmentId, this.abs(path)),
        ListAnswer,
        { ...RETRY, query: { all: "true", long: "true" } },
        "list files",
      );
      const entries: WorkspaceEntry[] = [];
      for (const raw of answer.entries) {
        const wire = WireEntry.safeParse(raw);
        if (!wire.success) continue;
        const name = wire.data.name ?? (wire.data.path ? lastSegment(wire.data.path) : undefined);
        // A name that is no single segment (or . and ..) is nothing a user can open: left out.
        if (!name || name === "." || name === ".." || name.includes("/")) continue;
        entries.push(entryOf(wire.data, name, joinRel(path, name)));
      }
      return entries;
    });
  }

  stat(environmentId: string, path: string): Promise<WorkspaceEntry> {
    return this.guarded(environmentId, path, "read the workspace's files", async () => {
      const wire = await this.client.json(
        routes.statFile(environmentId, this.abs(path)),
        StatAnswer,
        RETRY,
        "stat file",
      );
      return entryOf(wire, path === "." ? "." : lastSegment(path), path);
    });
  }

  async read(
    environmentId: string,
    path: string,
    maxBytes: number,
  ): Promise<{ bytes: Uint8Array; truncated: boolean }> {
    const { body } = await this.download(environmentId, path, "file");
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let length = 0;
    let truncated = false;
    while (true) {
      const next = await reader.read();
      if (next.done) break;
      chunks.push(next.value);
      length += next.value.byteLength;
      if (length > maxBytes) {
        truncated = true;
        await reader.cancel().catch(() => undefined);
        break;
      }
    }
    const bytes = new Uint8Array(Math.min(length, maxBytes));
    let at = 0;
    for (const chunk of chunks) {
      const part = chunk.subarray(0, bytes.byteLength - at);
      bytes.set(part, at);
      at += part.byteLength;
      if (at >= bytes.byteLength) break;
    }
    return { bytes, truncated };
  }

  download(environmentId: string, path: string, what: "file" | "dir"): Promise<WorkspaceDownload> {
    return this.guarded(environmentId, path, "download the workspace's files", async () => {
      const route =
        what === "dir"
          ? routes.downloadDir(environmentId, this.abs(path))
          : routes.downloadFile(environmentId, this.abs(path));
      const response = await this.client.send(
        route,
        { ...RETRY, stream: true, headers: { accept: "*/*" } },
        what === "dir" ? "download directory" : "download file",
      );
      const length = Number(response.headers.get("content-length"));
      const body = response.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      return { body, size: response.headers.has("content-length") && Number.isFinite(length) ? length : null };
    });
  }

  upload(environmentId: string, path: string, bytes: Uint8Array, name: string): Promise<{ size: number | null }> {
    return this.guarded(environmentId, path, "write files into the workspace", async () => {
      const form = new FormData();
      form.set("file", new Blob([bytes]), name);
      form.set("path", this.abs(path));
      // Not retried: a write that timed out may have landed; the caller's retry writes it again, whole.
      const response = await this.client.send(routes.uploadFile(environmentId), { form }, "upload file");
      // The answer's body is [ours]: a size where it says one, else unknown (never the size sent).
      const text = await response.text().catch(() => "");
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { size: UploadAnswer.parse(body).size ?? null };
    });
  }
}
