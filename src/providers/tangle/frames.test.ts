import { describe, expect, it } from "vitest";
import { MAX_FRAME_BYTES, normalizeFrame } from "./frames";

const frame = (event: string, data: unknown, id = "5") => ({
  id,
  event,
  data: typeof data === "string" ? data : JSON.stringify(data),
  comments: [],
});

describe("upstream frame normalization", () => {
  it("skips frames that carry nothing of the run", () => {
    expect(normalizeFrame({ comments: ["keepalive"] }, { requireId: true })).toBeUndefined();
    expect(normalizeFrame(frame("connection.established", {}), { requireId: true })).toBeUndefined();
  });

  it("normalizes wire statuses", () => {
    const status = (s: string) => {
      const event = normalizeFrame(frame("status", { status: s }), { requireId: true })!;
      return event.kind === "passthrough" ? event.shown.data.status : undefined;
    };
    expect(
      ["queued", "started", "running", "processing", "success", "completed", "error", "failed", "cancelled"].map(
        status,
      ),
    ).toEqual([
      "started",
      "started",
      "processing",
      "processing",
      "completed",
      "completed",
      "failed",
      "failed",
      "cancelled",
    ]);
  });

  it("marks terminal frames with how the run ended, and the receipt they carry", () => {
    expect(normalizeFrame(frame("result", { finalText: "hi", status: "success" }), { requireId: true })).toMatchObject({
      kind: "terminal",
      status: "completed",
      text: "hi",
    });
    expect(normalizeFrame(frame("result", { finalText: "", status: "cancelled" }), { requireId: true })).toMatchObject({
      kind: "terminal",
      status: "cancelled",
    });
    expect(normalizeFrame(frame("error", { message: "boom", code: "X" }), { requireId: true })).toMatchObject({
      kind: "terminal",
      status: "failed",
      error: { message: "boom", code: "X" },
      shown: { type: "error" },
    });
    const receipt = normalizeFrame(
      frame("done", { tokenUsage: { inputTokens: 5, outputTokens: -1 }, totalCostUsd: 0.2 }),
      { requireId: true },
    );
    expect(receipt).toMatchObject({ kind: "terminal", status: "completed", receipt: { inputTokens: 5, cost: 0.2 } });
    expect(normalizeFrame(frame("done", {}), { requireId: true })).not.toHaveProperty("receipt");
  });

  it("keeps private frames private", () => {
    expect(
      normalizeFrame(frame("native.session.observed", { provider: "opencode", nativeSessionId: "n1" }), {
        requireId: true,
      }),
    ).toEqual({
      kind: "private",
      upstreamId: "5",
      type: "native.session.observed",
    });
  });

  it("reads asks and their ends", () => {
    const request = { id: "q1", kind: "question", title: "?", answerSpec: { fields: [] } };
    expect(normalizeFrame(frame("interaction", { request }), { requireId: true })).toMatchObject({
      kind: "interaction.requested",
      request: { id: "q1" },
    });
    expect(
      normalizeFrame(frame("interaction.cancel", { id: "q1", reason: "timeout" }), { requireId: true }),
    ).toMatchObject({
      kind: "interaction.ended",
      interactionId: "q1",
      why: "expired",
    });
    expect(normalizeFrame(frame("interaction.cancel", { id: "q1" }), { requireId: true })).toMatchObject({
      why: "cancelled",
    });
  });

  it("reads OpenCode steps as delta usage in the receipt's convention, keyed by part id", () => {
    const tokens = { input: 100, output: 20, reasoning: 2, cache: { read: 10, write: 1 } };
    const raw = normalizeFrame(
      frame("raw", {
        backend: "opencode",
        event: { type: "step_finish", part: { id: "s1", type: "step-finish", tokens, cost: 0.5 } },
      }),
      { requireId: true },
    );
    expect(raw).toMatchObject({
      kind: "usage",
      usage: {
        mode: "delta",
        key: "s1",
        provenance: "measured",
        counts: {
          inputTokens: 111,
          outputTokens: 22,
          reasoningTokens: 2,
          cacheReadInputTokens: 10,
          cacheCreationInputTokens: 1,
          cost: 0.5,
        },
      },
      shown: { type: "raw" },
    });
    const part = normalizeFrame(frame("message.part.updated", { part: { id: "s2", type: "step-finish", tokens } }), {
      requireId: true,
    });
    expect(part).toMatchObject({ kind: "usage", usage: { key: "s2" }, shown: { type: "message.part.updated" } });
    const partial = normalizeFrame(
      frame("raw", { backend: "opencode", event: { type: "step_finish", part: { id: "s3", tokens: { output: 5 } } } }),
      { requireId: true },
    );
    expect(partial).toMatchObject({ kind: "usage", usage: { counts: {} } });
    const negative = normalizeFrame(
      frame("raw", {
        backend: "opencode",
        event: { type: "step_finish", part: { id: "s4", tokens: { ...tokens, input: -1 } } },
      }),
      { requireId: true },
    );
    expect(negative).toMatchObject({ kind: "usage", usage: { problem: expect.stringContaining("input") } });
    const fraction = normalizeFrame(
      frame("raw", {
        backend: "opencode",
        event: { type: "step_finish", part: { id: "s5", tokens: { ...tokens, output: 1.5 } } },
      }),
      { requireId: true },
    );
    expect(fraction).toMatchObject({ kind: "usage", usage: { problem: expect.stringContaining("output") } });
  });

  it("Sandbox token counts are measured; a cost's provenance the wire does not give (steps and receipt)", () => {
    const tokens = { input: 100, output: 20 };
    const step = normalizeFrame(
      frame("raw", {
        backend: "opencode",
        event: { type: "step_finish", part: { id: "s1", type: "step-finish", tokens, cost: 0.5 } },
      }),
      { requireId: true },
    );
    expect(step).toMatchObject({ kind: "usage", usage: { provenance: "measured", costProvenance: "unknown" } });
    const result = normalizeFrame(
      frame("result", {
        finalText: "ok",
        tokenUsage: { inputTokens: 5, outputTokens: 1 },
        totalCostUsd: 0.1,
        status: "success",
      }),
      { requireId: true },
    );
    expect(result).toMatchObject({
      kind: "terminal",
      receipt: { inputTokens: 5, cost: 0.1 },
      receiptProvenance: { provenance: "measured", costProvenance: "unknown" },
    });
    // A receipt that reports nothing has no provenance to give.
    expect(normalizeFrame(frame("done", {}), { requireId: true })).not.toHaveProperty("receiptProvenance");
  });

  it("an invalid frame becomes a warning naming the problem, under the frame's own id", () => {
    const notJson = normalizeFrame(frame("status", "{oops"), { requireId: true })!;
    expect(notJson).toMatchObject({ upstreamId: "5", kind: "warning", code: "invalid_upstream_frame" });
    const badShape = normalizeFrame(frame("message.part.updated", { part: { type: "text" } }), { requireId: true })!;
    expect(badShape).toMatchObject({ kind: "warning", message: expect.stringContaining("part.id") });
    const array = normalizeFrame(frame("status", "[1,2]"), { requireId: true })!;
    expect(array).toMatchObject({ kind: "warning", code: "invalid_upstream_frame" });
  });

  it("a frame without an id on an exact replay is an error, reported", () => {
    expect(
      normalizeFrame({ event: "status", data: '{"status":"running"}', comments: [] }, { requireId: true }),
    ).toMatchObject({
      kind: "warning",
      code: "frame_without_id",
    });
  });

  it("refuses a frame over 1 MiB of UTF-8 (multi-byte text counted in bytes)", () => {
    const text = "é".repeat(MAX_FRAME_BYTES / 2 + 10); // fewer chars than the bound, more bytes
    const big = normalizeFrame(frame("message.part.updated", { part: { id: "p", type: "text", text } }), {
      requireId: true,
    })!;
    expect(big).toMatchObject({ upstreamId: "5", kind: "warning", code: "frame_too_large" });
    expect(normalizeFrame({ id: "6", event: "raw", tooLarge: true, comments: [] }, { requireId: true })).toMatchObject({
      code: "frame_too_large",
    });
  });

  it("bounds a frame by its UTF-8 bytes exactly, on either side of the bound, whatever its characters", () => {
    const part = (text: string) => frame("message.part.updated", { part: { id: "p", type: "text", text } });
    // The frame's bytes other than the text: its JSON envelope, the event name and the id.
    const overhead = (text: string) => {
      const f = part(text);
      return new TextEncoder().encode(f.data + f.event + f.id).length - new TextEncoder().encode(text).length;
    };
    for (const unit of ["a", "é", "€", "😀"]) {
      const unitBytes = new TextEncoder().encode(unit).length;
      const fits = unit.repeat(Math.floor((MAX_FRAME_BYTES - overhead("")) / unitBytes));
      expect(normalizeFrame(part(fits), { requireId: true }), `${unit}: at the bound`).toMatchObject({ kind: "part" });
      expect(
        normalizeFrame(part(fits + "a".repeat(unitBytes)), { requireId: true }),
        `${unit}: one unit over`,
      ).toMatchObject({ code: "frame_too_large" });
    }
  });

  it("passes unknown event types through unchanged (new variants arrive in minor releases)", () => {
    expect(normalizeFrame(frame("agent.mood", { mood: "calm" }), { requireId: true })).toEqual({
      kind: "passthrough",
      upstreamId: "5",
      shown: { type: "agent.mood", data: { mood: "calm" } },
    });
  });
});

