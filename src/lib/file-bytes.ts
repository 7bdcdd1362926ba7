/**
 * What a file's bytes are, read from the bytes and never from a name or a declared type (issue 40:
 * reading the workspace, attachments): text or binary, the media type a few formats' signatures
 * say, a file name made safe to write and to name in a header, and a stream cut off past a bound.
 * Pure.
 */

/** UTF-8 text when the bytes hold no NUL and decode strictly; null for anything else (binary). */
export function textOf(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Where to cut `bytes` (a text file read up to a bound) so that no incomplete UTF-8 sequence is
 * left at their end: before the sequence the bound split, so a truncated text stays text.
 */
export function utf8Boundary(bytes: Uint8Array): number {
  const end = bytes.length;
  // At most 3 continuation bytes (10xxxxxx) before a lead byte.
  for (let back = 1; back <= 4 && end - back >= 0; back++) {
    const byte = bytes[end - back]!;
    if ((byte & 0xc0) === 0x80) continue;
    const need = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return need > back ? end - back : end;
  }
  return end;
}

const startsWith = (bytes: Uint8Array, signature: readonly number[], at = 0) =>
  bytes.length >= at + signature.length && signature.every((b, i) => bytes[at + i] === b);

/** The media types an attachment is sniffed as; anything else is `application/octet-stream`. */
export type SniffedType =
  | "image/png"
  | "image/jpeg"
  | "image/gif"
  | "image/webp"
  | "application/pdf"
  | "text/plain"
  | "application/octet-stream";

/** The media type the bytes' own signature says (png, jpeg, gif, webp, pdf, UTF-8 text), else octet-stream. */
export function sniffMediaType(bytes: Uint8Array): SniffedType {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png";
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg";
  if (startsWith(bytes, [0x47, 0x49, 0x46, 0x38]) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return "image/gif";
  if (startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8))
    return "image/webp";
  if (startsWith(bytes, [0x25, 0x50, 0x44, 0x46, 0x2d])) return "application/pdf";
  if (textOf(bytes) !== null) return "text/plain";
  return "application/octet-stream";
}

export const isImage = (type: string) => type.startsWith("image/");

/** The longest file name kept, in UTF-16 units (a file system's segment limit is 255 bytes). */
const MAX_NAME_LENGTH = 100;

/**
 * A name to write a file under: its last segment only (no `/` or `\`), control characters and
 * characters that mean something to a shell or a header dropped, no leading dots (no hidden
 * file, no `..`), at most MAX_NAME_LENGTH characters with its extension kept; `file` when
 * nothing is left.
 */
export function safeFileName(raw: string): string {
  const last = raw.split(/[/\\]/).pop() ?? "";
  let name = last
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it drops
    .replace(/[\u0000-\u001f\u007f-\u009f"'`$<>|:*?;&]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^\.+/, "")
    .trim();
  if (name.length > MAX_NAME_LENGTH) {
    const dot = name.lastIndexOf(".");
    const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : "";
    name = name.slice(0, MAX_NAME_LENGTH - ext.length) + ext;
  }
  return name || "file";
}

/** A `content-disposition: attachment` naming `name` (an ASCII fallback and the exact name, RFC 6266). */
export function attachmentDisposition(name: string): string {
  const ascii = safeFileName(name)
    .replace(/[^\x20-\x7e]/g, "_")
    .replace(/[\\%]/g, "_");
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(safeFileName(name))}`;
}

/**
 * `body` passed on until `maxBytes` have gone through; a byte past them errors the stream (the
 * client sees a cut-off download, never a silent truncation) and cancels the source.
 */
export function limitedStream(body: ReadableStream<Uint8Array>, maxBytes: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let seen = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read();
      if (next.done) return controller.close();
      seen += next.value.byteLength;
      if (seen > maxBytes) {
        await reader.cancel().catch(() => undefined);
        controller.error(new Error(`the download is larger than ${maxBytes} bytes`));
        return;
      }
      controller.enqueue(next.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
