import { describe, expect, it } from "vitest";
import { attachmentDisposition, limitedStream, safeFileName, sniffMediaType, textOf, utf8Boundary } from "./file-bytes";

const bytes = (...b: number[]) => new Uint8Array(b);
const utf8 = (s: string) => new TextEncoder().encode(s);

describe("a file's bytes", () => {
  it("text when UTF-8 without NUL; binary for a NUL or an invalid sequence", () => {
    expect(textOf(utf8("héllo\n"))).toBe("héllo\n");
    expect(textOf(bytes(0x61, 0x00, 0x62))).toBeNull();
    expect(textOf(bytes(0xff, 0xfe, 0x41))).toBeNull();
    expect(textOf(bytes())).toBe("");
  });

  it("a cut inside a UTF-8 sequence moves back to its start", () => {
    const e = utf8("aé"); // 61 c3 a9
    expect(utf8Boundary(e)).toBe(3);
    expect(utf8Boundary(e.subarray(0, 2))).toBe(1);
    const emoji = utf8("x😀"); // 78 f0 9f 98 80
    expect(utf8Boundary(emoji.subarray(0, 4))).toBe(1);
    expect(utf8Boundary(emoji)).toBe(5);
  });

  it("sniffed from the signature, never from a name", () => {
    expect(sniffMediaType(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0))).toBe("image/png");
    expect(sniffMediaType(bytes(0xff, 0xd8, 0xff, 0xe0))).toBe("image/jpeg");
    expect(sniffMediaType(utf8("GIF89a..."))).toBe("image/gif");
    expect(sniffMediaType(utf8("GIF87a"))).toBe("image/gif");
    expect(sniffMediaType(utf8("RIFF\u0001\u0002\u0003\u0004WEBPVP8 "))).toBe("image/webp");
    expect(sniffMediaType(utf8("RIFF\u0001\u0002\u0003\u0004WAVEfmt "))).toBe("text/plain");
    expect(sniffMediaType(utf8("%PDF-1.7\n"))).toBe("application/pdf");
    expect(sniffMediaType(utf8("plain words"))).toBe("text/plain");
    expect(sniffMediaType(bytes(0x00, 0x01, 0x02))).toBe("application/octet-stream");
  });

  it("a name made safe: the last segment, no control or shell characters, no leading dots, bounded", () => {
    expect(safeFileName("../../etc/passwd")).toBe("passwd");
    expect(safeFileName("C:\\Users\\x\\report.pdf")).toBe("report.pdf");
    expect(safeFileName(".env")).toBe("env");
    expect(safeFileName("...")).toBe("file");
    expect(safeFileName("a\u0000b\nc.txt")).toBe("abc.txt");
    expect(safeFileName('x"; rm -rf $HOME `y`.sh')).toBe("x rm -rf HOME y.sh");
    expect(safeFileName("")).toBe("file");
    const long = safeFileName(`${"n".repeat(300)}.png`);
    expect(long.length).toBe(100);
    expect(long.endsWith(".png")).toBe(true);
    expect(safeFileName("ünïcødé 😀.md")).toBe("ünïcødé 😀.md");
  });

  it("a content-disposition with an ASCII fallback and the exact name", () => {
    expect(attachmentDisposition("report.pdf")).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(attachmentDisposition('é"x.txt')).toBe(`attachment; filename="_x.txt"; filename*=UTF-8''%C3%A9x.txt`);
  });

  it("a stream past its bound errors instead of passing more", async () => {
    const source = () =>
      new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(utf8("12345"));
          c.enqueue(utf8("67890"));
          c.close();
        },
      });
    expect(await new Response(limitedStream(source(), 10)).text()).toBe("1234567890");
    await expect(new Response(limitedStream(source(), 9)).text()).rejects.toThrow(/larger than 9 bytes/);
  });
});
