import { describe, expect, it } from "vitest";
import type { ProviderEvent } from "../providers/provider";
import { emptyExecutionUsage, foldReceipt } from "../usage/usage-fold";
import { eventBytes, holdableUpdate, type IngestState, ingestStep } from "./ingest";
import type { InteractionStatus, TurnStatus } from "./store/records";

const state = (
  status: TurnStatus = "running",
  asks: Record<string, InteractionStatus> = {},
  usage = emptyExecutionUsage("e"),
): IngestState => ({
  status,
  usage,
  askStatus: (id) => asks[id] ?? null,
});
const request = { id: "q1", kind: "question", title: "?", answerSpec: { fields: [] } };

describe("ingesting one provider event", () => {
  it("shows a part as message.part.updated, with its delta once: not the text so far", () => {
    const step = ingestStep(state(), {
      kind: "part",
      upstreamId: "1",
      part: { id: "p", type: "text", text: "hi" },
      delta: "hi",
    });
    expect(step.shown).toEqual({
      type: "message.part.updated",
      data: { part: { id: "p", type: "text" }, delta: "hi" },
    });
    expect(step.partText).toEqual({ partId: "p", text: "hi" });
    expect(step.finish).toBeNull();
    const next = ingestStep(
      { ...state(), partText: (id) => (id === "p" ? "hi" : undefined) },
      { kind: "part", upstreamId: "2", part: { id: "p", type: "text", text: "hi there" }, delta: " there" },
    );
    expect(next.shown).toEqual({
      type: "message.part.updated",
      data: { part: { id: "p", type: "text" }, delta: " there" },
    });
    expect(next.partText).toEqual({ partId: "p", text: "hi there" });
  });

  it("shows pass-through frames as they are, and never a private one", () => {
    expect(
      ingestStep(state(), {
        kind: "passthrough",
        upstreamId: "1",
        shown: { type: "status", data: { status: "processing" } },
      }).shown,
    ).toEqual({
      type: "status",
      data: { status: "processing" },
    });
    expect(ingestStep(state(), { kind: "private", upstreamId: "1", type: "native.session.observed" })).toMatchObject({
      shown: null,
      finish: null,
      usage: null,
    });
  });

  it("a warning names the upstream event it came from", () => {
    expect(
      ingestStep(state(), { kind: "warning", upstreamId: "7", code: "invalid_upstream_frame", message: "bad" }).shown,
    ).toEqual({
      type: "warning",
      data: { code: "invalid_upstream_frame", message: "bad", upstreamEventId: "7" },
    });
  });

  it("records a new ask once, and ends only an outstanding one", () => {
    const asked: ProviderEvent = { kind: "interaction.requested", upstreamId: "1", request };
    expect(ingestStep(state(), asked).askRequested).toEqual(request);
    expect(ingestStep(state("running", { q1: "outstanding" }), asked).askRequested).toBeNull();
    const ended: ProviderEvent = {
      kind: "interaction.ended",
      upstreamId: "2",
      interactionId: "q1",
      why: "expired",
      reason: "timeout",
    };
    expect(ingestStep(state("running", { q1: "outstanding" }), ended).askEnded).toEqual({
      interactionId: "q1",
      status: "expired",
      reason: "timeout",
    });
    expect(ingestStep(state("running", { q1: "answered" }), ended).askEnded).toBeNull();
    expect(ingestStep(state(), ended).askEnded).toBeNull();
  });

  it("folds usage, attaching the running total to the shown event; a repeat changes nothing", () => {
    const event: ProviderEvent = {
      kind: "usage",
      upstreamId: "3",
      usage: { mode: "delta", key: "s1", provenance: "measured", counts: { inputTokens: 10, outputTokens: 2 } },
      shown: { type: "raw", data: {} },
    };
    const first = ingestStep(state(), event);
    expect(first.shown).toEqual({
      type: "raw",
      data: {},
      usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 },
    });
    expect(first.usage).toMatchObject({ steps: { inputTokens: 10, outputTokens: 2 } });
    const again = ingestStep(state("running", {}, first.usage!), event);
    expect(again.usage).toBeNull();
    expect(again.shown).toEqual({ type: "raw", data: {} });
  });

  it("an unreadable usage report fails the run's stream (of a running turn), and no running total is claimed", () => {
    const bad: ProviderEvent = {
      kind: "usage",
      upstreamId: "3",
      usage: { mode: "delta", key: "s1", provenance: "measured", counts: {}, problem: "step s1: negative" },
    };
    const step = ingestStep(state(), bad);
    expect(step.streamError).toEqual({
      code: "usage_invalid",
      message:
        "the agent service reported an invalid usage count (step s1: negative): the run's stream failed, and the run was stopped",
    });
    expect(step.usage?.stepsBroken).toBe(true);
    expect(step.shown).toBeNull();
    expect(ingestStep(state("failed"), bad).streamError).toBeNull();
  });

  it("a terminal event ends a running turn with its receipt; a second one is not shown", () => {
    const done: ProviderEvent = {
      kind: "terminal",
      upstreamId: "9",
      status: "completed",
      text: "ok",
      receipt: { inputTokens: 5, outputTokens: 1 },
      shown: { type: "result", data: {} },
    };
    const step = ingestStep(state(), done);
    expect(step.finish).toEqual({ status: "completed", text: "ok" });
    expect(step.shown).toEqual({
      type: "result",
      data: {},
      usage: { inputTokens: 5, outputTokens: 1, totalTokens: 6 },
    });
    expect(step.usage?.receipt).toEqual({ inputTokens: 5, outputTokens: 1 });
    expect(ingestStep(state("completed"), done)).toMatchObject({ shown: null, finish: null, usage: null });
  });

  it("a receipt after one is already folded is not folded again", () => {
    const folded = foldReceipt(emptyExecutionUsage("e"), { inputTokens: 5, outputTokens: 1 });
    const step = ingestStep(state("running", {}, folded), {
      kind: "terminal",
      upstreamId: "9",
      status: "failed",
      error: { message: "x" },
      receipt: { inputTokens: 1, outputTokens: 1 },
    });
    expect(step.usage).toBeNull();
    expect(step.finish).toEqual({ status: "failed", error: { message: "x" } });
  });
});

