import { describe, expect, it } from "vitest";
import { encodeSseFrame, readSseFrames, SseParser } from "./sse";

const parse = (text: string, max?: number) => new SseParser(max).push(text);

describe("SSE parser", () => {
  it("reads LF, CRLF, CR and mixed line endings alike", () => {
    for (const nl of ["\n", "\r\n", "\r"]) {
      expect(parse(`id: 1${nl}event: status${nl}data: {"a":1}${nl}${nl}`)).toEqual([{ id: "1", event: "status", data: '{"a":1}', comments: [] }]);
    }
    expect(parse('id: 1\r\nevent: x\rdata: y\n\r\n')).toEqual([{ id: "1", event: "x", data: "y", comments: [] }]);
  });

  it("a CRLF split across chunks is one line ending", () => {
    const parser = new SseParser();
    expect(parser.push("data: a\r")).toEqual([]);
    expect(parser.push("\n\r\n")).toEqual([{ data: "a", comments: [] }]);
  });

  it("accepts data before id (CLI Bridge order), joins data lines, keeps comments", () => {
    expect(parse('data: {"x":1}\nid: 7\n\n')).toEqual([{ id: "7", data: '{"x":1}', comments: [] }]);
    expect(parse("data: one\ndata: two\n\n")[0]!.data).toBe("one\ntwo");
    expect(parse(": connected\n\n")).toEqual([{ comments: ["connected"], }]);
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
    expect(parser.push("id: 3\ndata: " + "y".repeat(60))).toEqual([]);
    expect(parser.push("y".repeat(60))).toEqual([]);
    expect(parser.push("\n\ndata: next\n\n")).toEqual([{ id: "3", comments: [], tooLarge: true }, { data: "next", comments: [] }]);
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
