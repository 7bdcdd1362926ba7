/**
 * The difference between two states of a workspace (`GET …/snapshots/{id}/diff`, docs/sandbox-wire.md
 * §10): each path added, modified, deleted or renamed (a deleted and an added path with the same
 * bytes), with sizes, whether it is binary (a NUL byte, or not valid UTF-8), and a unified text
 * diff for a text file; the diffs' text bounded by `maxBytes` in all (past it, none, and
 * `truncated`). The line diff is an LCS over the lines between the common head and tail, bounded:
 * past MAX_CELLS, the middle is shown as removed and added whole. Pure.
 */

export interface FileDiff {
  path: string;
  status: "added" | "modified" | "deleted" | "renamed";
  /** A renamed file's earlier path. */
  from?: string;
  sizeBefore?: number;
  sizeAfter?: number;
  binary: boolean;
  diff?: string;
}

/** The LCS table's size bound (lines before × lines after, after the common head and tail). */
const MAX_CELLS = 4_000_000;
const CONTEXT = 3;

export function isBinary(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return true;
  try {
    new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    return false;
  } catch {
    return true;
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

function lines(text: string): string[] {
  if (text === "") return [];
  const out = text.split("\n");
  if (out.at(-1) === "") out.pop();
  return out;
}

type Op = { kind: " " | "-" | "+"; line: string };

/** The edit script from `a` to `b`: kept, removed and added lines in order. */
function lineOps(a: string[], b: string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  const middle: Op[] = [];
  if (x.length * y.length > MAX_CELLS) {
    for (const line of x) middle.push({ kind: "-", line });
    for (const line of y) middle.push({ kind: "+", line });
  } else {
    // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
    const w = y.length + 1;
    const lcs = new Uint32Array((x.length + 1) * w);
    for (let i = x.length - 1; i >= 0; i--)
      for (let j = y.length - 1; j >= 0; j--)
        lcs[i * w + j] =
          x[i] === y[j] ? lcs[(i + 1) * w + j + 1]! + 1 : Math.max(lcs[(i + 1) * w + j]!, lcs[i * w + j + 1]!);
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        middle.push({ kind: " ", line: x[i]! });
        i++;
        j++;
      } else if (i < x.length && (j === y.length || lcs[(i + 1) * w + j]! >= lcs[i * w + j + 1]!)) {
        // On a tie the removal first, as unified diffs show a changed line.
        middle.push({ kind: "-", line: x[i++]! });
      } else middle.push({ kind: "+", line: y[j++]! });
    }
  }
  return [
    ...a.slice(0, head).map((line): Op => ({ kind: " ", line })),
    ...middle,
    ...a.slice(a.length - tail).map((line): Op => ({ kind: " ", line })),
  ];
}

/** A unified diff of two texts (`--- a/<path>`, `+++ b/<path>`, hunks with 3 lines of context). */
export function unifiedDiff(before: string, after: string, fromPath: string, toPath: string): string {
  const ops = lineOps(lines(before), lines(after));
  const out = [
    `--- ${fromPath === "" ? "/dev/null" : `a/${fromPath}`}`,
    `+++ ${toPath === "" ? "/dev/null" : `b/${toPath}`}`,
  ];
  let k = 0;
  while (k < ops.length) {
    if (ops[k]!.kind === " ") {
      k++;
      continue;
    }
    // A hunk: from CONTEXT lines before this change to CONTEXT after the last change within reach.
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    let last = k;
    while (end < ops.length && end - last <= 2 * CONTEXT) {
      if (ops[end]!.kind !== " ") last = end;
      end++;
    }
    end = Math.min(ops.length, last + CONTEXT + 1);
    let oldLine = 1;
    let newLine = 1;
    for (let i = 0; i < start; i++) {
      if (ops[i]!.kind !== "+") oldLine++;
      if (ops[i]!.kind !== "-") newLine++;
    }
    const hunk = ops.slice(start, end);
    const oldCount = hunk.filter((o) => o.kind !== "+").length;
    const newCount = hunk.filter((o) => o.kind !== "-").length;
    out.push(
      `@@ -${oldCount === 0 ? oldLine - 1 : oldLine},${oldCount} +${newCount === 0 ? newLine - 1 : newLine},${newCount} @@`,
    );
    for (const o of hunk) out.push(`${o.kind}${o.line}`);
    k = end;
  }
  return `${out.join("\n")}\n`;
}

/** The files that differ between two trees (path → bytes), by path. */
export function diffTrees(
  before: Map<string, Uint8Array>,
  after: Map<string, Uint8Array>,
  maxBytes: number,
): { files: FileDiff[]; truncated: boolean } {
  const files: FileDiff[] = [];
  const added = [...after.keys()].filter((p) => !before.has(p));
  const deleted = [...before.keys()].filter((p) => !after.has(p));
  const renamedFrom = new Map<string, string>();
  for (const to of added) {
    const from = deleted.find((d) => !renamedFrom.has(d) && sameBytes(before.get(d)!, after.get(to)!));
    if (from !== undefined) renamedFrom.set(from, to);
  }
  const renamedTo = new Map([...renamedFrom].map(([from, to]) => [to, from]));
  for (const path of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const a = before.get(path);
    const b = after.get(path);
    if (a && b && sameBytes(a, b)) continue;
    if (!b && renamedFrom.has(path)) continue;
    const from = renamedTo.get(path);
    if (from !== undefined) {
      files.push({ path, status: "renamed", from, sizeBefore: b!.length, sizeAfter: b!.length, binary: isBinary(b!) });
      continue;
    }
    const binary = (a !== undefined && isBinary(a)) || (b !== undefined && isBinary(b));
    files.push({
      path,
      status: a && b ? "modified" : b ? "added" : "deleted",
      ...(a ? { sizeBefore: a.length } : {}),
      ...(b ? { sizeAfter: b.length } : {}),
      binary,
    });
  }
  let used = 0;
  let truncated = false;
  const decode = (bytes: Uint8Array | undefined) => (bytes ? new TextDecoder().decode(bytes) : "");
  for (const f of files) {
    if (f.binary || f.status === "renamed") continue;
    if (truncated) continue;
    const a = before.get(f.path);
    const b = after.get(f.path);
    const diff = unifiedDiff(decode(a), decode(b), a ? f.path : "", b ? f.path : "");
    const size = new TextEncoder().encode(diff).length;
    if (used + size > maxBytes) {
      truncated = true;
      continue;
    }
    used += size;
    f.diff = diff;
  }
  return { files, truncated };
}
