/**
 * A path in the agent's workspace as a user names it (issue 40: browsing, reading, attaching):
 * repository-relative POSIX, normalized, never outside the workspace (agent-interface: "Use base:
 * repository for a portable repository-relative POSIX path ... rejects unsafe repository paths and
 * control characters ... canonicalizes redundant . segments and separators ... Use . for the
 * repository root"). Pure.
 */

/** The longest path taken, in UTF-16 units (a file system's own limit is near this). */
const MAX_PATH_LENGTH = 4096;
/** The longest segment taken (most file systems: 255 bytes). */
const MAX_SEGMENT_LENGTH = 255;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export type WorkspacePath = { ok: true; path: string } | { ok: false; reason: string };

/**
 * `raw` as the workspace's own path: `.` for the root, else segments joined by `/` with no `.`,
 * no empty segment and no leading or trailing `/`. Refused: an absolute path (`/etc`, `C:\x`,
 * `\\host`), a `..` segment (anywhere: a path that climbs back down is still refused, so nothing
 * depends on how the host resolves links), a backslash (not a separator on the workspace's POSIX
 * side, and a separator on some hosts), control characters, and lengths past the bounds.
 */
export function workspacePath(raw: string): WorkspacePath {
  if (raw.length > MAX_PATH_LENGTH) return { ok: false, reason: `is longer than ${MAX_PATH_LENGTH} characters` };
  if (CONTROL.test(raw)) return { ok: false, reason: "must not contain control characters" };
  if (raw.includes("\\")) return { ok: false, reason: "must use / as its separator (no backslash)" };
  if (raw.startsWith("/") || /^[A-Za-z]:/.test(raw))
    return { ok: false, reason: "must be relative to the workspace (no leading / or drive)" };
  const segments: string[] = [];
  for (const segment of raw.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") return { ok: false, reason: "must not leave the workspace (no .. segment)" };
    if (segment.length > MAX_SEGMENT_LENGTH)
      return { ok: false, reason: `has a segment longer than ${MAX_SEGMENT_LENGTH} characters` };
    segments.push(segment);
  }
  return { ok: true, path: segments.length === 0 ? "." : segments.join("/") };
}
