import { describe, expect, it } from "vitest";
import { readSseFrames, type SseFrame } from "../../lib/sse";
import type { ProviderEvent } from "../provider";
import { ChunkStream } from "./chunks";
import { bridgeClaims, supportsRetainedSessions } from "./claims";
import { LOST, runEnd } from "./ends";
import { EnvelopeStream } from "./envelopes";
import { generationIn, isConversationSession, sessionFamily, sessionOf } from "./sessions";
import { chunkUsage, envelopeUsage } from "./usage";

/** The body of a recorded one-shot stream (transcript 05), byte for byte. */
const ONE_SHOT = [
  ": connected",
  "",
  "id: 1",
  ": bridge-metadata",
  "",
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"codex/default","choices":[{"index":0,"delta":{"content":"echo: "},"finish_reason":null}]}',
  "id: 2",
  "",
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"codex/default","choices":[{"index":0,"delta":{"content":"hello "},"finish_reason":null}]}',
  "id: 3",
  "",
  'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"codex/default","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":17,"completion_tokens":23,"total_tokens":40,"cost_known":false}}',
  "id: 4",
  "",
  "data: [DONE]",
  "",
  "",
].join("\n");

async function frames(text: string): Promise<SseFrame[]> {
  const out: SseFrame[] = [];
  for await (const f of readSseFrames(new Response(text).body!)) out.push(f);
  return out;
}

async function readChunks(text: string): Promise<{ stream: ChunkStream; events: ProviderEvent[] }> {
  const stream = new ChunkStream("run-1");
  const events: ProviderEvent[] = [];
  for (const f of await frames(text)) {
    if (f.data === undefined) continue;
    const e = stream.read({ ...f, data: f.data });
    if (e) events.push(e);
  }
  return { stream, events };
}

