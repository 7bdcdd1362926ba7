// @ts-check
/**
 * The workspace panel's and the attachments' rules, without the DOM (pure, tested in Node by
 * test/page/workspace.test.ts): sizes and changes in words, a file's highlighting language, what
 * the tree's keys do (the WAI-ARIA tree pattern) and the panel's tabs' (the tabs pattern), what
 * Undo and Redo offer for a turn, and a download read to its end within a bound. No DOM. Imported only by the lazy chunks
 * (controllers/workspace.js, controllers/attachments.js): nothing of it is on the way to "live".
 */

/** @typedef {import("./wire").TurnChanges} TurnChanges */
/** @typedef {Extract<TurnChanges, { source: "workspace" }>["files"][number]} FileChange */

/** Bytes in words: `512 B`, `1.5 KB`, `2.0 MB`; "size unknown" when the server did not say. @param {number | null | undefined} n */
export function sizeText(n) {
  if (n === null || n === undefined) return "size unknown";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** Extensions highlight.js knows by another name. */
const LANGS = /** @type {Record<string, string>} */ ({ mjs: "js", cjs: "js", jsx: "js", tsx: "ts", htm: "html" });
/** Past this many characters a file is shown as plain text: highlighting it would hold the page. */
export const HIGHLIGHT_MAX_CHARS = 100_000;

/**
 * The language a file is highlighted as: its extension (highlight.js knows most by it; one it does
 * not know is plain text), none for a file without one or too long to highlight.
 * @param {string} path @param {number} length
 */
export function langOf(path, length) {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot <= 0 || length > HIGHLIGHT_MAX_CHARS) return "";
  const ext = name.slice(dot + 1).toLowerCase();
  return /^[a-z0-9+#-]+$/.test(ext) ? (LANGS[ext] ?? ext) : "";
}

const STATUS = { added: "Added", modified: "Modified", deleted: "Deleted", renamed: "Renamed" };

/**
 * One changed file in words: "Added", "Renamed from a.txt", and for a binary its sizes.
 * @param {FileChange} file
 */
export function changeText(file) {
  const what = file.status === "renamed" && file.from ? `Renamed from ${file.from}` : STATUS[file.status];
  if (!file.binary) return what;
  const sizes =
    file.status === "added"
      ? sizeText(file.sizeAfter)
      : file.status === "deleted"
        ? sizeText(file.sizeBefore)
        : `${sizeText(file.sizeBefore)} → ${sizeText(file.sizeAfter)}`;
  return `${what}, binary, ${sizes}`;
}

/**
 * What the tree does with a key (https://www.w3.org/WAI/ARIA/apg/patterns/treeview/), over its
 * visible items in order: `index` is the focused one's, `parent` its folder's (-1 at the top).
 * @param {string} key
 * @param {{ index: number, count: number, parent: number, dir: boolean, expanded: boolean }} at
 * @returns {{ focus: number } | { expand: true } | { collapse: true } | { open: true } | null}
 */
export function treeKey(key, { index, count, parent, dir, expanded }) {
  switch (key) {
    case "ArrowDown":
      return { focus: Math.min(index + 1, count - 1) };
    case "ArrowUp":
      return { focus: Math.max(index - 1, 0) };
    case "Home":
      return { focus: 0 };
    case "End":
      return { focus: count - 1 };
    case "ArrowRight":
      if (!dir) return null;
      return expanded ? { focus: Math.min(index + 1, count - 1) } : { expand: true };
    case "ArrowLeft":
      if (dir && expanded) return { collapse: true };
      return parent >= 0 ? { focus: parent } : null;
    case "Enter":
      return { open: true };
    default:
      return null;
  }
}

/**
 * Which tab a key moves to (https://www.w3.org/WAI/ARIA/apg/patterns/tabs/, selection follows
 * focus): → and ← the next and the previous, round, Home and End the first and the last; null for
 * any other key. Over the tabs shown, in order; `index` is the focused one's.
 * @param {string} key @param {number} index @param {number} count
 */
export function tabKey(key, index, count) {
  if (index < 0 || count === 0) return null;
  if (key === "ArrowRight") return (index + 1) % count;
  if (key === "ArrowLeft") return (index - 1 + count) % count;
  if (key === "Home") return 0;
  if (key === "End") return count - 1;
  return null;
}

/**
 * What a turn's Undo and Redo offer. Undo only where the turn's checkpoint was `created` (any other
 * status says why there is none), and not while a turn runs; after an undo, Redo.
 * @param {{ checkpoint: { status: string, message?: string } | null, last: "undo" | "redo" | null, busy: boolean }} at
 *   `last`: the turn's latest undo or redo, if any
 * @returns {{ undo: boolean, redo: boolean, note: string }}
 */
export function restoreOffer({ checkpoint, last, busy }) {
  if (!checkpoint) return { undo: false, redo: false, note: "Reading whether this turn can be undone…" };
  if (checkpoint.status !== "created") {
    const why = {
      unknown: "its checkpoint was not confirmed",
      failed: "no checkpoint could be taken before it",
      unavailable: "this environment takes no checkpoints",
      released: "its checkpoint was released (only the most recent are kept)",
      none: "no checkpoint was taken before it",
    }[checkpoint.status];
    return {
      undo: false,
      redo: false,
      note: `This turn cannot be undone: ${checkpoint.message ?? why ?? checkpoint.status}.`,
    };
  }
  const undone = last === "undo";
  if (busy) return { undo: false, redo: false, note: "Undo and Redo wait until the running turn ends." };
  return { undo: !undone, redo: undone, note: undone ? "This turn's file changes are undone." : "" };
}

/** The bound on a download held in the page: the gateway's own (WORKSPACE_DOWNLOAD_MAX_BYTES' default). */
export const DOWNLOAD_MAX_BYTES = 256 * 1024 * 1024;

/**
 * A download's body read whole, within `max` bytes: a body that runs past it, or ends in an error
 * (the gateway cuts a stream off past its own bound), throws, so a short file is never saved.
 * @param {Response} res @param {number} [max]
 * @returns {Promise<Blob>}
 */
export async function readBounded(res, max = DOWNLOAD_MAX_BYTES) {
  const stated = Number(res.headers.get("content-length"));
  if (stated > max) throw new Error(`it is larger than ${sizeText(max)}`);
  if (!res.body) throw new Error("the answer had no body");
  const reader = res.body.getReader();
  /** @type {Uint8Array<ArrayBuffer>[]} */
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      throw new Error(`it is larger than ${sizeText(max)}`);
    }
    chunks.push(/** @type {Uint8Array<ArrayBuffer>} */ (value));
  }
  return new Blob(chunks, {
    type: res.headers.get("content-type") ?? "application/octet-stream",
  });
}

/** A download's file name, from its content-disposition (`filename="…"`), else `fallback`. @param {Response} res @param {string} fallback */
export function fileNameOf(res, fallback) {
  const header = res.headers.get("content-disposition") ?? "";
  const star = /filename\*=UTF-8''([^;]+)/i.exec(header)?.[1];
  if (star) {
    try {
      return decodeURIComponent(star);
    } catch {
      // not percent-encoded as promised: the plain name below
    }
  }
  return /filename="([^"]+)"/i.exec(header)?.[1] ?? fallback;
}