describe("child tasks' updates (docs/sandbox-wire.md §4, child-task [ours])", () => {
  const update = {
    childId: "c2",
    parentChildId: "c1",
    sourceEventId: "c2#2",
    status: "error",
    title: "Run the tests",
    runner: "general",
    time: { started: 1_767_225_602_000, updated: "2026-01-01T00:00:05Z", ended: 1_767_225_605_000 },
    usage: { inputTokens: 40, outputTokens: -1 },
    terminalReason: "tool_error",
  };
  const canonical = {
    childId: "c2",
    parentChildId: "c1",
    sourceEventId: "c2#2",
    status: "failed",
    title: "Run the tests",
    runner: "general",
    time: {
      started: "2026-01-01T00:00:02.000Z",
      updated: "2026-01-01T00:00:05.000Z",
      ended: "2026-01-01T00:00:05.000Z",
    },
    // The invalid count is left out: unknown, never zero, never a guess.
    usage: { inputTokens: 40 },
    terminalReason: "tool_error",
  };

  it("reads a child-task frame as the canonical event: statuses normalized, times ISO, only the counters reported", () => {
    expect(normalizeFrame(frame("child-task", update), { requireId: true })).toEqual({
      kind: "child-task",
      upstreamId: "5",
      task: canonical,
    });
    const status = (s: string) => {
      const event = normalizeFrame(frame("child-task", { ...update, status: s }), { requireId: true })!;
      return event.kind === "child-task" ? event.task.status : event.kind;
    };
    expect(
      ["queued", "running", "success", "completed", "failed", "cancelled", "canceled", "asleep"].map(status),
    ).toEqual(["running", "running", "completed", "completed", "failed", "cancelled", "cancelled", "warning"]);
    const { usage: _, ...unmeasured } = update;
    const read = normalizeFrame(frame("child-task", unmeasured), { requireId: true });
    expect(read).toMatchObject({ kind: "child-task" });
    expect(read && "task" in read && "usage" in read.task).toBe(false);
  });

  it("reads a subtask part that names its child as the same event", () => {
    const part = { id: "c2", type: "subtask", ...update };
    expect(normalizeFrame(frame("message.part.updated", { part }), { requireId: true })).toEqual({
      kind: "child-task",
      upstreamId: "5",
      task: canonical,
    });
  });

  it("makes no child-task event of an update with no stable childId (or no sourceEventId)", () => {
    const { childId: _, ...anonymous } = update;
    expect(normalizeFrame(frame("child-task", anonymous), { requireId: true })).toMatchObject({
      kind: "warning",
      code: "invalid_upstream_frame",
    });
    const { sourceEventId: __, ...unkeyed } = update;
    expect(normalizeFrame(frame("child-task", unkeyed), { requireId: true })).toMatchObject({ kind: "warning" });
    // OpenCode's own subtask part (a prompt, a description, an agent; no child id) stays a part.
    const opencode = { id: "p1", type: "subtask", prompt: "look", description: "explore", agent: "explore" };
    expect(normalizeFrame(frame("message.part.updated", { part: opencode }), { requireId: true })).toEqual({
      kind: "part",
      upstreamId: "5",
      part: opencode,
    });
  });
});
