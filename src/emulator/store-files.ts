/**
 * The emulator's file trees (`tree_files`, `tree_chunks`): a sandbox's workspace, and each
 * snapshot's copy of one, each tree named by its owner (a sandbox id, or `snap:<snapshotId>`). A
 * file is its path relative to the workspace root, its size, its modification time and its bytes,
 * kept in chunks (a SQLite row holds at most about 2 MB); folders are implied by the paths.
 */

/** The bytes of a file are stored in chunks of this many. */
const CHUNK = 512 * 1024;

export interface TreeEntry extends Record<string, SqlStorageValue> {
  path: string;
  size: number;
  mtime: number;
}

/** The tree owner of a snapshot's copy. */
export const snapshotOwner = (snapshotId: string) => `snap:${snapshotId}`;

export class FileStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  /** Every file of a tree, by path. */
  entries(owner: string): TreeEntry[] {
    return this.sql
      .exec<TreeEntry>("SELECT path, size, mtime FROM tree_files WHERE owner = ? ORDER BY path", owner)
      .toArray();
  }

  /** One file's entry, if it is a file. */
  entry(owner: string, path: string): TreeEntry | undefined {
    return this.sql
      .exec<TreeEntry>("SELECT path, size, mtime FROM tree_files WHERE owner = ? AND path = ?", owner, path)
      .toArray()[0];
  }

  /** A file's bytes, undefined when there is no such file. */
  read(owner: string, path: string): Uint8Array | undefined {
    const entry = this.entry(owner, path);
    if (!entry) return undefined;
    const out = new Uint8Array(entry.size);
    let at = 0;
    for (const row of this.sql.exec<{ data: ArrayBuffer }>(
      "SELECT data FROM tree_chunks WHERE owner = ? AND path = ? ORDER BY idx",
      owner,
      path,
    )) {
      out.set(new Uint8Array(row.data), at);
      at += row.data.byteLength;
    }
    return out;
  }

  /** Writes a file whole (a file already there is replaced). */
  write(owner: string, path: string, bytes: Uint8Array, mtime: number): void {
    this.remove(owner, path);
    this.sql.exec(
      "INSERT INTO tree_files (owner, path, size, mtime) VALUES (?, ?, ?, ?)",
      owner,
      path,
      bytes.byteLength,
      mtime,
    );
    for (let i = 0; i * CHUNK < bytes.byteLength; i++)
      this.sql.exec(
        "INSERT INTO tree_chunks (owner, path, idx, data) VALUES (?, ?, ?, ?)",
        owner,
        path,
        i,
        bytes.slice(i * CHUNK, (i + 1) * CHUNK).buffer,
      );
  }

  /** Removes one file (nothing when there is none). */
  remove(owner: string, path: string): void {
    this.sql.exec("DELETE FROM tree_files WHERE owner = ? AND path = ?", owner, path);
    this.sql.exec("DELETE FROM tree_chunks WHERE owner = ? AND path = ?", owner, path);
  }

  /** Moves one file to another path, keeping its bytes and time (a file at `to` is replaced). */
  move(owner: string, from: string, to: string): void {
    this.remove(owner, to);
    this.sql.exec("UPDATE tree_files SET path = ? WHERE owner = ? AND path = ?", to, owner, from);
    this.sql.exec("UPDATE tree_chunks SET path = ? WHERE owner = ? AND path = ?", to, owner, from);
  }

  /** Forgets a whole tree. */
  drop(owner: string): void {
    this.sql.exec("DELETE FROM tree_files WHERE owner = ?", owner);
    this.sql.exec("DELETE FROM tree_chunks WHERE owner = ?", owner);
  }

  /** Makes `to` an exact copy of `from` (what `to` held is gone). */
  copy(from: string, to: string): void {
    this.drop(to);
    this.sql.exec(
      "INSERT INTO tree_files (owner, path, size, mtime) SELECT ?, path, size, mtime FROM tree_files WHERE owner = ?",
      to,
      from,
    );
    this.sql.exec(
      "INSERT INTO tree_chunks (owner, path, idx, data) SELECT ?, path, idx, data FROM tree_chunks WHERE owner = ?",
      to,
      from,
    );
  }

  /** The sum of a tree's file sizes. */
  totalSize(owner: string): number {
    return (
      this.sql.exec<{ n: number | null }>("SELECT SUM(size) AS n FROM tree_files WHERE owner = ?", owner).one().n ?? 0
    );
  }
}
