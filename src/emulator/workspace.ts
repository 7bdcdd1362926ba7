/**
 * A sandbox's workspace as a file tree (docs/sandbox-wire.md §10): seeded when the sandbox is
 * created (workspace-seed.ts), changed by the scripted agent's completed tool calls (a script
 * frame's `change`, applied by the runner when it emits the frame), read and written by the file
 * routes (api-files.ts). Folders are implied by the files' paths; the root always exists. Paths
 * here are keys relative to the root (workspace-path.ts).
 */
import type { WorkspaceChange } from "./script-frame";
import type { EmulatorStore } from "./store";
import { isWithin, resolvePath } from "./workspace-path";
import { binaryBytes, seedFiles } from "./workspace-seed";

/** A file or a folder of the tree: a folder's time is its newest file's, its size 4096 as `ls` says. */
export interface TreeNode {
  rel: string;
  name: string;
  isDir: boolean;
  size: number;
  mtime: number;
}

const DIR_SIZE = 4096;
const baseName = (rel: string) => rel.slice(rel.lastIndexOf("/") + 1);

export class Workspace {
  constructor(private readonly store: EmulatorStore) {}

  /** A new sandbox's files: the seeded project. */
  seed(sandboxId: string): void {
    const now = Date.now();
    this.store.files.drop(sandboxId);
    for (const f of seedFiles()) this.store.files.write(sandboxId, f.path, f.bytes, now);
  }

  /** The file or folder at `rel`, undefined when there is none. */
  node(sandboxId: string, rel: string): TreeNode | undefined {
    const file = rel === "" ? undefined : this.store.files.entry(sandboxId, rel);
    if (file) return { rel, name: baseName(rel), isDir: false, size: file.size, mtime: file.mtime };
    const below = this.store.files.entries(sandboxId).filter((e) => isWithin(e.path, rel));
    if (rel !== "" && below.length === 0) return undefined;
    return { rel, name: baseName(rel), isDir: true, size: DIR_SIZE, mtime: Math.max(0, ...below.map((e) => e.mtime)) };
  }

  /** The files and folders directly in the folder `rel`, by name. */
  children(sandboxId: string, rel: string): TreeNode[] {
    const prefix = rel === "" ? "" : `${rel}/`;
    const out = new Map<string, TreeNode>();
    for (const e of this.store.files.entries(sandboxId)) {
      if (!e.path.startsWith(prefix)) continue;
      const rest = e.path.slice(prefix.length);
      const slash = rest.indexOf("/");
      if (slash === -1) {
        out.set(rest, { rel: e.path, name: rest, isDir: false, size: e.size, mtime: e.mtime });
        continue;
      }
      const name = rest.slice(0, slash);
      const seen = out.get(name);
      out.set(name, {
        rel: prefix + name,
        name,
        isDir: true,
        size: DIR_SIZE,
        mtime: Math.max(seen?.mtime ?? 0, e.mtime),
      });
    }
    return [...out.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every file at or below `rel`, with its bytes. */
  filesBelow(owner: string, rel: string): Array<{ rel: string; mtime: number; bytes: Uint8Array }> {
    return this.store.files
      .entries(owner)
      .filter((e) => isWithin(e.path, rel))
      .map((e) => ({ rel: e.path, mtime: e.mtime, bytes: this.store.files.read(owner, e.path)! }));
  }

  read(sandboxId: string, rel: string): Uint8Array | undefined {
    return rel === "" ? undefined : this.store.files.read(sandboxId, rel);
  }

  /** Why a file cannot be written at `rel` (a folder there, or a file where a folder would be), or undefined. */
  unwritable(
    sandboxId: string,
    rel: string,
  ): { code: "IS_A_DIRECTORY" | "NOT_A_DIRECTORY"; message: string } | undefined {
    if (rel === "") return { code: "IS_A_DIRECTORY", message: "the workspace root is a folder" };
    if (this.node(sandboxId, rel)?.isDir) return { code: "IS_A_DIRECTORY", message: `${rel} is a folder` };
    const parts = rel.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join("/");
      if (this.store.files.entry(sandboxId, parent))
        return { code: "NOT_A_DIRECTORY", message: `${parent} is a file, not a folder` };
    }
    return undefined;
  }

  /** Writes a file whole, its folders implied. The caller checked `unwritable`. */
  write(sandboxId: string, rel: string, bytes: Uint8Array): void {
    this.store.files.write(sandboxId, rel, bytes, Date.now());
  }

  /**
   * Applies one of the agent's changes; whether anything changed (a path refused, an edit whose
   * file or string is not there, a delete or rename of nothing: no change).
   */
  apply(sandboxId: string, change: WorkspaceChange): boolean {
    const at = (raw: string) => {
      const r = resolvePath(raw);
      return r.ok && r.rel !== "" ? r.rel : undefined;
    };
    const text = new TextEncoder();
    switch (change.op) {
      case "write":
      case "binary": {
        const rel = at(change.path);
        if (rel === undefined || this.unwritable(sandboxId, rel)) return false;
        this.write(sandboxId, rel, change.op === "write" ? text.encode(change.text) : binaryBytes(change.bytes));
        return true;
      }
      case "edit": {
        const rel = at(change.path);
        const bytes = rel === undefined ? undefined : this.read(sandboxId, rel);
        if (rel === undefined || bytes === undefined) return false;
        const before = new TextDecoder().decode(bytes);
        const index = before.indexOf(change.oldString);
        if (index === -1) return false;
        const after = before.slice(0, index) + change.newString + before.slice(index + change.oldString.length);
        this.write(sandboxId, rel, text.encode(after));
        return true;
      }
      case "delete": {
        const rel = at(change.path);
        if (rel === undefined || !this.node(sandboxId, rel)) return false;
        for (const e of this.store.files.entries(sandboxId))
          if (isWithin(e.path, rel)) this.store.files.remove(sandboxId, e.path);
        return true;
      }
      case "rename": {
        const from = at(change.from);
        const to = at(change.to);
        if (from === undefined || to === undefined || from === to || isWithin(to, from)) return false;
        const moved = this.store.files.entries(sandboxId).filter((e) => isWithin(e.path, from));
        if (moved.length === 0) return false;
        for (const e of moved) this.store.files.move(sandboxId, e.path, to + e.path.slice(from.length));
        return true;
      }
    }
  }
}
