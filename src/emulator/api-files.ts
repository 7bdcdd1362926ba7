/**
 * §10 the workspace's files, after `/runtime` (docs/sandbox-wire.md): list a folder, stat, read a
 * file (text, or base64 when asked), download a file or a folder (a tar.gz), upload a file
 * (multipart `file` and `path`, over the cap 413). Paths are absolute under the workspace root
 * (workspace-path.ts; `POST /files/read` takes a relative one too); outside it, `..` or `.sidecar`:
 * 403. Variant `workspace: "missing"`: every route 404, as a deployment without them. The tree is
 * ./workspace.ts.
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { API_PATHS, type ApiKit, apiNotFound, jsonBody } from "./api-common";
import { tarArchive } from "./tar";
import type { TreeNode } from "./workspace";
import { absolutePath, resolvePath } from "./workspace-path";

const ReadBody = z.strictObject({ path: z.string().min(1), encoding: z.enum(["utf8", "base64"]).optional() });

/** Slack over the file's own size for a multipart body's framing, before it is read. */
const MULTIPART_SLACK = 64 * 1024;

/** A file or folder as the sidecar lists it (`permissions` with `long=true`). */
function entryView(node: TreeNode, long: boolean): Record<string, unknown> {
  return {
    name: node.rel === "" ? "agent" : node.name,
    path: absolutePath(node.rel),
    size: node.size,
    isDir: node.isDir,
    isFile: !node.isDir,
    isSymlink: false,
    modTime: new Date(node.mtime).toISOString(),
    ...(long ? { permissions: node.isDir ? "drwxr-xr-x" : "-rw-r--r--" } : {}),
  };
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function registerFileRoutes(app: Hono, api: ApiKit): void {
  const { store, workspace, variants, fail, invalid, runningSandbox } = api;

  /** The running sandbox and the path a route names, or the error answer (404 first without the routes). */
  const target = (c: Context, raw: string | undefined): { id: string; rel: string } | Response => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    if (raw === undefined) return fail(c, 400, "VALIDATION_ERROR", "the path is not valid percent-encoding");
    const resolved = resolvePath(raw);
    if (!resolved.ok) return fail(c, 403, "FORBIDDEN_PATH", resolved.reason);
    return { id: sb.id, rel: resolved.rel };
  };
  /** The absolute path after a route's prefix in the URL (`/fs/list/home/agent/src` → `/home/agent/src`). */
  const pathAfter = (c: Context, marker: string): string | undefined => {
    const pathname = new URL(c.req.url).pathname;
    const at = pathname.indexOf(marker);
    try {
      return decodeURIComponent(pathname.slice(at + marker.length));
    } catch {
      return undefined;
    }
  };
  const missing = (c: Context, rel: string) => fail(c, 404, "FILE_NOT_FOUND", `${absolutePath(rel)} does not exist`);

  app.get(API_PATHS.fsList, (c) => {
    const t = target(c, pathAfter(c, "/runtime/fs/list"));
    if (t instanceof Response) return t;
    const node = workspace.node(t.id, t.rel);
    if (!node) return missing(c, t.rel);
    if (!node.isDir) return fail(c, 400, "NOT_A_DIRECTORY", `${absolutePath(t.rel)} is a file`);
    const all = c.req.query("all") === "true";
    const long = c.req.query("long") === "true";
    const entries = workspace
      .children(t.id, t.rel)
      .filter((n) => all || !n.name.startsWith("."))
      .map((n) => entryView(n, long));
    return c.json({ success: true, data: { entries } });
  });

  app.get(API_PATHS.fsStat, (c) => {
    const t = target(c, pathAfter(c, "/runtime/fs/stat"));
    if (t instanceof Response) return t;
    const node = workspace.node(t.id, t.rel);
    return node ? c.json({ success: true, data: entryView(node, true) }) : missing(c, t.rel);
  });

  app.post(API_PATHS.filesRead, async (c) => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const parsed = ReadBody.safeParse(await jsonBody(c));
    if (!parsed.success) {
      const sb = runningSandbox(c);
      return sb instanceof Response ? sb : invalid(c, "VALIDATION_ERROR", parsed.error);
    }
    const t = target(c, parsed.data.path);
    if (t instanceof Response) return t;
    const node = workspace.node(t.id, t.rel);
    if (!node) return missing(c, t.rel);
    if (node.isDir) return fail(c, 400, "IS_A_DIRECTORY", `${absolutePath(t.rel)} is a folder`);
    const bytes = workspace.read(t.id, t.rel)!;
    const encoding = parsed.data.encoding ?? "utf8";
    const content = encoding === "base64" ? base64(bytes) : new TextDecoder().decode(bytes);
    return c.json({ success: true, data: { content, encoding, size: bytes.length } });
  });

  app.get(API_PATHS.fsDownload, (c) => {
    const t = target(c, pathAfter(c, "/runtime/fs/download"));
    if (t instanceof Response) return t;
    const node = workspace.node(t.id, t.rel);
    if (!node) return missing(c, t.rel);
    if (node.isDir) return fail(c, 400, "IS_A_DIRECTORY", `${absolutePath(t.rel)} is a folder: use /fs/download-dir`);
    const bytes = workspace.read(t.id, t.rel)!;
    return new Response(bytes, {
      headers: { "content-type": "application/octet-stream", "content-length": String(bytes.length) },
    });
  });

  app.get(API_PATHS.fsDownloadDir, async (c) => {
    const t = target(c, pathAfter(c, "/runtime/fs/download-dir"));
    if (t instanceof Response) return t;
    const node = workspace.node(t.id, t.rel);
    if (!node) return missing(c, t.rel);
    if (!node.isDir) return fail(c, 400, "NOT_A_DIRECTORY", `${absolutePath(t.rel)} is a file`);
    // The folder's contents, named relative to it (as `tar -C <folder> .`), folders before their files.
    const strip = t.rel === "" ? 0 : t.rel.length + 1;
    const files = workspace.filesBelow(t.id, t.rel);
    const folders = new Map<string, number>();
    for (const f of files) {
      const parts = f.rel.slice(strip).split("/");
      for (let i = 1; i < parts.length; i++) {
        const dir = parts.slice(0, i).join("/");
        folders.set(dir, Math.max(folders.get(dir) ?? 0, f.mtime));
      }
    }
    const tar = tarArchive([
      ...[...folders].sort(([a], [b]) => a.localeCompare(b)).map(([name, mtime]) => ({ name, isDir: true, mtime })),
      ...files.map((f) => ({ name: f.rel.slice(strip), isDir: false, mtime: f.mtime, bytes: f.bytes })),
    ]);
    const gz = await new Response(new Blob([tar]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer();
    return new Response(gz, {
      headers: { "content-type": "application/gzip", "content-length": String(gz.byteLength) },
    });
  });

  app.post(API_PATHS.fsUpload, async (c) => {
    if (variants().workspace === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const cap = variants().uploadMaxBytes;
    const tooLarge = () => fail(c, 413, "PAYLOAD_TOO_LARGE", `an upload is at most ${cap} bytes`);
    const length = Number(c.req.header("content-length"));
    if (Number.isFinite(length) && length > cap + MULTIPART_SLACK) return tooLarge();
    const form = await c.req.raw.formData().catch(() => undefined);
    const file = form?.get("file");
    const path = form?.get("path");
    if (!form || !(file instanceof File) || typeof path !== "string" || path === "")
      return fail(c, 400, "VALIDATION_ERROR", "a multipart body with a `file` and a `path` is required");
    if (file.size > cap) return tooLarge();
    const t = target(c, path);
    if (t instanceof Response) return t;
    const why = workspace.unwritable(t.id, t.rel);
    if (why) return fail(c, 400, why.code, why.message);
    const bytes = new Uint8Array(await file.arrayBuffer());
    workspace.write(t.id, t.rel, bytes);
    store.count("files.uploaded");
    return c.json({ success: true, data: { path: absolutePath(t.rel), size: bytes.length } });
  });
}
