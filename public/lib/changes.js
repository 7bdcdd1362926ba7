// @ts-check
/**
 * What the agent changed in a turn, from its tool calls: the files its write and edit tools wrote,
 * each with its lines added and removed and a diff to show. Pure (no DOM), tested in Node by
 * test/page/changes.test.ts.
 *
 * Providers name and shape these tools differently, so each shape seen is read:
 * - OpenCode: `write` { filePath, content } (state.metadata.exists says whether the file was there),
 *   `edit` { filePath, oldString, newString, replaceAll? }, `multiedit` { filePath, edits: [...] },
 *   `patch` / `apply_patch` { patchText } (or `patch`, `input`, `diff`);
 * - Claude Code: `Write` { file_path, content }, `Edit` { file_path, old_string, new_string,
 *   replace_all? }, `MultiEdit` { file_path, edits: [{ old_string, new_string }] };
 * - str_replace editors: { path, old_str, new_str }.
 * A patch is read in the unified format (`--- a/x` / `+++ b/x` / `@@`) and in the
 * `*** Begin Patch` / `*** Update File: x` format. Only a completed call counts: one that failed or
 * has not ended changed nothing we know of.
 *
 * Nothing is claimed that the provider did not say: an edit's diff is its old text against its new
 * text (the rest of the file is not reported, so it is not shown); a write is all additions only
 * when the provider says the file is new; a write over a file whose earlier content is unknown is
 * "written", its counts unknown (null), its content shown without a diff. An edit that replaced
 * every occurrence has unknown counts too (how many occurrences is not reported).
 */

/**
 * @typedef {{ op: " " | "+" | "-" | "@", text: string }} DiffLine  "@": a hunk's header (`@@ … @@`), between parts that are not adjacent
 * @typedef {"created" | "edited" | "written" | "deleted"} ChangeAction
 * @typedef {object} FileChange  one tool call's change to one file
 * @property {string} path
 * @property {ChangeAction} action
 * @property {number | null} added     lines added; null when not known
 * @property {number | null} removed   lines removed; null when not known
 * @property {DiffLine[] | null} diff  null when there is no diff to show (a write over unknown content, a deletion)
 * @property {string | null} content   what a write wrote when there is no diff (earlier content unknown)
 * @property {string | null} note      what is not known, said in words
 * @typedef {object} ChangedFile  every change of a turn to one file, in order
 * @property {string} path
 * @property {number | null} added     the sum over its changes; null when any is not known
 * @property {number | null} removed
 * @property {FileChange[]} changes
 */

/** A tool block of the page's state, as far as this module reads it. */
/** @typedef {{ kind: string, tool?: string, status?: string, input?: unknown, output?: unknown, metadata?: unknown }} ToolLike */

const WRITE_TOOLS = new Set(["write", "write_file", "create_file", "create"]);
const EDIT_TOOLS = new Set([
  "edit",
  "edit_file",
  "str_replace",
  "str_replace_editor",
  "str_replace_based_edit_tool",
  "replace",
]);
const MULTI_EDIT_TOOLS = new Set(["multiedit", "multi_edit"]);
const PATCH_TOOLS = new Set(["patch", "apply_patch", "applypatch", "apply_diff"]);

/** Inputs larger than this many line pairs are diffed without the table (all removed, then all added). */
const MAX_DIFF_CELLS = 4_000_000;

/**
 * @param {unknown} value
 * @returns {Record<string, unknown> | null}
 */
const record = (value) =>
  value !== null && typeof value === "object" && !Array.isArray(value)
    ? /** @type {Record<string, unknown>} */ (value)
    : null;

/**
 * The first of `names` that `object` holds as a string.
 * @param {Record<string, unknown> | null} object
 * @param {string[]} names
 */
function str(object, names) {
  for (const name of names) if (typeof object?.[name] === "string") return /** @type {string} */ (object[name]);
  return null;
}

/** @param {string} text */
const lines = (text) => (text === "" ? [] : text.replace(/\r\n?/g, "\n").replace(/\n$/, "").split("\n"));

/**
 * The line diff of `before` → `after`: the longest common subsequence of lines kept, the rest
 * removed then added, in order.
 * @param {string} before
 * @param {string} after
 * @returns {DiffLine[]}
 */
