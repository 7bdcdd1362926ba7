/**
 * A small POSIX ustar writer for `GET …/fs/download-dir` (gzipped by the route): folders and
 * regular files, names over 100 bytes split into the header's prefix, or carried by a PAX `path`
 * record when no split fits. Pure.
 */

export interface TarEntry {
  /** The path in the archive (folders without a trailing slash). */
  name: string;
  isDir: boolean;
  /** Modification time (ms). */
  mtime: number;
  bytes?: Uint8Array;
}

const BLOCK = 512;
const encoder = new TextEncoder();

/** Writes `text` into `header` at `offset`, in at most `length` bytes. */
function put(header: Uint8Array, offset: number, length: number, text: string | Uint8Array): void {
  const bytes = typeof text === "string" ? encoder.encode(text) : text;
  header.set(bytes.subarray(0, length), offset);
}

/** An octal number field: `length - 1` digits and a NUL. */
function octal(header: Uint8Array, offset: number, length: number, value: number): void {
  put(header, offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
}

/** Splits a long name into ustar's prefix (≤ 155 bytes) and name (≤ 100), at a slash; undefined when none fits. */
function splitName(name: string): { prefix: string; name: string } | undefined {
  const bytes = encoder.encode(name);
  if (bytes.length <= 100) return { prefix: "", name };
  for (let i = name.length - 1; i > 0; i--) {
    if (name[i] !== "/") continue;
    const prefix = name.slice(0, i);
    const rest = name.slice(i + 1);
    if (encoder.encode(prefix).length <= 155 && encoder.encode(rest).length <= 100 && rest !== "")
      return { prefix, name: rest };
  }
  return undefined;
}

function header(name: string, prefix: string, size: number, mtime: number, type: string, mode: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  put(h, 0, 100, name);
  octal(h, 100, 8, mode);
  octal(h, 108, 8, 1000);
  octal(h, 116, 8, 1000);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.max(0, Math.floor(mtime / 1000)));
  put(h, 148, 8, "        ");
  put(h, 156, 1, type);
  put(h, 257, 6, "ustar\0");
  put(h, 263, 2, "00");
  put(h, 265, 32, "agent");
  put(h, 297, 32, "agent");
  put(h, 345, 155, prefix);
  let sum = 0;
  for (const b of h) sum += b;
  put(h, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return h;
}

/** A PAX record `"<len> path=<value>\n"`, its length counting itself. */
function paxRecord(key: string, value: string): Uint8Array {
  const body = ` ${key}=${value}\n`;
  const bodyLength = encoder.encode(body).length;
  let length = bodyLength + String(bodyLength).length;
  if (String(length).length !== String(bodyLength).length) length = bodyLength + String(length).length;
  return encoder.encode(`${length}${body}`);
}

const padded = (size: number) => Math.ceil(size / BLOCK) * BLOCK;

/** The archive of the entries, in order, ending with its two zero blocks. */
export function tarArchive(entries: TarEntry[]): Uint8Array {
  const blocks: Uint8Array[] = [];
  const data = (bytes: Uint8Array) => {
    const out = new Uint8Array(padded(bytes.length));
    out.set(bytes);
    blocks.push(out);
  };
  for (const entry of entries) {
    const full = entry.isDir ? `${entry.name}/` : entry.name;
    const size = entry.isDir ? 0 : (entry.bytes?.length ?? 0);
    let split = splitName(full);
    if (!split) {
      const record = paxRecord("path", full);
      blocks.push(header("PaxHeader", "", record.length, entry.mtime, "x", 0o644));
      data(record);
      // The header's own name is then a fallback only (cut to its 100 bytes): readers take the record's.
      split = { prefix: "", name: full };
    }
    blocks.push(
      header(split.name, split.prefix, size, entry.mtime, entry.isDir ? "5" : "0", entry.isDir ? 0o755 : 0o644),
    );
    if (!entry.isDir && entry.bytes && entry.bytes.length > 0) data(entry.bytes);
  }
  blocks.push(new Uint8Array(BLOCK * 2));
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}