describe("one-shot chunks", () => {
  it("reads data-before-id frames, skips comment frames with ids, keeps whole part texts, and stops at [DONE]", async () => {
    const { stream, events } = await readChunks(ONE_SHOT);
    expect(events).toEqual([
      { kind: "part", upstreamId: "2", part: { id: "run-1:text", type: "text", text: "echo: " }, delta: "echo: " },
      {
        kind: "part",
        upstreamId: "3",
        part: { id: "run-1:text", type: "text", text: "echo: hello " },
        delta: "hello ",
      },
    ]);
    expect(stream.answer).toBe("echo: hello ");
    expect(stream.done).toBe(true);
    // The finish is remembered (provisional), with the usage it carried.
    expect(stream.finish).toEqual({
      upstreamId: "4",
      reason: "stop",
      usage: { mode: "delta", key: "4", provenance: "unknown", counts: { inputTokens: 17, outputTokens: 23 } },
    });
  });

  it("usage-only chunks with empty choices are usage reports; one with only a request count counts requests, not tokens (41)", async () => {
    const text = [
      'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9,"fresh_input_tokens":4,"cache_read_input_tokens":0,"cache_write_input_tokens":0,"cost_known":false}}',
      "id: 7",
      "",
      'data: {"choices":[],"usage":{"model_requests":1,"cost_known":false}}',
      "id: 8",
      "",
      "",
    ].join("\n");
    const { events } = await readChunks(text);
    expect(events).toEqual([
      {
        kind: "usage",
        upstreamId: "7",
        usage: {
          mode: "delta",
          key: "7",
          provenance: "unknown",
          counts: { inputTokens: 4, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        },
      },
      {
        kind: "usage",
        upstreamId: "8",
        usage: { mode: "delta", key: "8", provenance: "unknown", counts: null, modelRequests: 1 },
      },
    ]);
  });

  it("served models are the chunk's provider_models, never its model echo; malformed evidence is refused", async () => {
    const text = [
      'data: {"model":"codex/default","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":5},"provider_models":["gpt-5.4-2026-03-05"]}',
      "id: 7",
      "",
      'data: {"model":"codex/default","choices":[],"provider_model":"gpt-5.4-mini"}',
      "id: 8",
      "",
      'data: {"model":"codex/default","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}',
      "id: 9",
      "",
      'data: {"model":"codex/default","choices":[],"provider_models":[42]}',
      "id: 10",
      "",
      "",
    ].join("\n");
    const { events } = await readChunks(text);
    expect(events.filter((e) => e.kind === "usage").map((e) => e.kind === "usage" && e.usage.servedModels)).toEqual([
      ["gpt-5.4-2026-03-05"],
      ["gpt-5.4-mini"],
      null,
    ]);
    // A chunk with only its `model` (the route's echo) says nothing about what served it.
    expect(events.find((e) => e.upstreamId === "9")).toMatchObject({ kind: "part" });
  });

  it("an error frame is remembered with its type; tool calls become tool parts", async () => {
    const text = [
      'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\\"command\\":\\"ls\\"}"}}]},"finish_reason":null}]}',
      "id: 2",
      "",
      'data: {"error":{"message":"run run-hang-1 was cancelled by the caller","type":"run_cancelled"}}',
      "id: 3",
      "",
      "data: [DONE]",
      "",
      "",
    ].join("\n");
    const { stream, events } = await readChunks(text);
    expect(events).toEqual([
      {
        kind: "part",
        upstreamId: "2",
        part: {
          id: "run-1:tool:0",
          type: "tool",
          tool: "bash",
          state: { status: "completed", input: { command: "ls" } },
        },
      },
    ]);
    expect(stream.error).toEqual({
      upstreamId: "3",
      error: { code: "run_cancelled", message: "run run-hang-1 was cancelled by the caller" },
    });
  });
});

describe("bridge usage", () => {
  it("a measured cost counts; an unknown or estimated one does not; a total cost replaces", () => {
    expect(
      chunkUsage(
        {
          prompt_tokens: 1,
          completion_tokens: 2,
          cost: 0.5,
          cost_known: true,
          cost_provenance: "provider-receipt",
          estimated: false,
        },
        "k",
        0,
      ),
    ).toEqual({
      report: {
        mode: "delta",
        key: "k",
        provenance: "measured",
        costProvenance: "measured",
        counts: { inputTokens: 1, outputTokens: 2, cost: 0.5 },
      },
      costTotal: 0.5,
    });
    // A known cost whose provenance the bridge does not name is counted, of unknown provenance.
    expect(
      chunkUsage({ prompt_tokens: 1, completion_tokens: 2, cost: 0.5, cost_known: true }, "k", 0).report,
    ).toMatchObject({ provenance: "unknown", costProvenance: "unknown" });
    expect(
      chunkUsage({ prompt_tokens: 1, completion_tokens: 2, estimated_cost: 0.5, cost_known: false }, "k", 0).report
        ?.counts,
    ).not.toHaveProperty("cost");
    expect(
      chunkUsage({ prompt_tokens: 1, completion_tokens: 2, cost: 0.5, cost_known: true, estimated: true }, "k", 0)
        .report,
    ).toMatchObject({ provenance: "estimated" });
    expect(
      chunkUsage({ prompt_tokens: 1, completion_tokens: 2, cost: 0.5, cost_known: true, estimated: true }, "k", 0)
        .report?.counts,
    ).not.toHaveProperty("cost");
    const total = chunkUsage(
      { prompt_tokens: 1, completion_tokens: 1, cost: 0.9, cost_known: true, cost_scope: "total" },
      "k2",
      0.5,
    );
    expect(total.report?.counts?.cost).toBeCloseTo(0.4);
    expect(total.costTotal).toBe(0.9);
  });

  it("request counts count only when exact and not estimated (agent-provider-cli-bridge: 'Usage events … include modelRequests only when …')", () => {
    expect(chunkUsage({ model_requests: 2, cost_known: false }, "k", 0).report).toEqual({
      mode: "delta",
      key: "k",
      provenance: "unknown",
      counts: null,
      modelRequests: 2,
    });
    expect(chunkUsage({ model_requests: 2, estimated: true }, "k", 0).report).toMatchObject({
      counts: null,
      modelRequests: null,
    });
    expect(chunkUsage({ model_requests: 1.5 }, "k", 0).report).toMatchObject({ modelRequests: null });
    expect(chunkUsage({ prompt_tokens: 1, completion_tokens: 1, model_requests: -1 }, "k", 0).report).toMatchObject({
      counts: { inputTokens: 1 },
      modelRequests: null,
    });
    expect(chunkUsage({ cost_known: false }, "k", 0).report).toBeNull();
  });

  it("a retained run's native usage record never certifies itself as measured (agent-provider-cli-bridge: 'nested native … records cannot assert host observation authority')", () => {
    expect(envelopeUsage({ inputTokens: 4, outputTokens: 3, estimated: false }, "e")).toMatchObject({
      provenance: "unknown",
    });
    expect(envelopeUsage({ inputTokens: 4, outputTokens: 3, estimated: true }, "e")).toMatchObject({
      provenance: "estimated",
    });
  });

  it("an invalid count is a problem; cache writes are cache creation", () => {
    expect(chunkUsage({ prompt_tokens: -1, completion_tokens: 2 }, "k", 0).report).toMatchObject({
      problem: expect.stringContaining("prompt_tokens"),
    });
    expect(
      chunkUsage({ prompt_tokens: 3, completion_tokens: 2, cache_write_input_tokens: 1 }, "k", 0).report?.counts
        ?.cacheCreationInputTokens,
    ).toBe(1);
    expect(envelopeUsage({ inputTokens: 4, outputTokens: 3, cacheReadInputTokens: 0 }, "e")).toEqual({
      mode: "delta",
      key: "e",
      provenance: "unknown",
      counts: { inputTokens: 4, outputTokens: 3, cacheReadInputTokens: 0 },
    });
  });
});

describe("retained envelopes", () => {
  const envelope = (id: number, event: Record<string, unknown>, runId = "ret-run-2") => ({
    id: String(id),
    event: String(event.type),
    data: JSON.stringify({
      runId,
      eventId: `${runId}:${id}`,
      sequence: id,
      cursor: String(id + 11),
      receivedAt: "2026-11-30T19:17:40.103Z",
      event,
    }),
    comments: [],
  });
  const readEnvelope = (frame: ReturnType<typeof envelope>) => new EnvelopeStream("ret-run-2").read(frame);

  it("parts, asks, usage and the provisional end (transcript 25)", () => {
    expect(
      readEnvelope(
        envelope(8, { type: "message.part.updated", part: { id: "p", type: "text", text: "echo: " }, delta: "echo: " }),
      ),
    ).toEqual({
      event: { kind: "part", upstreamId: "8", part: { id: "p", type: "text", text: "echo: " }, delta: "echo: " },
    });
    const request = {
      id: "ret-run-2:interaction:perm-1",
      kind: "permission",
      title: "Permission: bash",
      answerSpec: {
        fields: [
          {
            name: "grant",
            label: "Decision",
            required: true,
            type: "select",
            options: [
              { value: "allow_once", label: "Allow once" },
              { value: "deny", label: "Deny" },
            ],
          },
        ],
      },
      responseScopes: ["interaction"],
      binding: {
        runId: "ret-run-2",
        provider: "cli-bridge",
        environmentId: "cli-bridge",
        sessionId: "ret-sess-1",
        executionId: "ret-exec-2",
        interactionId: "ret-run-2:interaction:perm-1",
      },
      requestDigest: `sha256:${"e".repeat(64)}`,
    };
    expect(readEnvelope(envelope(4, { type: "interaction", request }))).toMatchObject({
      event: { kind: "interaction.requested", upstreamId: "4", request: { id: request.id } },
    });
    expect(
      readEnvelope(
        envelope(11, {
          type: "raw",
          backend: "pi",
          event: { type: "usage", data: {}, usage: { inputTokens: 4, outputTokens: 3 } },
        }),
      ),
    ).toEqual({
      event: {
        kind: "usage",
        upstreamId: "11",
        usage: {
          mode: "delta",
          key: "ret-run-2:11",
          provenance: "unknown",
          counts: { inputTokens: 4, outputTokens: 3 },
        },
      },
    });
    expect(readEnvelope(envelope(12, { type: "model-processing", phase: "generating" }))).toEqual({
      event: {
        kind: "passthrough",
        upstreamId: "12",
        shown: { type: "model-processing", data: { phase: "generating" } },
      },
    });
    expect(readEnvelope(envelope(14, { type: "status", status: "completed" }))).toEqual({
      end: { upstreamId: "14", status: "completed", detail: undefined },
    });
    expect(readEnvelope(envelope(3, { type: "status", status: "started" }))).toMatchObject({
      event: { kind: "passthrough" },
    });
    expect(readEnvelope(envelope(7, { type: "status", status: "cancelled" }))).toEqual({
      end: { upstreamId: "7", status: "cancelled", detail: undefined },
    });
  });

  it("a child-task event (none on the bridge's wire today) is read as the contract says, or is a warning: never relayed unchecked", () => {
    const task = {
      childId: "c1",
      sourceEventId: "c1#1",
      status: "running",
      time: { started: "2026-11-30T19:17:40.103Z", updated: "2026-11-30T19:17:40.103Z" },
    };
    expect(readEnvelope(envelope(15, { type: "child-task", ...task }))).toEqual({
      event: { kind: "child-task", upstreamId: "15", task },
    });
    const { childId: _, ...anonymous } = task;
    expect(readEnvelope(envelope(16, { type: "child-task", ...anonymous }))).toMatchObject({
      event: { kind: "warning", code: "invalid_upstream_frame" },
    });
  });

  it("a retained run's served models are the bridge's own event fields, never the native record's", () => {
    const usage = { inputTokens: 4, outputTokens: 3 };
    expect(
      readEnvelope(
        envelope(11, {
          type: "raw",
          backend: "pi",
          provider_models: ["fake-echo-1"],
          event: { type: "usage", data: {}, usage },
        }),
      ),
    ).toMatchObject({
      event: { kind: "usage", usage: { counts: usage, servedModels: ["fake-echo-1"] } },
    });
    const inner = readEnvelope(
      envelope(11, {
        type: "raw",
        backend: "pi",
        event: {
          type: "usage",
          data: {},
          provider_models: ["claimed"],
          usage: { ...usage, provider_models: ["claimed"] },
        },
      }),
    ) as {
      event: { kind: string; usage?: Record<string, unknown> };
    };
    expect(inner.event.kind).toBe("usage");
    expect(inner.event.usage).not.toHaveProperty("servedModels");
  });

  it("keeps no raw harness frame and no native session id: the permission notice with its grant and nonce is private (transcript 25)", () => {
    const notice = {
      type: "extension_ui_request",
      id: "notify-1",
      method: "notify",
      message: "cli-bridge.permission-applied.v1:82fc6712a55541be84f5ea1437b04623-1:allow_once",
      notifyType: "info",
    };
    expect(readEnvelope(envelope(5, { type: "raw", backend: "pi", event: notice }))).toEqual({
      event: { kind: "private", upstreamId: "5", type: "raw:extension_ui_request" },
    });
    expect(
      readEnvelope(envelope(13, { type: "raw", backend: "pi", event: { type: "agent_end", messages: [] } })),
    ).toEqual({ event: { kind: "private", upstreamId: "13", type: "raw:agent_end" } });
    expect(
      readEnvelope(
        envelope(2, {
          type: "session.updated",
          sessionId: "93edd3c3-31e1-4b4a-8cd0-2cde20933fc2",
          time: { updated: 1 },
        }),
      ),
    ).toEqual({
      event: { kind: "private", upstreamId: "2", type: "session.updated" },
    });
  });

  it("the answer is the text parts' latest whole texts, in order", () => {
    const stream = new EnvelopeStream("ret-run-2");
    stream.read(
      envelope(6, { type: "message.part.updated", part: { id: "tool", type: "tool", state: { status: "running" } } }),
    );
    stream.read(
      envelope(8, { type: "message.part.updated", part: { id: "a", type: "text", text: "echo: " }, delta: "echo: " }),
    );
    stream.read(
      envelope(9, {
        type: "message.part.updated",
        part: { id: "a", type: "text", text: "echo: second" },
        delta: "second",
      }),
    );
    stream.read(
      envelope(10, { type: "message.part.updated", part: { id: "b", type: "text", text: "done" }, delta: "done" }),
    );
    expect(stream.answer).toBe("echo: second\n\ndone");
  });

  it("an envelope of another run is refused, naming both runs; one that is not an envelope is a warning naming it", () => {
    const stream = new EnvelopeStream("ret-run-2");
    expect(
      stream.read(
        envelope(8, { type: "message.part.updated", part: { id: "a", type: "text", text: "x" } }, "ret-run-9"),
      ),
    ).toEqual({
      event: {
        kind: "warning",
        upstreamId: "8",
        code: "invalid_upstream_frame",
        message: "bridge event 8 belongs to run ret-run-9, not to run ret-run-2: refused",
      },
    });
    expect(stream.read(envelope(14, { type: "status", status: "completed" }, "ret-run-9"))).toMatchObject({
      event: { kind: "warning" },
    });
    expect(stream.answer).toBe("");
    expect(readEnvelope({ id: "9", event: "status", data: "{oops", comments: [] })).toMatchObject({
      event: { kind: "warning", code: "invalid_upstream_frame" },
    });
    expect(readEnvelope({ id: "9", event: "status", data: "{}", comments: [] })).toMatchObject({
      event: { kind: "warning", code: "invalid_upstream_frame" },
    });
  });
});

describe("bridge sessions of a conversation", () => {
  it("one family per transport and model route, generations after it; ids of letters, digits and colons", async () => {
    const pi = await sessionFamily("s_abc", "retained", "pi/tangle-router/fake-echo");
    const codex = await sessionFamily("s_abc", "one-shot", "codex/default");
    expect(pi).toMatch(/^s_abc:r[0-9a-f]{12}$/);
    expect(codex).toMatch(/^s_abc:o[0-9a-f]{12}$/);
    expect(await sessionFamily("s_abc", "one-shot", "codex/gpt-5.4")).not.toBe(codex);
    expect(await sessionFamily("s_abc", "retained", "pi/tangle-router/fake-echo")).toBe(pi);
    expect(await sessionFamily("s_abc", "one-shot", "pi/tangle-router/fake-echo")).not.toBe(pi.replace(":r", ":o"));
    expect([sessionOf(pi, 1), sessionOf(pi, 3)]).toEqual([pi, `${pi}:g3`]);
    expect([
      generationIn(pi, pi),
      generationIn(`${pi}:g3`, pi),
      generationIn(`${pi}:g0`, pi),
      generationIn(`${pi}:gx`, pi),
      generationIn(codex, pi),
      generationIn("s_abc", pi),
    ]).toEqual([1, 3, null, null, null, null]);
    expect([
      isConversationSession(pi, "s_abc"),
      isConversationSession(pi, "s_ab"),
      isConversationSession("s_abc.1:r0", "s_abc"),
    ]).toEqual([true, false, false]);
  });
});

describe("run ends from snapshots", () => {
  const ref = {
    runId: "run-1",
    provider: "codex",
    environmentId: "cli-bridge",
    sessionId: "s",
    executionId: "run-1",
    requestDigest: `sha256:${"a".repeat(64)}`,
  } as const;
  const snap = (fields: Record<string, unknown>) => ({
    id: "run-1",
    requestDigest: ref.requestDigest,
    status: "running",
    ...fields,
  });

  it("done, cancelled and error end the run; running does not; unknown (after a bridge restart) is lost, a stop winning", () => {
    expect(runEnd(ref, snap({ status: "done" }))).toEqual({ status: "completed" });
    expect(runEnd(ref, snap({ status: "cancelled" }))).toEqual({ status: "cancelled" });
    expect(runEnd(ref, snap({ status: "error", error: "boom" }))).toEqual({
      status: "failed",
      error: { message: "boom" },
    });
    expect(runEnd(ref, snap({ status: "running" }))).toBeNull();
    expect(runEnd(ref, snap({ status: "unknown", terminal: false }))).toBe(LOST);
    expect(LOST).toMatchObject({ status: "failed", assumed: true, error: { code: "upstream_lost" } });
  });

  it("a snapshot of another run or another request digest is refused, naming it", () => {
    expect(runEnd(ref, snap({ status: "done", id: "run-2" }))).toMatchObject({
      status: "failed",
      assumed: true,
      error: { code: "upstream_mismatch", message: expect.stringContaining("run run-2") },
    });
    expect(runEnd(ref, snap({ status: "done", requestDigest: `sha256:${"b".repeat(64)}` }))).toMatchObject({
      status: "failed",
      error: { code: "upstream_mismatch", message: expect.stringContaining("request digest sha256:bbbb") },
    });
    expect(runEnd(ref, { id: "run-1", status: "done" })).toEqual({ status: "completed" });
  });
});

describe("bridge capability documents", () => {
  const codex = {
    streaming: { live: true, replay: true, detach: true, turnIdempotency: true },
    sessions: { continue: true, list: false, messages: false },
    retainedControl: {
      exactRunIdentity: true,
      resultIdentity: true,
      eventIdentity: true,
      cancellationIdempotency: true,
    },
  };
  const pi = {
    ...codex,
    nativeContinuation: { atomicBoundary: true, requestIdempotency: true },
    interactions: {
      kinds: ["permission"],
      answerFieldTypes: ["select"],
      responseScopes: ["interaction"],
      replay: true,
      responseIdempotency: true,
    },
  };

  it("codex (transcript 04): one-shot runs with exact cancel, and no interactions", () => {
    expect(supportsRetainedSessions(codex)).toBe(false);
    expect(bridgeClaims(codex)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: false,
      interactionKinds: [],
      fork: false,
    });
  });

  it("pi (transcript 20): retained native sessions with permission asks", () => {
    expect(supportsRetainedSessions(pi)).toBe(true);
    expect(bridgeClaims(pi)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: true,
      interactionKinds: ["permission"],
      fork: false,
    });
  });

  it("a missing flag is no claim", () => {
    expect(supportsRetainedSessions({ ...pi, nativeContinuation: { atomicBoundary: true } })).toBe(false);
    expect(bridgeClaims({ ...pi, retainedControl: { ...pi.retainedControl, eventIdentity: false } })).toMatchObject({
      cancelRun: false,
      interactions: false,
    });
    expect(bridgeClaims(null)).toMatchObject({ detach: false, replay: false });
  });
});

describe("the answer command's digest", () => {
  it("matches the digest a real bridge computed (transcript 26: canonical digest of binding and response)", async () => {
    const { canonicalDigest } = await import("../../lib/digest");
    const binding = {
      runId: "ret-run-2",
      provider: "cli-bridge",
      environmentId: "cli-bridge",
      sessionId: "ret-sess-1",
      executionId: "ret-exec-2",
      interactionId: "ret-run-2:interaction:perm-1",
      requestDigest: "sha256:ebde4e44b439d9f6002e267e352983dd7d29c5ccd9610ad6a808f767b31b1594",
    };
    const response = { id: "ret-run-2:interaction:perm-1", outcome: "accepted", data: { grant: ["allow_once"] } };
    expect(await canonicalDigest({ binding, response })).toBe(
      "sha256:5a1c12a11aef5ab08e9c8f17363e82bf619860b8db26ce7ca24019380b2cdb60",
    );
  });
});