export function lineDiff(before, after) {
  const a = lines(before);
  const b = lines(after);
  // Common head and tail first: an edit usually changes a few lines in the middle.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  /** @type {DiffLine[]} */
  const out = a.slice(0, head).map((text) => ({ op: " ", text }));
  if (midA.length * midB.length > MAX_DIFF_CELLS) {
    out.push(
      ...midA.map((text) => /** @type {DiffLine} */ ({ op: "-", text })),
      ...midB.map((text) => /** @type {DiffLine} */ ({ op: "+", text })),
    );
  } else {
    // lcs(i, j): the length of the longest common subsequence of midA[i..] and midB[j..].
    const n = midA.length;
    const m = midB.length;
    const table = new Uint32Array((n + 1) * (m + 1));
    const lcs = (/** @type {number} */ i, /** @type {number} */ j) => table[i * (m + 1) + j] ?? 0;
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--)
        table[i * (m + 1) + j] = midA[i] === midB[j] ? lcs(i + 1, j + 1) + 1 : Math.max(lcs(i + 1, j), lcs(i, j + 1));
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      const x = midA[i] ?? "";
      const y = midB[j] ?? "";
      if (i < n && j < m && x === y) {
        out.push({ op: " ", text: x });
        i++;
        j++;
      } else if (j === m || (i < n && lcs(i + 1, j) >= lcs(i, j + 1))) {
        out.push({ op: "-", text: x });
        i++;
      } else {
        out.push({ op: "+", text: y });
        j++;
      }
    }
  }
  out.push(...a.slice(a.length - tail).map((text) => /** @type {DiffLine} */ ({ op: " ", text })));
  return out;
}

/** @param {DiffLine[]} diff */
const count = (diff, /** @type {"+" | "-"} */ op) => diff.filter((l) => l.op === op).length;

/**
 * One edit's change (old text → new text).
 * @param {string} path
 * @param {{ before: string, after: string, every: boolean }[]} edits
 * @returns {FileChange}
 */
function editChange(path, edits) {
  const diff = edits.flatMap((e, i) => [
    ...(i > 0 ? [/** @type {DiffLine} */ ({ op: "@", text: "@@" })] : []),
    ...lineDiff(e.before, e.after),
  ]);
  const every = edits.some((e) => e.every);
  return {
    path,
    action: "edited",
    added: every ? null : count(diff, "+"),
    removed: every ? null : count(diff, "-"),
    diff,
    content: null,
    note: every ? "Replaced every occurrence; how many is not reported." : null,
  };
}

/**
 * @param {Record<string, unknown> | null} edit
 * @returns {{ before: string, after: string, every: boolean } | null}
 */
function editOf(edit) {
  const before = str(edit, ["oldString", "old_string", "old_str", "oldText", "old_text"]);
  const after = str(edit, ["newString", "new_string", "new_str", "newText", "new_text"]);
  if (before === null || after === null) return null;
  return { before, after, every: edit?.replaceAll === true || edit?.replace_all === true };
}

/**
 * The files a patch changes, in the unified format or the `*** Begin Patch` one.
 * @param {string} text
 * @returns {FileChange[]}
 */
