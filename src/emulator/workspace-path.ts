/**
 * A path in a sandbox's workspace as the emulator reads it (docs/sandbox-wire.md §9–10): absolute
 * under the workspace root (`/home/agent`), or relative (read from the root, as `POST /files/read`
 * and the agent's tools take it). `..` anywhere, a `.sidecar` segment, or an absolute path outside
 * the root is refused (the sidecar's 403). Pure. The emulator's own reading, not src/lib's.
 */

const WORKSPACE_ROOT = "/home/agent";

/** Where a path lands: its key in the tree (`""` for the root, `src/a.ts` below it), or why it is refused. */
export type ResolvedPath = { ok: true; rel: string } | { ok: false; reason: string };

export function resolvePath(raw: string): ResolvedPath {
  if (raw.includes("\0")) return { ok: false, reason: "a path may not contain NUL" };
  let rest: string;
  if (raw.startsWith("/")) {
    if (raw !== WORKSPACE_ROOT && !raw.startsWith(`${WORKSPACE_ROOT}/`))
      return { ok: false, reason: `${raw} is outside the workspace ${WORKSPACE_ROOT}` };
    rest = raw.slice(WORKSPACE_ROOT.length);
  } else rest = raw;
  const segments: string[] = [];
  for (const segment of rest.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") return { ok: false, reason: `${raw}: ".." is refused` };
    if (segment === ".sidecar") return { ok: false, reason: `${raw}: .sidecar is refused` };
    segments.push(segment);
  }
  return { ok: true, rel: segments.join("/") };
}

/** The absolute path of a key in the tree. */
export function absolutePath(rel: string): string {
  return rel === "" ? WORKSPACE_ROOT : `${WORKSPACE_ROOT}/${rel}`;
}

/** Whether `rel` is `dir` itself or below it (`""` holds everything). */
export function isWithin(rel: string, dir: string): boolean {
  return dir === "" || rel === dir || rel.startsWith(`${dir}/`);
}
