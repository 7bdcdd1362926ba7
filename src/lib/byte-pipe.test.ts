/**
 * The pipe a response body is read from (the runtime's own, read by the runtime): it counts what
 * the reader has not taken yet, says when the reader went away, and pipes another stream into
 * itself between its own writes (a relay's direct stream), telling whether that went through.
 */
import { describe, expect, it } from "vitest";
import { bytePipe } from "./byte-pipe";

const tick = () => new Promise((r) => setTimeout(r, 0));

/**
 * A source the test writes to. (The runtime pipes a response body it got, a direct stream, into the
 * pipe natively; one transform stream into another in the same request it refuses, so the source
 * here is a JavaScript stream.)
 */
function source_() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return { stream, controller };
}

describe("the relay's pipe", () => {
  it("counts the bytes written and not yet read, and says when they fall below a mark", async () => {
    const pipe = bytePipe();
    const reader = pipe.readable.getReader();
    pipe.write(new Uint8Array(300));
    pipe.write(new Uint8Array(200));
    expect(pipe.unread()).toBe(500);
    let below = false;
    void pipe.below(100).then(() => (below = true));
    await tick();
    expect(below).toBe(false);
    let read = 0;
    while (read < 500) read += (await reader.read()).value!.byteLength;
    await tick();
    expect(pipe.unread()).toBe(0);
    expect(below).toBe(true);
    await reader.cancel();
  });

  it("says the browser went away when its end is cancelled: with a write waiting, or at the next write", async () => {
    for (const waiting of [true, false]) {
      const pipe = bytePipe();
      let gone = false;
      void pipe.gone.then(() => (gone = true));
      if (waiting) pipe.write(new Uint8Array(10));
      await pipe.readable.cancel();
      await tick();
      if (!waiting) {
        pipe.write(new Uint8Array(10));
        await tick();
      }
      expect(gone).toBe(true);
      // Nothing more is counted or written.
      pipe.write(new Uint8Array(10));
      await tick();
    }
  });

  it("pipes a source into the stream between its own writes, in order, and goes on writing after it", async () => {
    const pipe = bytePipe();
    const reader = pipe.readable.getReader();
    const enc = new TextEncoder();
    pipe.write(enc.encode("a"));
    const { stream: source, controller } = source_();
    const piping = pipe.pipeFrom(source);
    controller.enqueue(enc.encode("b"));
    controller.enqueue(enc.encode("c"));
    controller.close();
    const got: string[] = [];
    const read = async (n: number) => {
      while (got.join("").length < n) got.push(new TextDecoder().decode((await reader.read()).value));
    };
    await read(3);
    expect(await piping).toBe(true);
    pipe.write(enc.encode("d"));
    await read(4);
    expect(got.join("")).toBe("abcd");
    await reader.cancel();
  });

  it("a source that fails, or a close while it pipes, is not through: the stream ends (a close once the source is through)", async () => {
    for (const how of ["source fails", "closed while piping"] as const) {
      const pipe = bytePipe();
      const reader = pipe.readable.getReader();
      const { stream: source, controller } = source_();
      const piping = pipe.pipeFrom(source);
      controller.enqueue(new Uint8Array([65]));
      const first = await reader.read();
      expect(first.value?.byteLength).toBe(1);
      if (how === "source fails") controller.error(new Error("broken off"));
      else {
        pipe.close();
        controller.enqueue(new Uint8Array([66]));
        expect((await reader.read()).value?.[0]).toBe(66);
        controller.close();
      }
      expect(await piping).toBe(false);
      if (how === "source fails") pipe.close();
      // The stream ends (the relay ends it when the source failed; a close ends it itself).
      expect((await reader.read()).done).toBe(true);
    }
  });

  it("says the browser went away when it leaves while a source is piped", async () => {
    const pipe = bytePipe();
    let gone = false;
    void pipe.gone.then(() => (gone = true));
    const { stream: source, controller } = source_();
    const piping = pipe.pipeFrom(source);
    await pipe.readable.cancel();
    controller.enqueue(new Uint8Array(10));
    expect(await piping).toBe(false);
    await tick();
    expect(gone).toBe(true);
  });

  it("errors its reader on abort, rather than ending it", async () => {
    const pipe = bytePipe();
    const reader = pipe.readable.getReader();
    pipe.abort("viewer too far behind");
    await expect(reader.read()).rejects.toThrow();
  });
});
