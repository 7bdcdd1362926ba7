/**
 * The control routes take JSON only (a cross-site form or text/plain post must not reset or fault
 * a developer's emulator), the Sandbox API takes exactly the bodies docs/sandbox-wire.md allows,
 * and the faults a turn must survive (a withheld admission, a stalled stream, a sandbox gone).
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EmulatorStore } from "./store";
import {
  dispatch,
  type Emu,
  emulator,
  fields,
  json,
  rawFrames,
  readFor,
  readRaw,
  runningSandbox,
  runtime,
} from "./test-support";
import { CapabilityDocument, PromptResultView, SandboxListView, SandboxView, SidecarErrorBody } from "./wire";

describe("the emulator's control routes", () => {
  it("refuse a POST that is not application/json with 415, before any state changes", async () => {
    const emu = emulator("json-only");
    const sandboxId = await runningSandbox(emu);
    expect((await emu.control("/_emulator/faults", { repeatFrames: true })).status).toBe(200);
    expect((await emu.control("/_emulator/variants", { fieldOrder: "data-first" })).status).toBe(200);
    const before = (await json(await emu.control("/_emulator/counters"))).counters;

    const attempts: Array<[string, Record<string, string>, string]> = [
      ["/_emulator/reset", { "content-type": "application/x-www-form-urlencoded" }, "a=1"],
      ["/_emulator/reset", { "content-type": "text/plain" }, "{}"],
      ["/_emulator/reset", {}, "{}"],
      ["/_emulator/faults", { "content-type": "text/plain;charset=utf-8" }, "{}"],
      ["/_emulator/faults", { "content-type": "multipart/form-data; boundary=x" }, "--x--"],
      ["/_emulator/variants", { "content-type": "application/json-patch+json" }, "{}"],
      ["/_emulator/variants", { "content-type": "application/jsonp" }, "{}"],
      [`/_emulator/sandboxes/${sandboxId}/status`, { "content-type": "text/plain" }, `{"status":"deleted"}`],
    ];
    for (const [path, headers, body] of attempts) {
      const res = await emu.fetch(path, { method: "POST", headers, body });
      expect(res.status, `${path} ${JSON.stringify(headers)}`).toBe(415);
      expect(SidecarErrorBody.parse(await json(res)).error.code).toBe("UNSUPPORTED_MEDIA_TYPE");
    }

    // Nothing changed: the faults, the variants, the sandbox and the counters are as they were.
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({ repeatFrames: true });
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({ fieldOrder: "data-first" });
    const sandbox = await emu.api("GET", `/v1/sandboxes/${sandboxId}`);
    expect(SandboxView.parse(await json(sandbox)).status).toBe("running");
    const after = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(after).toEqual({ ...before, "requests.sandboxes.get": before["requests.sandboxes.get"] + 1 });

    // application/json with parameters is JSON.
    const charset = await emu.fetch("/_emulator/faults", {
      method: "POST",
      headers: { "content-type": "Application/JSON; charset=utf-8" },
      body: "{}",
    });
    expect(charset.status).toBe(200);
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({});
  });

  it("reset takes an empty JSON object and forgets sandboxes, runs, counters, faults and variants", async () => {
    const emu = emulator("reset");
    const sandboxId = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { frameDelayMs: 0 });
    await emu.control("/_emulator/variants", { abort: "flat" });
    await readRaw(await dispatch(emu, sandboxId, { executionId: "exe-r", turnId: "t1" }));

    const notEmpty = await emu.control("/_emulator/reset", { everything: true });
    expect(notEmpty.status).toBe(400);
    expect((await json(notEmpty)).error.code).toBe("INVALID_BODY");
    expect((await emu.control("/_emulator/executions/exe-r")).status).toBe(200);

    const reset = await emu.control("/_emulator/reset", {});
    expect(reset.status).toBe(200);
    expect(await json(reset)).toEqual({ ok: true });
    expect((await emu.control("/_emulator/executions/exe-r")).status).toBe(404);
    expect((await emu.control(`/_emulator/sandboxes/${sandboxId}`)).status).toBe(404);
    expect(await json(await emu.control("/_emulator/counters"))).toEqual({ counters: {}, openStreams: 0 });
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({});
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({});
  });

  it("answer what they hold: an execution, its raw stream, a sandbox; and set a sandbox's status", async () => {
    const emu = emulator("control-reads");
    const sandboxId = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { frameDelayMs: 0 });
    await readRaw(await dispatch(emu, sandboxId, { executionId: "exe-c", turnId: "t1" }));

    expect(await json(await emu.control("/_emulator/executions/exe-c"))).toEqual({
      id: "exe-c",
      sandboxId,
      sessionId: "s1",
      turnId: "t1",
      status: "completed",
      request: { message: "hello", sessionId: "s1", executionId: "exe-c", turnId: "t1" },
      result: expect.objectContaining({ success: true, status: "success", executionId: "exe-c" }),
    });
    const stream = rawFrames(await readRaw(await emu.control("/_emulator/executions/exe-c/stream?after=2")));
    expect(fields(stream[0]!).id).toBe("3");

    // The Sandbox API's answers keep the emulator's own response shapes.
    expect(
      CapabilityDocument.parse(await json(await emu.api("GET", runtime(sandboxId, "/capabilities")))).dispatch,
    ).toEqual({
      runControlRef: true,
      executionIdOnAdmission: true,
    });
    expect(SandboxListView.parse(await json(await emu.api("GET", "/v1/sandboxes"))).sandboxes.map((s) => s.id)).toEqual(
      [sandboxId],
    );
    const result = PromptResultView.parse(
      await json(await emu.api("GET", runtime(sandboxId, "/agents/sessions/s1/executions/exe-c/result"))),
    );
    expect(result).toMatchObject({ success: true, status: "success", executionId: "exe-c" });
    expect(result.response).toContain("Looking into it");

    const sandbox = await json(await emu.control(`/_emulator/sandboxes/${sandboxId}`));
    expect(sandbox).toMatchObject({ id: sandboxId, status: "running", idempotencyKey: null, body: { name: "test" } });
    expect((await emu.control(`/_emulator/sandboxes/${sandboxId}/status`, { status: "paused" })).status).toBe(400);
    expect(await json(await emu.control(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" }))).toEqual({
      ok: true,
    });
    const stopped = await emu.api("GET", runtime(sandboxId, "/capabilities"));
    expect(stopped.status).toBe(409);
    expect((await json(stopped)).error.code).toBe("SANDBOX_NOT_RUNNING");

    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({
      "sandboxes.created": 1,
      "runs.dispatches": 1,
      "runs.started": 1,
      "streams.opened": 2,
      "requests.runtime.run": 1,
    });
    expect((await emu.control("/_emulator/nowhere")).status).toBe(404);
  });

  it("start a run directly on a running sandbox and answer its raw stream, admission to end; refuse a bad body, an unknown or stopped sandbox, a busy session", async () => {
    const emu = emulator("direct-run");
    const sandboxId = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { frameDelayMs: 0 });
    const direct = rawFrames(
      await readRaw(
        await emu.control(`/_emulator/sandboxes/${sandboxId}/runs`, { sessionId: "raw-1", message: "hello [words:5]" }),
      ),
    );
    const ids = direct.map((f) => Number(fields(f).id));
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const admission = JSON.parse(fields(direct[0]!).data!) as { executionId: string; sessionId: string };
    expect(admission.sessionId).toBe("raw-1");
    expect(direct.map((f) => fields(f).event)).toContain("done");
    // The same frames the execution's stored stream replays: the run is an ordinary run.
    expect(
      rawFrames(await readRaw(await emu.control(`/_emulator/executions/${admission.executionId}/stream`))),
    ).toEqual(direct);
    expect((await json(await emu.control(`/_emulator/executions/${admission.executionId}`))).status).toBe("completed");

    const refused: Array<[string, unknown, number, string]> = [
      [`/_emulator/sandboxes/${sandboxId}/runs`, { sessionId: "raw-2" }, 400, "INVALID_RUN"],
      [`/_emulator/sandboxes/${sandboxId}/runs`, { sessionId: "raw-2", message: "hi", extra: 1 }, 400, "INVALID_RUN"],
      ["/_emulator/sandboxes/nope/runs", { sessionId: "raw-2", message: "hi" }, 404, "SANDBOX_NOT_FOUND"],
    ];
    for (const [path, body, status, code] of refused) {
      const res = await emu.control(path, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect((await json(res)).error.code).toBe(code);
    }
    // A session with a run in flight: refused, as the Sandbox API refuses a second dispatch.
    await emu.control("/_emulator/faults", { frameDelayMs: 60_000 });
    const running = await emu.control(`/_emulator/sandboxes/${sandboxId}/runs`, {
      sessionId: "raw-3",
      message: "hello",
    });
    const busy = await emu.control(`/_emulator/sandboxes/${sandboxId}/runs`, { sessionId: "raw-3", message: "again" });
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("SESSION_BUSY");
    await running.body?.cancel();
    await emu.control(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" });
    const stopped = await emu.control(`/_emulator/sandboxes/${sandboxId}/runs`, {
      sessionId: "raw-4",
      message: "hello",
    });
    expect(stopped.status).toBe(409);
    expect((await json(stopped)).error.code).toBe("SANDBOX_NOT_RUNNING");
    expect((await json(await emu.control("/_emulator/counters"))).counters).toMatchObject({ "runs.direct": 2 });
  });
});

describe("the emulator's Sandbox API bodies are strict", () => {
  it("refuses a dispatch with a field the doc does not name, and starts nothing", async () => {
    const emu = emulator("strict-dispatch");
    const sandboxId = await runningSandbox(emu);
    const ref = {
      runId: "exe-strict",
      provider: "tangle-sandbox",
      environmentId: sandboxId,
      sessionId: "s1",
      executionId: "exe-strict",
    };
    for (const extra of [
      { requestDigest: "sha256:00" },
      { backend: { type: "opencode", temperature: 1 } },
      { backend: { type: "opencode", interactions: { question: "yes" } } },
      { parts: [{ type: "image", url: "x" }] },
      { runControlRef: { ...ref, requestDigest: "sha256:00" } },
      { runControlRef: { runId: "exe-strict", executionId: "exe-strict" } },
    ]) {
      const res = await dispatch(emu, sandboxId, { executionId: "exe-strict", turnId: "t1", ...extra });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(SidecarErrorBody.parse(await json(res)).error.code).toBe("VALIDATION_ERROR");
    }
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters["runs.started"]).toBeUndefined();
    expect(counters["runs.dispatches"]).toBeUndefined();
    expect((await emu.control("/_emulator/executions/exe-strict")).status).toBe(404);
  });

  it("refuses an abort body with anything but executionId, a create body or an answer with an unknown field", async () => {
    const emu = emulator("strict-bodies");
    const sandboxId = await runningSandbox(emu);
    const abort = await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"), {
      executionId: "exe-1",
      reason: "user",
    });
    expect(abort.status).toBe(400);
    expect((await json(abort)).error.code).toBe("VALIDATION_ERROR");
    // `{}` and no body at all are the wire's abort.
    expect(await json(await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"), {}))).toEqual({
      data: { cancelled: false, reason: "not_running" },
    });
    expect((await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"))).status).toBe(200);

    const create = await emu.api("POST", "/v1/sandboxes", { name: "x", region: "eu" });
    expect(create.status).toBe(400);
    const answer = await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/interactions"), {
      id: "i",
      outcome: "accepted",
      note: "x",
    });
    expect(answer.status).toBe(400);
    expect((await json(answer)).error.code).toBe("INVALID_INTERACTION_ANSWER");
  });
});

/** Waits until an execution (read through the control route) is no longer running; answers it. */
async function settled(emu: Emu, exe: string): Promise<any> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const row = await json(await emu.control(`/_emulator/executions/${exe}`));
    if (row.status && row.status !== "running") return row;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`${exe} still running`);
}

