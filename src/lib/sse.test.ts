import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeSseFrame, readSseFrames, SseParser } from "./sse";

const parse = (text: string, max?: number) => new SseParser(max).push(text);

describe("SSE parser", () => {
  it("reads LF, CRLF, CR and mixed line endings alike", () => {
    for (const nl of ["\n", "\r\n", "\r"]) {
      expect(parse(`id: 1${nl}event: status${nl}data: {"a":1}${nl}${nl}`)).toEqual([
        { id: "1", event: "status", data: '{"a":1}', comments: [] },
      ]);
    }
    expect(parse("id: 1\r\nevent: x\rdata: y\n\r\n")).toEqual([{ id: "1", event: "x", data: "y", comments: [] }]);
  });

  it("a CRLF split across chunks is one line ending", () => {
    const parser = new SseParser();
    expect(parser.push("data: a\r")).toEqual([]);
    expect(parser.push("\n\r\n")).toEqual([{ data: "a", comments: [] }]);
  });

  it("accepts data before id (CLI Bridge order), joins data lines, keeps comments", () => {
    expect(parse('data: {"x":1}\nid: 7\n\n')).toEqual([{ id: "7", data: '{"x":1}', comments: [] }]);
    expect(parse("data: one\ndata: two\n\n")[0]!.data).toBe("one\ntwo");
    expect(parse(": connected\n\n")).toEqual([{ comments: ["connected"] }]);
    expect(parse("id: 2\n: bridge-metadata\n\n")).toEqual([{ id: "2", comments: ["bridge-metadata"] }]);
  });

  it("handles field edge cases: no space, no colon, retry, NUL in id, unknown fields", () => {
    expect(parse("data:tight\n\n")[0]!.data).toBe("tight");
    expect(parse("data\n\n")[0]!.data).toBe("");
    expect(parse("retry: 2000\n\n")[0]!.retry).toBe(2000);
    expect(parse("retry: soon\n\n")).toEqual([]);
    expect(parse("id: a\0b\ndata: x\n\n")[0]!.id).toBeUndefined();
    expect(parse("foo: bar\ndata: x\n\n")[0]).toEqual({ data: "x", comments: [] });
  });

  it("an unterminated frame is not emitted", () => {
    const parser = new SseParser();
    expect(parser.push("data: partial")).toEqual([]);
    parser.end();
    expect(parser.push("\n\n")).toEqual([]);
  });

  it("a frame over the bound is flagged tooLarge with its id kept and its data dropped; the next frame parses", () => {
    const frames = parse(`id: 9\nevent: big\ndata: ${"x".repeat(200)}\n\nid: 10\ndata: ok\n\n`, 100);
    expect(frames[0]).toMatchObject({ id: "9", event: "big", tooLarge: true });
    expect(frames[0]!.data).toBeUndefined();
    expect(frames[1]).toEqual({ id: "10", data: "ok", comments: [] });
  });

  it("an over-long line split over chunks is dropped without holding it in memory", () => {
    const parser = new SseParser(50);
    expect(parser.push(`id: 3\ndata: ${"y".repeat(60)}`)).toEqual([]);
    expect(parser.push("y".repeat(60))).toEqual([]);
    expect(parser.push("\n\ndata: next\n\n")).toEqual([
      { id: "3", comments: [], tooLarge: true },
      { data: "next", comments: [] },
    ]);
  });

  it("reads a byte stream split at arbitrary points, including inside a UTF-8 character", async () => {
    const bytes = new TextEncoder().encode('id: 1\ndata: "héllo ✓"\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 3) c.enqueue(bytes.slice(i, i + 3));
        c.close();
      },
    });
    const frames = [];
    for await (const f of readSseFrames(body)) frames.push(f);
    expect(frames).toEqual([{ id: "1", data: '"héllo ✓"', comments: [] }]);
  });
});

describe("SSE encoder", () => {
  it("writes id, event and one data line per line", () => {
    expect(encodeSseFrame({ id: 3, event: "x", data: "a\nb" })).toBe("id: 3\nevent: x\ndata: a\ndata: b\n\n");
  });

  it("refuses newline injection in id and event", () => {
    expect(() => encodeSseFrame({ id: "1\ndata: evil", data: "x" })).toThrow();
    expect(() => encodeSseFrame({ event: "x\r\nid: 9", data: "x" })).toThrow();
  });

  it("round-trips through the parser", () => {
    const data = JSON.stringify({ text: "line1\nline2\r\nline3" });
    expect(parse(encodeSseFrame({ id: 42, event: "message.part.updated", data }))).toEqual([
      { id: "42", event: "message.part.updated", data, comments: [] },
    ]);
  });
});

