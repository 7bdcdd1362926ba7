import { describe, expect, it } from "vitest";
import { SlidingWindow } from "./rate-limit";

describe("the per-user sliding window", () => {
  it("admits up to the limit per minute, then says how long to wait", () => {
    const w = new SlidingWindow();
    for (let i = 0; i < 3; i++)
      expect(w.admit("turn", 3, 1_000 + i * 1_000)).toEqual({ ok: true, at: 1_000 + i * 1_000 });
    expect(w.admit("turn", 3, 10_000)).toEqual({ ok: false, retryAfterSeconds: 51 });
    // The oldest leaves the window after a minute: one more is admitted.
    expect(w.admit("turn", 3, 61_000)).toMatchObject({ ok: true });
    expect(w.admit("turn", 3, 61_500)).toMatchObject({ ok: false });
  });

  it("counts each kind on its own", () => {
    const w = new SlidingWindow();
    expect(w.admit("turn", 1, 0)).toMatchObject({ ok: true });
    expect(w.admit("stream", 1, 0)).toMatchObject({ ok: true });
    expect(w.admit("turn", 1, 10)).toMatchObject({ ok: false });
  });

  it("a place given back is free again; giving back twice, or a place gone from the window, frees nothing more", () => {
    const w = new SlidingWindow();
    expect(w.admit("turn", 2, 0)).toEqual({ ok: true, at: 0 });
    expect(w.admit("turn", 2, 0)).toEqual({ ok: true, at: 0 });
    expect(w.admit("turn", 2, 5)).toMatchObject({ ok: false });
    w.release("turn", 0);
    expect(w.admit("turn", 2, 5)).toEqual({ ok: true, at: 5 });
    w.release("turn", 7);
    w.release("stream", 0);
    expect(w.admit("turn", 2, 6)).toMatchObject({ ok: false });
    // A place that left the window (a minute on) is not given back a second time.
    expect(w.admit("turn", 2, 60_001)).toEqual({ ok: true, at: 60_001 });
    w.release("turn", 0);
    expect(w.admit("turn", 2, 60_002)).toMatchObject({ ok: false });
  });
});