describe("the emulator's faults", () => {
  it("capabilities and capabilitiesExtra: flags and whole groups removed, fields added or replaced as given", async () => {
    const emu = emulator("capabilities");
    const id = await runningSandbox(emu);
    const doc = async () => json(await emu.api("GET", runtime(id, "/capabilities")));
    const full = await doc();
    expect(Object.keys(full)).toEqual(expect.arrayContaining(["schema", "dispatch", "cancel", "runs", "interactions"]));

    const faults = {
      capabilities: { interactions: false, cancel: { digestBound: false }, runs: { eventReplay: true } },
      capabilitiesExtra: {
        futureGroup: { someFlag: true },
        image: { ref: "next" },
        dispatch: { runControlRef: "yes" },
      },
    } as const;
    expect((await emu.control("/_emulator/faults", faults)).status).toBe(200);
    const served = await doc();
    expect(served).not.toHaveProperty("interactions");
    expect(served.cancel).toEqual({ canonicalRunCancellation: true, idempotent: true });
    expect(served.runs).toEqual(full.runs);
    expect(served).toMatchObject({
      schema: 1,
      futureGroup: { someFlag: true },
      image: { ref: "next" },
      dispatch: { runControlRef: "yes" },
    });
    expect(served.dispatch).not.toHaveProperty("executionIdOnAdmission");

    // A group removed is a whole group only as `false`; anything else of another shape is refused.
    expect((await emu.control("/_emulator/faults", { capabilities: { interactions: true } })).status).toBe(400);
    expect((await emu.control("/_emulator/faults", {})).status).toBe(200);
    expect(await doc()).toEqual(full);
  });

  it("withholdAdmission: the next dispatch starts its run, but its stream stays silent and open; a later dispatch of the same id attaches", async () => {
    const emu = emulator("withhold");
    const id = await runningSandbox(emu);
    expect((await emu.control("/_emulator/faults", { frameDelayMs: 0, withholdAdmission: true })).status).toBe(200);

    const silent = await dispatch(emu, id, { executionId: "exe-w", turnId: "t1" });
    expect(silent.status).toBe(200);
    expect(silent.headers.get("content-type")).toContain("text/event-stream");
    // The run is real: it runs to its end, while the dispatch stream says nothing and stays open.
    const run = await settled(emu, "exe-w");
    expect(run).toMatchObject({ status: "completed", result: { success: true } });
    expect(await readFor(silent, 300)).toEqual({ text: "", ended: false });
    // Consumed: one dispatch only.
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({ frameDelayMs: 0 });

    // A dispatch of the same execution id attaches, admitted as already existing.
    const again = rawFrames(await readRaw(await dispatch(emu, id, { executionId: "exe-w", turnId: "t1" })));
    expect(again[0]).toEqual([
      "event: execution.started",
      `data: {"executionId":"exe-w","sessionId":"s1","turnId":"t1","alreadyExisted":true}`,
    ]);
    // Its stored frames (what a replay gives) are the run's, admission included.
    const replay = rawFrames(await readRaw(await emu.control("/_emulator/executions/exe-w/stream"))).map(fields);
    expect(replay[0]).toMatchObject({ event: "execution.started", id: "1" });
    expect(replay.at(-1)!.event).toBe("done");
    // The next dispatch is admitted as usual.
    const next = rawFrames(await readRaw(await dispatch(emu, id, { executionId: "exe-w2", turnId: "t2" })));
    expect(fields(next[0]!)).toMatchObject({ event: "execution.started", id: "1" });
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({ "runs.started": 2, "runs.attached": 1, "streams.silent": 1 });
  });

  it("withholdAdmission: a silent stream stays open until its reader goes away (or a reset)", async () => {
    const emu = emulator("withhold-reset");
    const id = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { withholdAdmission: true });
    const silent = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-wr", turnId: "t1" });
    expect((await emu.control("/_emulator/reset", {})).status).toBe(200);
    expect(await readFor(silent, 1_000)).toEqual({ text: "", ended: true });
  });

  it("stallStreamMs: the next run stream sends nothing for that long after its first frame, then goes on (and closes after the frames it held)", async () => {
    const emu = emulator("stall");
    const id = await runningSandbox(emu);
    const stallMs = 400;
    expect((await emu.control("/_emulator/faults", { frameDelayMs: 0, stallStreamMs: stallMs })).status).toBe(200);

    const response = await dispatch(emu, id, { executionId: "exe-st", turnId: "t1" });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const chunks: Array<{ at: number; text: string }> = [];
    try {
      while (true) {
        const next = await reader.read();
        if (next.done) break;
        chunks.push({ at: Date.now(), text: decoder.decode(next.value, { stream: true }) });
      }
    } finally {
      await reader.cancel().catch(() => {});
    }
    // The first chunk is the admission alone; nothing else comes for the stall, then everything.
    expect(
      rawFrames(chunks[0]!.text)
        .map(fields)
        .map((f) => f.event),
    ).toEqual(["execution.started"]);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks[1]!.at - chunks[0]!.at).toBeGreaterThanOrEqual(stallMs - 50);
    const frames = rawFrames(chunks.map((c) => c.text).join("")).map(fields);
    expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i + 1));
    expect(frames.at(-1)!.event).toBe("done");
    // The run itself never waited: it ended during the stall.
    expect((await json(await emu.control("/_emulator/executions/exe-st"))).status).toBe("completed");

    // Consumed: the next stream is not stalled.
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({ frameDelayMs: 0 });
    const before = Date.now();
    await readRaw(
      await emu.api(
        "POST",
        runtime(id, "/agents/run/stream"),
        { message: "", sessionId: "s1" },
        { "x-execution-id": "exe-st", "last-event-id": "0" },
      ),
    );
    expect(Date.now() - before).toBeLessThan(stallMs);

    // stallStreams: K stalls the next K streams (here a replay: its first frame is the one after the cursor).
    await emu.control("/_emulator/faults", { stallStreamMs: 200, stallStreams: 2 });
    for (let i = 0; i < 2; i++) {
      const replay = await emu.api(
        "POST",
        runtime(id, "/agents/run/stream"),
        { message: "", sessionId: "s1" },
        { "x-execution-id": "exe-st", "last-event-id": "2" },
      );
      const early = await readFor(replay, 100);
      expect(
        rawFrames(early.text)
          .map(fields)
          .map((f) => f.id),
      ).toEqual(["3"]);
      expect(early.ended).toBe(false);
    }
    expect((await json(await emu.control("/_emulator/faults"))).faults).toEqual({});
    expect((await json(await emu.control("/_emulator/counters"))).counters["streams.stalled"]).toBe(3);
  });

  for (const fate of ["deleted", "failed", "expired"] as const) {
    it(`a sandbox ${fate} mid-run ends its running runs: their streams close with no terminal frame, the run failed naming the fate`, async () => {
      const emu = emulator(`gone-${fate}`);
      const id = await runningSandbox(emu);
      await emu.control("/_emulator/faults", { frameDelayMs: 20 });
      const waiting = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-g1", turnId: "t1" });
      const running = await dispatch(emu, id, {
        message: "hi [slow]",
        sessionId: "s2",
        executionId: "exe-g2",
        turnId: "t1",
      });
      // Both are live: one waits for its answer, the other streams slowly.
      const deadline = Date.now() + 5_000;
      while (
        (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data.interactions.length ===
        0
      ) {
        if (Date.now() > deadline) throw new Error("never asked");
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect((await json(await emu.control("/_emulator/counters"))).openStreams).toBe(2);

      expect(await json(await emu.control(`/_emulator/sandboxes/${id}/status`, { status: fate }))).toEqual({
        ok: true,
      });
      for (const [stream, exe] of [
        [waiting, "exe-g1"],
        [running, "exe-g2"],
      ] as const) {
        const frames = rawFrames(await readRaw(stream)).map(fields);
        expect(frames.length).toBeGreaterThan(0);
        for (const f of frames) expect(["result", "done", "error", "session.run.failed"]).not.toContain(f.event);
        const row = await json(await emu.control(`/_emulator/executions/${exe}`));
        expect(row).toMatchObject({
          status: "failed",
          result: { success: false, status: "failed", error: `sandbox ${fate}` },
        });
      }
      expect((await json(await emu.control("/_emulator/counters"))).openStreams).toBe(0);

      // Later runtime calls answer as the doc says for that status.
      for (const path of ["/agents/sessions/s1", "/agents/sessions/s1/executions/exe-g1/result", "/capabilities"]) {
        const res = await emu.api("GET", runtime(id, path));
        if (fate === "deleted") {
          expect(res.status).toBe(404);
          expect((await json(res)).error.code).toBe("SANDBOX_NOT_FOUND");
        } else {
          expect(res.status).toBe(409);
          expect((await json(res)).error.code).toBe("SANDBOX_NOT_RUNNING");
        }
      }
      const get = await emu.api("GET", `/v1/sandboxes/${id}`);
      if (fate === "deleted") expect(get.status).toBe(404);
      else expect(SandboxView.parse(await json(get)).status).toBe(fate);
    });
  }

  it("a sandbox stopped through the control route answers 409 SANDBOX_NOT_RUNNING; its run's live stream closes and the run ends failed with it", async () => {
    const emu = emulator("stopped-control");
    const id = await runningSandbox(emu);
    const stream = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-sp", turnId: "t1" });
    const live = readRaw(stream);
    await readRaw(await emu.control("/_emulator/executions/exe-sp/stream"), (t) => t.includes("event: interaction"));
    await emu.control(`/_emulator/sandboxes/${id}/status`, { status: "stopped" });
    const res = await emu.api("GET", runtime(id, "/agents/sessions/s1"));
    expect(res.status).toBe(409);
    expect((await json(res)).error.code).toBe("SANDBOX_NOT_RUNNING");
    // The stream ends (readRaw returns before its timeout) with no terminal frame.
    const text = await live;
    expect(text).toContain("event: interaction");
    expect(text).not.toMatch(/event: (result|done)/);
    expect((await json(await emu.control("/_emulator/executions/exe-sp"))).status).toBe("failed");
  });

  it("with variant stoppedRuns survive, the stream closes but the run is kept running", async () => {
    const emu = emulator("stopped-survive");
    await emu.control("/_emulator/variants", { stoppedRuns: "survive" });
    const id = await runningSandbox(emu);
    const stream = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-sv", turnId: "t1" });
    const live = readRaw(stream);
    await readRaw(await emu.control("/_emulator/executions/exe-sv/stream"), (t) => t.includes("event: interaction"));
    await emu.control(`/_emulator/sandboxes/${id}/status`, { status: "stopped" });
    expect(await live).not.toMatch(/event: (result|done)/);
    expect((await json(await emu.control("/_emulator/executions/exe-sv"))).status).toBe("running");
  });
});

describe("the emulator's store", () => {
  it("gives a store an older emulator left behind the newer columns, keeping its rows", async () => {
    const emu = emulator("old-store");
    const id = await runningSandbox(emu);
    const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(emu.name));
    const columns = await runInDurableObject(stub, (_instance, state) => {
      const sql = state.storage.sql;
      // As an older emulator left it: none of the newer columns.
      sql.exec("ALTER TABLE sandboxes DROP COLUMN warming_polls");
      sql.exec("ALTER TABLE executions DROP COLUMN terminal");
      sql.exec("ALTER TABLE asks DROP COLUMN via");
      new EmulatorStore(sql);
      const names = (table: string) => sql.exec(`SELECT * FROM ${table} LIMIT 0`).columnNames;
      return { sandboxes: names("sandboxes"), executions: names("executions"), asks: names("asks") };
    });
    expect(columns.sandboxes).toContain("warming_polls");
    expect(columns.executions).toContain("terminal");
    expect(columns.asks).toContain("via");
    expect(SandboxView.parse(await json(await emu.api("GET", `/v1/sandboxes/${id}`))).status).toBe("running");
  });
});