describe("SSE properties (fast-check)", () => {
  // Strings rich in what the protocol is sensitive to: line endings, colons, spaces, multi-byte text.
  const piece = fc.constantFrom(
    "\r",
    "\n",
    "\r\n",
    ":",
    " ",
    "  ",
    "data: x",
    "id",
    "a",
    "Z",
    "0",
    "é",
    "✓",
    "😀",
    "\t",
  );
  const text = fc.array(piece, { maxLength: 12 }).map((p) => p.join(""));
  const lineBreak = /[\r\n\0]/;
  const singleLine = text.filter((s) => !lineBreak.test(s));
  const frame = fc.record(
    {
      id: fc.oneof(fc.nat({ max: Number.MAX_SAFE_INTEGER }), singleLine),
      event: singleLine,
      data: text,
      retry: fc.nat({ max: 1_000_000 }),
    },
    { requiredKeys: ["data"] },
  );
  /** What a parser must read back: data lines joined with LF, whatever ending each had. */
  const expected = (f: { id?: string | number; event?: string; data: string; retry?: number }) => ({
    ...(f.id !== undefined ? { id: String(f.id) } : {}),
    ...(f.event !== undefined ? { event: f.event } : {}),
    data: f.data.replace(/\r\n|\r/g, "\n"),
    comments: [],
    ...(f.retry !== undefined ? { retry: f.retry } : {}),
  });
  /** Cuts `s` at the given points. */
  const cut = (s: string, points: number[]) => {
    const at = [...new Set(points.map((p) => p % (s.length + 1)))].sort((a, b) => a - b);
    const out: string[] = [];
    let from = 0;
    for (const p of at) {
      out.push(s.slice(from, p));
      from = p;
    }
    out.push(s.slice(from));
    return out;
  };

  it("any frames, encoded and parsed back in chunks cut anywhere, are the same frames", () => {
    fc.assert(
      fc.property(
        fc.array(frame, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (frames, points) => {
          const wire = frames.map((f) => encodeSseFrame(f)).join("");
          const parser = new SseParser();
          const parsed = cut(wire, points).flatMap((chunk) => parser.push(chunk));
          expect(parsed).toEqual(frames.map(expected));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("the same frames written with CR, LF or CRLF line endings, cut anywhere (a CRLF too), parse the same", () => {
    const ending = fc.constantFrom("\n", "\r", "\r\n");
    fc.assert(
      fc.property(
        fc.array(frame, { minLength: 1, maxLength: 4 }),
        fc.array(ending, { minLength: 1 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (frames, endings, points) => {
          let i = 0;
          let previous = "";
          // The encoder writes LF only, and no line of its output holds a CR or LF: each is a line end.
          // A CR followed by an ending that starts with LF would be one CRLF: then it is a CR too.
          const wire = frames
            .map((f) => encodeSseFrame(f))
            .join("")
            .replace(/\n/g, () => {
              const next = endings[i++ % endings.length]!;
              previous = previous === "\r" && next.startsWith("\n") ? "\r" : next;
              return previous;
            });
          const parser = new SseParser();
          expect(cut(wire, points).flatMap((chunk) => parser.push(chunk))).toEqual(frames.map(expected));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("the byte stream reader agrees, with UTF-8 characters split between chunks", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(frame, { minLength: 1, maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (frames, points) => {
          const bytes = new TextEncoder().encode(frames.map((f) => encodeSseFrame(f)).join(""));
          const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
          const body = new ReadableStream<Uint8Array>({
            start(c) {
              let from = 0;
              for (const p of [...at, bytes.length]) {
                c.enqueue(bytes.slice(from, p));
                from = p;
              }
              c.close();
            },
          });
          const parsed = [];
          for await (const f of readSseFrames(body)) parsed.push(f);
          expect(parsed).toEqual(frames.map(expected));
        },
      ),
      { numRuns: 150 },
    );
  });

  it("a CR, LF or NUL anywhere in an id or event name is refused, never written", () => {
    const injected = fc
      .tuple(singleLine, fc.constantFrom("\r", "\n", "\r\n", "\0"), singleLine)
      .map(([a, bad, b]) => a + bad + b);
    fc.assert(
      fc.property(injected, text, (bad, data) => {
        expect(() => encodeSseFrame({ id: bad, data })).toThrow(/single line/);
        expect(() => encodeSseFrame({ event: bad, data })).toThrow(/single line/);
      }),
      { numRuns: 300 },
    );
  });

  it("data can never start a second frame or set a field: every line it has is a data line", () => {
    fc.assert(
      fc.property(text, (data) => {
        const wire = encodeSseFrame({ id: 1, event: "x", data });
        const lines = wire.split(/\r\n|\r|\n/).slice(0, -2);
        expect(lines.slice(2).every((l) => l.startsWith("data: "))).toBe(true);
        expect(parse(wire)).toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });
});