describe("a terminal frame that does not say how the run ended", () => {
  const done: ProviderEvent = { kind: "terminal", upstreamId: "9", status: "completed", assumed: true };
  it("ends the turn cancelled when a stop was asked for, completed otherwise", () => {
    expect(ingestStep({ ...state(), cancelRequested: true }, done).finish).toEqual({ status: "cancelled" });
    expect(ingestStep(state(), done).finish).toEqual({ status: "completed" });
  });

  it("a frame that says the run completed is believed, stop or not", () => {
    const result: ProviderEvent = { kind: "terminal", upstreamId: "8", status: "completed", text: "done in time" };
    expect(ingestStep({ ...state(), cancelRequested: true }, result).finish).toEqual({
      status: "completed",
      text: "done in time",
    });
  });

  it("estimates an event's bytes from its strings: a part's frame weighs about its text", () => {
    const MiB = 1024 * 1024;
    const big: ProviderEvent = {
      kind: "part",
      upstreamId: "1",
      part: { id: "p", type: "text", text: "x".repeat(MiB) },
      delta: "y".repeat(1024),
    };
    const bytes = eventBytes(big);
    expect(bytes).toBeGreaterThanOrEqual(MiB + 1024);
    expect(bytes).toBeLessThan(MiB + 1024 + 512);
    const nested: ProviderEvent = {
      kind: "passthrough",
      upstreamId: "2",
      shown: { type: "raw", data: { items: [{ text: "z".repeat(5000) }, "w".repeat(3000)] } },
    };
    expect(eventBytes(nested)).toBeGreaterThanOrEqual(8000);
    expect(eventBytes({ kind: "private", upstreamId: undefined, type: "x" })).toBeLessThan(100);
    // A long array is walked without spreading it into one call's arguments.
    const wide: ProviderEvent = {
      kind: "passthrough",
      upstreamId: "3",
      shown: { type: "raw", data: { items: Array.from({ length: 200_000 }, () => 1) } },
    };
    expect(eventBytes(wide)).toBeGreaterThanOrEqual(200_000 * 8);
  });
});

describe("which part updates the store may hold (published first, stored later)", () => {
  const text = (upstreamId: string, whole: string, delta?: string): ProviderEvent => ({
    kind: "part",
    upstreamId,
    part: { id: "p", type: "text", text: whole },
    ...(delta !== undefined ? { delta } : {}),
  });

  it("a delta that continues the text held goes as the delta; a text part's first update, or one that does not continue, whole", () => {
    expect(holdableUpdate(text("5", "one two", " two"), "running", "one")).toEqual({
      kind: "delta",
      part: { id: "p", type: "text" },
      delta: " two",
    });
    // Nothing held (a resumed reader, a part's first update): whole, never a delta a reader may already have.
    expect(holdableUpdate(text("5", "one", "one"), "running", undefined)).toEqual({
      kind: "whole",
      part: { id: "p", type: "text", text: "one" },
    });
    expect(holdableUpdate(text("5", "one two", " two"), "running", "")).toMatchObject({ kind: "whole" });
    expect(holdableUpdate(text("5", "rewritten", " two"), "running", "one")).toMatchObject({ kind: "whole" });
  });

  it("any other part's update in full is held whole; with a delta it is not", () => {
    const tool: ProviderEvent = {
      kind: "part",
      upstreamId: "6",
      part: { id: "t", type: "tool", state: { status: "running" } },
    };
    expect(holdableUpdate(tool, "running", undefined)).toEqual({ kind: "whole", part: tool.part });
    expect(holdableUpdate({ ...tool, delta: "x" } as ProviderEvent, "running", undefined)).toBeNull();
  });

  it("nothing upstream could not send again the same way, and nothing of a turn that does not run", () => {
    // An opaque upstream id: the run's cursor is not the newest stored row's.
    expect(holdableUpdate(text("evt-a", "one two", " two"), "running", "one")).toBeNull();
    expect(
      holdableUpdate(
        { kind: "part", upstreamId: undefined, part: { id: "p", type: "text", text: "x" } } as unknown as ProviderEvent,
        "running",
        undefined,
      ),
    ).toBeNull();
    // A text delta without the part's whole text: a resumed reader could only send the delta again.
    expect(
      holdableUpdate(
        { kind: "part", upstreamId: "5", part: { id: "p", type: "text" }, delta: " two" },
        "running",
        "one",
      ),
    ).toBeNull();
    expect(holdableUpdate(text("5", "one two", " two"), "completed", "one")).toBeNull();
    expect(
      holdableUpdate({ kind: "usage", upstreamId: "7", usage: {} } as unknown as ProviderEvent, "running", undefined),
    ).toBeNull();
  });
});
