import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FrameLog, type LoggedFrame, OUTPUT_MAX_CHARS } from "./frame-log";

const outputs = (frames: LoggedFrame[]) => frames.filter((f) => f.type === "output").map((f) => f.data);

describe("FrameLog", () => {
  it("numbers only output, keeps the other frames in their place, and replays after an exclusive cursor", () => {
    const log = new FrameLog();
    log.append({ type: "ready", restored: false });
    log.append({ type: "output", data: "a" });
    log.append({ type: "resize", cols: 100, rows: 30 });
    log.append({ type: "output", data: "b" });
    log.append({ type: "exit", exitCode: 0 });
    const replay = log.after(1);
    expect(replay).toEqual({
      ok: true,
      frames: [
        { type: "resize", cols: 100, rows: 30 },
        { type: "output", seq: 2, data: "b" },
        { type: "exit", exitCode: 0 },
      ],
    });
    expect(log.after()).toMatchObject({ ok: true, frames: [{ type: "ready" }, { seq: 1 }, {}, { seq: 2 }, {}] });
    expect(log.after(2)).toEqual({ ok: true, frames: [{ type: "exit", exitCode: 0 }] });
    expect(log.cursors()).toEqual({ earliest: 1, latest: 2 });
  });

  it("refuses a cursor ahead of the log and one older than what it retains", () => {
    const log = new FrameLog(1, 4);
    for (const data of ["1", "2", "3", "4", "5", "6"]) log.append({ type: "output", data });
    expect(log.after(7)).toMatchObject({ ok: false, code: "cursor_invalid" });
    // 1 and 2 were evicted: a viewer at 2 misses nothing, one at 1 would miss 2.
    expect(log.after(2)).toMatchObject({ ok: true });
    expect(outputs((log.after(2) as { frames: LoggedFrame[] }).frames)).toEqual(["3", "4", "5", "6"]);
    expect(log.after(1)).toMatchObject({ ok: false, code: "cursor_evicted", cursors: { earliest: 3, latest: 6 } });
  });

  it("refuses the cursor before an evicted frame that is not output (it would be missed)", () => {
    const log = new FrameLog(1, 3);
    log.append({ type: "output", data: "1" });
    log.append({ type: "resize", cols: 2, rows: 2 });
    log.append({ type: "output", data: "2" });
    log.append({ type: "output", data: "3" });
    log.append({ type: "output", data: "4" });
    // Evicted: "1", then the resize. A viewer at 1 would miss the resize.
    expect(log.after(1)).toMatchObject({ ok: false, code: "cursor_evicted" });
    expect(log.after(2)).toMatchObject({ ok: true });
  });

  it("splits long output into bounded frames without cutting a surrogate pair", () => {
    const log = new FrameLog();
    const text = `${"x".repeat(OUTPUT_MAX_CHARS - 1)}😀${"y".repeat(10)}`;
    const frames = log.append({ type: "output", data: text });
    expect(frames.every((f) => f.type === "output" && f.data.length <= OUTPUT_MAX_CHARS)).toBe(true);
    expect(outputs(frames).join("")).toBe(text);
    expect(frames.map((f) => (f.type === "output" ? f.seq : 0))).toEqual([1, 2]);
  });

  it("after a clear (or in a new incarnation) an old cursor is evicted, the newest still good", () => {
    const log = new FrameLog();
    log.append({ type: "output", data: "a" });
    log.append({ type: "output", data: "b" });
    log.clear();
    log.append({ type: "output", data: "c" });
    expect(log.after(1)).toMatchObject({ ok: false, code: "cursor_evicted" });
    expect(log.after(2)).toEqual({ ok: true, frames: [{ type: "output", seq: 3, data: "c" }] });
    const fresh = new FrameLog(1025);
    expect(fresh.cursors()).toEqual({ earliest: null, latest: null });
    expect(fresh.after(10)).toMatchObject({ ok: false, code: "cursor_evicted" });
  });

  it("property: any good cursor replays exactly the output after it, none twice, none missed", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constant(null)), { maxLength: 80 }),
        fc.integer({ min: 2, max: 30 }),
        (chunks, maxFrames) => {
          const log = new FrameLog(1, maxFrames);
          const all: string[] = [];
          for (const chunk of chunks) {
            if (chunk === null) log.append({ type: "resize", cols: 1, rows: 1 });
            else for (const f of log.append({ type: "output", data: chunk })) if (f.type === "output") all.push(f.data);
          }
          for (let since = 0; since <= all.length; since++) {
            const replay = log.after(since);
            if (replay.ok) expect(outputs(replay.frames)).toEqual(all.slice(since));
          }
          // With output retained, its newest cursor is good (nothing logged after it was evicted).
          if (log.cursors().earliest !== null) expect(log.after(all.length).ok).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