export function patchChanges(text) {
  /** @type {FileChange[]} */
  const out = [];
  /** @type {FileChange | null} */
  let current = null;
  const start = (/** @type {string} */ path, /** @type {ChangeAction} */ action) => {
    current = { path, action, added: 0, removed: 0, diff: [], content: null, note: null };
    out.push(current);
  };
  const strip = (/** @type {string} */ p) =>
    p
      .trim()
      .replace(/^"|"$/g, "")
      .replace(/^[ab]\//, "")
      .replace(/\t.*$/, "");
  const all = text.replace(/\r\n?/g, "\n").split("\n");
  for (let k = 0; k < all.length; k++) {
    const line = all[k] ?? "";
    let m;
    if ((m = /^\*\*\* (Add|Update|Delete) File: (.+)$/.exec(line))) {
      start((m[2] ?? "").trim(), m[1] === "Add" ? "created" : m[1] === "Delete" ? "deleted" : "edited");
      if (m[1] === "Delete" && current)
        Object.assign(current, { removed: null, diff: null, note: "Deleted; its content is not reported." });
    } else if ((m = /^\*\*\* Move to: (.+)$/.exec(line)) && current) {
      const moved = /** @type {FileChange} */ (current);
      moved.note = `Moved from ${moved.path}.`;
      moved.path = (m[1] ?? "").trim();
    } else if (/^diff --git /.test(line)) {
      current = null; // the next file's header follows
    } else if (/^\*\*\* (Begin Patch|End Patch|End of File)/.test(line)) {
      // The patch's own markers: nothing to read.
    } else if (/^--- /.test(line) && /^\+\+\+ /.test(all[k + 1] ?? "")) {
      // A file's header: `--- old` then `+++ new` (a removed line "-- x" is never followed by "+++ ").
      const oldPath = strip(line.slice(4));
      const newPath = strip((all[++k] ?? "").slice(4));
      if (newPath === "/dev/null") start(oldPath, "deleted");
      else start(newPath, oldPath === "/dev/null" ? "created" : "edited");
    } else if (current) {
      const change = /** @type {FileChange} */ (current);
      if (/^@@/.test(line)) {
        // The first hunk's header says nothing the list does not; later ones mark a gap.
        if (change.diff?.length) change.diff.push({ op: "@", text: line });
        continue;
      }
      const op = line[0];
      if ((op === "+" || op === "-" || op === " ") && change.diff) {
        change.diff.push({ op, text: line.slice(1) });
        if (op === "+" && change.added !== null) change.added++;
        if (op === "-" && change.removed !== null) change.removed++;
      }
    }
  }
  return out;
}

/**
 * One tool call's changes; none for a tool that writes no file, or a call that has not completed.
 * @param {ToolLike} block
 * @returns {FileChange[]}
 */
export function toolChanges(block) {
  if (block.kind !== "tool" || block.status !== "completed") return [];
  const name = String(block.tool ?? "").toLowerCase();
  const input = record(block.input);
  const path = str(input, ["filePath", "file_path", "path", "filename", "file"]);
  if (WRITE_TOOLS.has(name) && path !== null) {
    const content = str(input, ["content", "contents", "text", "file_text"]) ?? "";
    const metadata = record(block.metadata);
    const output = typeof block.output === "string" ? block.output : "";
    const isNew = metadata?.exists === false || /\bcreated\b/i.test(output);
    if (isNew) {
      const diff = lineDiff("", content);
      return [{ path, action: "created", added: diff.length, removed: 0, diff, content: null, note: null }];
    }
    return [
      {
        path,
        action: "written",
        added: null,
        removed: null,
        diff: null,
        content,
        note: "Written whole; its earlier content is not reported, so there is no diff.",
      },
    ];
  }
  if (EDIT_TOOLS.has(name) && path !== null) {
    const edit = editOf(input);
    return edit ? [editChange(path, [edit])] : [];
  }
  if (MULTI_EDIT_TOOLS.has(name) && path !== null && Array.isArray(input?.edits)) {
    const edits = input.edits.map((e) => editOf(record(e)));
    return edits.every((e) => e !== null) && edits.length > 0
      ? [editChange(path, /** @type {{ before: string, after: string, every: boolean }[]} */ (edits))]
      : [];
  }
  if (PATCH_TOOLS.has(name)) {
    const text =
      typeof block.input === "string" ? block.input : str(input, ["patchText", "patch_text", "patch", "input", "diff"]);
    return text ? patchChanges(text) : [];
  }
  return [];
}

/**
 * Every file the turn's tool calls changed, in the order first changed, each with its changes.
 * @param {ToolLike[]} blocks
 * @returns {ChangedFile[]}
 */
export function changedFiles(blocks) {
  /** @type {Map<string, ChangedFile>} */
  const files = new Map();
  for (const block of blocks) {
    for (const change of toolChanges(block)) {
      let file = files.get(change.path);
      if (!file) files.set(change.path, (file = { path: change.path, added: 0, removed: 0, changes: [] }));
      file.changes.push(change);
      file.added = file.added === null || change.added === null ? null : file.added + change.added;
      file.removed = file.removed === null || change.removed === null ? null : file.removed + change.removed;
    }
  }
  return [...files.values()];
}

/**
 * A diff as the text highlight.js's `diff` language reads: one line each, `+`, `-` or a space first,
 * a hunk header as it is.
 * @param {DiffLine[]} diff
 */
export const diffText = (diff) => diff.map((l) => (l.op === "@" ? l.text : `${l.op}${l.text}`)).join("\n");
