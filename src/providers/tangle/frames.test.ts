import { describe, expect, it } from "vitest";
import { MAX_FRAME_BYTES, normalizeFrame } from "./frames";

const frame = (event: string, data: unknown, id = "5") => ({ id, event, data: typeof data === "string" ? data : JSON.stringify(data), comments: [] });

describe("upstream frame normalization", () => {
  it("skips frames that carry nothing of the run", () => {
    expect(normalizeFrame({ comments: ["keepalive"] }, { requireId: true })).toBeUndefined();
    expect(normalizeFrame(frame("connection.established", {}), { requireId: true })).toBeUndefined();
  });

  it("normalizes wire statuses", () => {
    const status = (s: string) => normalizeFrame(frame("status", { status: s }), { requireId: true })!.data.status;
    expect(["queued", "started", "running", "processing", "success", "completed", "error", "failed", "cancelled"].map(status)).toEqual([
      "started", "started", "processing", "processing", "completed", "completed", "failed", "failed", "cancelled",
    ]);
  });

  it("marks terminal frames with how the run ended", () => {
    expect(normalizeFrame(frame("result", { finalText: "hi", status: "success" }), { requireId: true })!.terminal).toEqual({ status: "completed", text: "hi" });
    expect(normalizeFrame(frame("result", { finalText: "", status: "cancelled" }), { requireId: true })!.terminal!.status).toBe("cancelled");
    expect(normalizeFrame(frame("error", { message: "boom", code: "X" }), { requireId: true })!.terminal).toEqual({
      status: "failed",
      error: { message: "boom", code: "X" },
    });
  });

  it("keeps private frames private", () => {
    expect(normalizeFrame(frame("native.session.observed", { provider: "opencode", nativeSessionId: "n1" }), { requireId: true })!.private).toBe(true);
  });

  it("an invalid frame becomes a warning naming the problem, under the frame's own id", () => {
    const notJson = normalizeFrame(frame("status", "{oops"), { requireId: true })!;
    expect(notJson).toMatchObject({ upstreamId: "5", type: "warning", data: { code: "invalid_upstream_frame" } });
    const badShape = normalizeFrame(frame("message.part.updated", { part: { type: "text" } }), { requireId: true })!;
    expect(badShape.type).toBe("warning");
    expect(badShape.data.message).toContain("part.id");
    const array = normalizeFrame(frame("status", "[1,2]"), { requireId: true })!;
    expect(array.data.code).toBe("invalid_upstream_frame");
  });

  it("a frame without an id on an exact replay is an error, reported", () => {
    expect(normalizeFrame({ event: "status", data: '{"status":"running"}', comments: [] }, { requireId: true })).toMatchObject({
      type: "warning",
      data: { code: "frame_without_id" },
    });
  });

  it("refuses a frame over 1 MiB of UTF-8 (multi-byte text counted in bytes)", () => {
    const text = "é".repeat(MAX_FRAME_BYTES / 2 + 10); // fewer chars than the bound, more bytes
    const big = normalizeFrame(frame("message.part.updated", { part: { id: "p", type: "text", text } }), { requireId: true })!;
    expect(big).toMatchObject({ upstreamId: "5", type: "warning", data: { code: "frame_too_large" } });
    expect(normalizeFrame({ id: "6", event: "raw", tooLarge: true, comments: [] }, { requireId: true })!.data.code).toBe("frame_too_large");
  });

  it("passes unknown event types through unchanged (new variants arrive in minor releases)", () => {
    expect(normalizeFrame(frame("child-task", { childId: "c1" }), { requireId: true })).toEqual({ upstreamId: "5", type: "child-task", data: { childId: "c1" } });
  });
});
