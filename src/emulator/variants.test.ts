/**
 * Each variant's shape on the wire, read straight from the emulator object (raw SSE text for the
 * stream variants), and that a variant changes only what it names.
 *
 * Over 400 lines on purpose: one case per variant of src/emulator/variants.ts, in its order, so
 * the list of variants and the proof of each are read side by side.
 */
import { describe, expect, it } from "vitest";
import {
  dispatch,
  type Emu,
  emulator,
  fields,
  json,
  rawFrames,
  readRaw,
  runningSandbox,
  runtime,
} from "./test-support";
import {
  AccountUsageView,
  ControlPlaneErrorBody,
  ExecutionStartedData,
  PromptResultView,
  SandboxListView,
  SandboxView,
  SessionStateInner,
  SidecarErrorBody,
  sseFrame,
} from "./wire";

async function setVariants(emu: Emu, variants: Record<string, unknown>): Promise<void> {
  const res = await emu.control("/_emulator/variants", variants);
  expect(res.status).toBe(200);
  await res.body?.cancel();
}

/** A sandbox whose runs emit every frame at once (frame delay 0). */
async function fastSandbox(label: string): Promise<{ emu: Emu; id: string }> {
  const emu = emulator(label);
  expect((await emu.control("/_emulator/faults", { frameDelayMs: 0 })).status).toBe(200);
  return { emu, id: await runningSandbox(emu) };
}

/** Reads a whole run stream (it ends with the run). */
const whole = (res: Response) => readRaw(res);

describe("the emulator's variants", () => {
  it("GET answers the variants set and those in force; a strict schema refuses unknown names and values; reset clears them", async () => {
    const emu = emulator("variants-get");
    const initial = await json(await emu.control("/_emulator/variants"));
    expect(initial).toEqual({
      variants: {},
      effective: {
        errorBody: "sidecar",
        sessionState: "wrapped",
        abort: "wrapped",
        admission: "execution.started",
        executionStartedSessionId: true,
        connectionEstablished: false,
        fieldOrder: "id-first",
        dispatchExecutionId: "body",
        terminal: "result+done",
        resultRoute: "available",
        forkRoute: "available",
        readiness: "enum",
        readinessUnknownPolls: 2,
        permissionScopes: "legacy",
        permissionAnswer: "grant",
        backendModel: "string",
        interactionsAt: "top",
        planDecision: "interaction",
        waitSignal: "interaction",
        answerRoute: "ok",
        answeredAsk: "already-resolved",
        runControlRef: "optional",
        dispatched: "absent",
        createReplay: "200",
        stoppedRuns: "end",
        sandboxLifecycle: "full",
        accountUsage: "served",
        catalog: "backends",
        childTask: "frame",
        workspace: "served",
        snapshotIdempotency: "echoed",
        snapshotDelete: "outcome",
        restore: "outcome",
        uploadMaxBytes: 10 * 1024 * 1024,
        terminalRoutes: "served",
        terminalFrames: "binary",
        terminalRetainedBytes: 64 * 1024,
        terminalDetachMs: 60_000,
        terminalMetadata: "full",
        terminalReady: "full",
      },
    });
    const set = await emu.control("/_emulator/variants", { errorBody: "control-plane", fieldOrder: "data-first" });
    expect(set.status).toBe(200);
    expect((await json(set)).variants).toEqual({ errorBody: "control-plane", fieldOrder: "data-first" });
    const read = await json(await emu.control("/_emulator/variants"));
    expect(read.effective.errorBody).toBe("control-plane");
    expect(read.effective.abort).toBe("wrapped");

    for (const bad of [
      { errorBody: "teapot" },
      { notAVariant: true },
      { connectionEstablished: "yes" },
      { terminal: "maybe" },
      { readinessUnknownPolls: 0 },
    ]) {
      const res = await emu.control("/_emulator/variants", bad);
      expect(res.status).toBe(400);
      expect((await json(res)).error.code).toBe("INVALID_VARIANTS");
    }
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({
      errorBody: "control-plane",
      fieldOrder: "data-first",
    });

    expect((await emu.control("/_emulator/reset", {})).status).toBe(200);
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({});
  });

  it("errorBody: sidecar { error: { code, message } } by default, control plane { error: text, code } when switched", async () => {
    const { emu, id } = await fastSandbox("error-body");
    const sidecar = await emu.api("GET", "/v1/sandboxes/sbx_missing");
    expect(sidecar.status).toBe(404);
    const sidecarBody = await json(sidecar);
    expect(SidecarErrorBody.parse(sidecarBody)).toEqual({
      error: { code: "SANDBOX_NOT_FOUND", message: "sandbox not found" },
    });

    // The details of an invalid cursor sit inside `error` in the sidecar shape...
    const run = await dispatch(emu, id, { executionId: "exe-eb", turnId: "t1" });
    await whole(run);
    const cursor = await emu.api(
      "POST",
      runtime(id, "/agents/run/stream"),
      { message: "", sessionId: "s1" },
      { "x-execution-id": "exe-eb", "last-event-id": "9999" },
    );
    expect(cursor.status).toBe(409);
    const cursorBody = (await json(cursor)) as { error: Record<string, unknown> };
    expect(cursorBody.error).toMatchObject({ code: "INVALID_CURSOR", firstAvailableEventId: "1" });
    const lastEventId = cursorBody.error.lastEventId as string;
    expect(Number(lastEventId)).toBeGreaterThan(1);

    await setVariants(emu, { errorBody: "control-plane" });
    const plane = await emu.api("GET", "/v1/sandboxes/sbx_missing");
    expect(plane.status).toBe(404);
    expect(ControlPlaneErrorBody.parse(await json(plane))).toEqual({
      error: "sandbox not found",
      code: "SANDBOX_NOT_FOUND",
    });
    // ...and beside it in the control-plane shape.
    const cursor2 = await emu.api(
      "POST",
      runtime(id, "/agents/run/stream"),
      { message: "", sessionId: "s1" },
      { "x-execution-id": "exe-eb", "last-event-id": "9999" },
    );
    expect(await json(cursor2)).toEqual({
      error: "cursor 9999 is not in this execution",
      code: "INVALID_CURSOR",
      firstAvailableEventId: "1",
      lastEventId,
    });
    // Auth failures, injected failures and unknown routes of the API take the same shape.
    expect(await json(await emu.fetch("/v1/sandboxes"))).toEqual({
      error: "missing or malformed bearer token",
      code: "UNAUTHORIZED",
    });
    await emu.control("/_emulator/faults", { failNext: { status: 503, count: 1 } });
    const injected = await emu.api("GET", "/v1/sandboxes");
    expect(injected.status).toBe(503);
    expect(await json(injected)).toEqual({ error: "injected 503", code: "INJECTED_FAILURE" });
    expect((await json(await emu.api("GET", "/v1/nowhere"))).code).toBe("NOT_FOUND");
    // The control routes keep their own shape.
    expect(await json(await emu.control("/_emulator/executions/nope"))).toEqual({
      error: { code: "EXECUTION_NOT_FOUND", message: "execution not found" },
    });
  });

  it("sessionState: { data: { session } } by default, the inner object flat when switched", async () => {
    const { emu, id } = await fastSandbox("session-state");
    await whole(await dispatch(emu, id, { executionId: "exe-ss", turnId: "t1" }));
    const wrapped = await json(await emu.api("GET", runtime(id, "/agents/sessions/s1")));
    expect(wrapped).toEqual({ data: { session: { state: "idle", latestExecutionId: "exe-ss" } } });

    await setVariants(emu, { sessionState: "flat" });
    const flat = await json(await emu.api("GET", runtime(id, "/agents/sessions/s1")));
    expect(SessionStateInner.parse(flat)).toEqual({ state: "idle", latestExecutionId: "exe-ss" });
    expect(flat).toEqual({ state: "idle", latestExecutionId: "exe-ss" });
  });

  it("abort: { data: { cancelled, reason? } } by default; flat { cancelled, noopReason? } when switched", async () => {
    const emu = emulator("abort");
    const id = await runningSandbox(emu);
    const abort = (body: unknown) => emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), body);

    // A slow run (default frame delay), aborted while it runs.
    const first = await dispatch(emu, id, { message: "hello [slow]", executionId: "exe-a1", turnId: "t1" });
    const cancelled = await abort({ executionId: "exe-a1" });
    expect(await json(cancelled)).toEqual({ data: { cancelled: true } });
    expect(await json(await abort({}))).toEqual({ data: { cancelled: false, reason: "not_running" } });
    await whole(first);

    await setVariants(emu, { abort: "flat" });
    const second = await dispatch(emu, id, { message: "hello [slow]", executionId: "exe-a2", turnId: "t2" });
    // Naming another execution cancels nothing.
    expect(await json(await abort({ executionId: "exe-other" }))).toEqual({
      cancelled: false,
      noopReason: "not_running",
    });
    expect(await json(await abort({ executionId: "exe-a2" }))).toEqual({ cancelled: true });
    await whole(second);
  });

  it("admission: an execution.started frame by default; a status frame { status: started, executionId, sessionId } when switched", async () => {
    const { emu, id } = await fastSandbox("admission");
    const plain = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-ad1", turnId: "t1" })));
    expect(plain[0]).toEqual([
      "event: execution.started",
      "id: 1",
      `data: {"executionId":"exe-ad1","sessionId":"s1","turnId":"t1"}`,
    ]);

    await setVariants(emu, { admission: "status" });
    const text = await whole(await dispatch(emu, id, { executionId: "exe-ad2", turnId: "t2" }));
    expect(text).not.toContain("execution.started");
    const frames = rawFrames(text);
    expect(frames[0]).toEqual([
      "event: status",
      "id: 1",
      `data: {"status":"started","executionId":"exe-ad2","sessionId":"s1"}`,
    ]);
    // The rest of the run is unchanged: the script's own frames follow from id 2.
    expect(fields(frames[1]!).id).toBe("2");
    expect(text).toContain("event: result");

    // A dispatch that attaches to the run is admitted the same way, id-less and marked.
    const again = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-ad2", turnId: "t2" })));
    expect(again[0]).toEqual([
      "event: status",
      `data: {"status":"started","executionId":"exe-ad2","sessionId":"s1","alreadyExisted":true}`,
    ]);
  });

  it("executionStartedSessionId: execution.started names the session by default, and omits it when switched off", async () => {
    const { emu, id } = await fastSandbox("started-session");
    await setVariants(emu, { executionStartedSessionId: false });
    const frames = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-sid", turnId: "t1" })));
    const first = fields(frames[0]!);
    expect(first.event).toBe("execution.started");
    const data = ExecutionStartedData.parse(JSON.parse(first.data!));
    expect(data).toEqual({ executionId: "exe-sid", turnId: "t1" });
    // Only the admission changes: the receipt still names the session.
    const result = frames.map(fields).find((f) => f.event === "result")!;
    expect(JSON.parse(result.data!).sessionId).toBe("s1");
  });

  it("connectionEstablished: every run stream (dispatch, attach, replay) begins with an id-less connection.established {}", async () => {
    const { emu, id } = await fastSandbox("connection");
    const plain = await whole(await dispatch(emu, id, { executionId: "exe-ce0", turnId: "t0" }));
    expect(plain).not.toContain("connection.established");

    await setVariants(emu, { connectionEstablished: true });
    const head = "event: connection.established\ndata: {}\n\n";
    const dispatched = await whole(await dispatch(emu, id, { executionId: "exe-ce1", turnId: "t1" }));
    expect(dispatched.startsWith(`${head}event: execution.started\nid: 1\n`)).toBe(true);
    expect(dispatched.split("connection.established").length).toBe(2);

    const attached = await whole(await dispatch(emu, id, { executionId: "exe-ce1", turnId: "t1" }));
    expect(attached.startsWith(`${head}event: execution.started\ndata: `)).toBe(true);

    const replay = await whole(
      await emu.api(
        "POST",
        runtime(id, "/agents/run/stream"),
        { message: "", sessionId: "s1" },
        { "x-execution-id": "exe-ce1", "last-event-id": "3" },
      ),
    );
    expect(replay.startsWith(`${head}event: `)).toBe(true);
    expect(fields(rawFrames(replay)[1]!).id).toBe("4");
  });

  it("fieldOrder: event, id, data by default; data first when switched", async () => {
    const { emu, id } = await fastSandbox("field-order");
    const idFirst = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-fo1", turnId: "t1" })));
    for (const frame of idFirst) {
      expect(frame.map((l) => l.slice(0, l.indexOf(":")))).toEqual(["event", "id", "data"]);
    }

    await setVariants(emu, { fieldOrder: "data-first" });
    const text = await whole(await dispatch(emu, id, { executionId: "exe-fo2", turnId: "t2" }));
    const dataFirst = rawFrames(text);
    expect(dataFirst.length).toBe(idFirst.length);
    for (const frame of dataFirst) {
      expect(frame[0]!.startsWith("data: ")).toBe(true);
      expect(frame.map((l) => l.slice(0, l.indexOf(":"))).sort()).toEqual(["data", "event", "id"]);
    }
    expect(dataFirst[0]).toEqual([
      `data: {"executionId":"exe-fo2","sessionId":"s1","turnId":"t2"}`,
      "event: execution.started",
      "id: 1",
    ]);
  });

  it("sseFrame: data of several lines (any line break) goes as one data: line each, one line as it is, in either order", () => {
    const frame = { event: "x", id: 7, data: "a\r\nb\rc\nd" };
    expect(sseFrame(frame, "id-first")).toBe("event: x\nid: 7\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
    expect(sseFrame(frame, "data-first")).toBe("data: a\ndata: b\ndata: c\ndata: d\nevent: x\nid: 7\n\n");
    expect(sseFrame({ event: "y", data: '{"text":"one line"}' }, "id-first")).toBe(
      'event: y\ndata: {"text":"one line"}\n\n',
    );
    expect(sseFrame({ event: "y", data: "ends\r" }, "id-first")).toBe("event: y\ndata: ends\ndata: \n\n");
  });

  it("dispatchExecutionId: the body's executionId by default (the header may repeat it, not contradict it); only the X-Execution-ID header when switched", async () => {
    const { emu, id } = await fastSandbox("dispatch-id");
    // Default: the body names the run, and the header may name the same run too.
    const both = rawFrames(
      await whole(await dispatch(emu, id, { executionId: "exe-body", turnId: "t1" }, { "x-execution-id": "exe-body" })),
    );
    expect(JSON.parse(fields(both[0]!).data!).executionId).toBe("exe-body");
    // The two naming different runs is refused, and starts nothing.
    const contradict = await dispatch(
      emu,
      id,
      { executionId: "exe-b2", turnId: "t1b" },
      { "x-execution-id": "exe-h2" },
    );
    expect(contradict.status).toBe(400);
    const contradiction = (await json(contradict)).error as { code: string; message: string };
    expect(contradiction.code).toBe("VALIDATION_ERROR");
    expect(contradiction.message).toContain("X-Execution-ID");
    for (const exe of ["exe-b2", "exe-h2"])
      expect((await emu.control(`/_emulator/executions/${exe}`)).status).toBe(404);
    // The body alone, or the header alone, names it.
    const bodyOnly = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-body-only", turnId: "t1c" })));
    expect(JSON.parse(fields(bodyOnly[0]!).data!).executionId).toBe("exe-body-only");
    const headerOnly = rawFrames(
      await whole(await dispatch(emu, id, { turnId: "t1d" }, { "x-execution-id": "exe-header-only" })),
    );
    expect(JSON.parse(fields(headerOnly[0]!).data!).executionId).toBe("exe-header-only");

    await setVariants(emu, { dispatchExecutionId: "header" });
    const refused = await dispatch(emu, id, { executionId: "exe-x", turnId: "t2" });
    expect(refused.status).toBe(400);
    const error = (await json(refused)) as { error: { code: string; message: string } };
    expect(error.error.code).toBe("VALIDATION_ERROR");
    expect(error.error.message).toContain("executionId");
    expect((await json(await emu.control("/_emulator/executions/exe-x"))).error.code).toBe("EXECUTION_NOT_FOUND");

    const byHeader = rawFrames(
      await whole(await dispatch(emu, id, { turnId: "t3" }, { "x-execution-id": "exe-header" })),
    );
    expect(fields(byHeader[0]!)).toMatchObject({ event: "execution.started", id: "1" });
    expect(JSON.parse(fields(byHeader[0]!).data!)).toEqual({
      executionId: "exe-header",
      sessionId: "s1",
      turnId: "t3",
    });
    // The same header again attaches to that run.
    const again = rawFrames(await whole(await dispatch(emu, id, { turnId: "t4" }, { "x-execution-id": "exe-header" })));
    expect(JSON.parse(fields(again[0]!).data!)).toMatchObject({ executionId: "exe-header", alreadyExisted: true });
    // A replay (empty message) still works as before.
    const replay = await whole(
      await emu.api(
        "POST",
        runtime(id, "/agents/run/stream"),
        { message: "", sessionId: "s1" },
        { "x-execution-id": "exe-header", "last-event-id": "0" },
      ),
    );
    expect(fields(rawFrames(replay)[0]!).id).toBe("1");
  });

  it("terminal: result then done by default (a failure: error); done-only, run-failed and none change only how a run ends on the wire", async () => {
    const { emu, id } = await fastSandbox("terminal");
    const run = async (body: Record<string, unknown>) =>
      rawFrames(await whole(await dispatch(emu, id, body))).map(fields);
    const result = async (exe: string) =>
      PromptResultView.parse(
        await json(await emu.api("GET", runtime(id, `/agents/sessions/s1/executions/${exe}/result`))),
      );
    /** A run stopped at its question, then aborted: its whole stream. */
    const cancelled = async (exe: string, turnId: string) => {
      const stream = await dispatch(emu, id, { message: "hi [ask]", executionId: exe, turnId });
      expect(await json(await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: exe }))).toEqual(
        { data: { cancelled: true } },
      );
      return rawFrames(await whole(stream)).map(fields);
    };
    const events = (frames: Array<Record<string, string>>) => frames.map((f) => f.event);
    const contiguous = (frames: Array<Record<string, string>>) =>
      expect(frames.map((f) => Number(f.id))).toEqual(frames.map((_, i) => i + 1));

    // result+done (default): a success ends with result then done; a failure with error; a cancel with all three.
    const ok = await run({ executionId: "exe-t1", turnId: "t1" });
    expect(events(ok).slice(-3)).toEqual(["status", "result", "done"]);
    const failed = await run({ message: "x [fail]", executionId: "exe-t2", turnId: "t2" });
    expect(failed.at(-1)!.event).toBe("error");
    expect(JSON.parse(failed.at(-1)!.data!)).toEqual({
      message: "The agent process exited unexpectedly (scripted failure).",
      code: "AGENT_CRASHED",
    });
    expect(events(await cancelled("exe-t3", "t3")).slice(-3)).toEqual(["status", "result", "done"]);

    // done-only: no result frame; a success ends with done alone, a cancel with status cancelled then done.
    await setVariants(emu, { terminal: "done-only" });
    const doneOnly = await run({ executionId: "exe-t4", turnId: "t4" });
    expect(events(doneOnly)).not.toContain("result");
    expect(events(doneOnly).slice(-2)).toEqual(["status", "done"]);
    expect(JSON.parse(doneOnly.at(-1)!.data!)).toMatchObject({ totalCostUsd: expect.any(Number) });
    contiguous(doneOnly);
    const doneOnlyResult = await result("exe-t4");
    expect(doneOnlyResult).toMatchObject({ success: true, status: "success" });
    expect(doneOnlyResult.response).toContain("Looking into it");
    expect(doneOnlyResult.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
    const doneOnlyCancel = await cancelled("exe-t5", "t5");
    expect(events(doneOnlyCancel)).not.toContain("result");
    expect(doneOnlyCancel.slice(-2).map((f) => [f.event, JSON.parse(f.data!)])).toEqual([
      ["status", { status: "cancelled", detail: "interrupted" }],
      ["done", {}],
    ]);
    expect((await result("exe-t5")).status).toBe("cancelled");
    // A failure still ends with error.
    expect((await run({ message: "x [fail]", executionId: "exe-t6", turnId: "t6" })).at(-1)!.event).toBe("error");

    // run-failed: a failure ends with session.run.failed { error: { message, code } }; a success is unchanged.
    await setVariants(emu, { terminal: "run-failed" });
    const runFailed = await run({ message: "x [fail]", executionId: "exe-t7", turnId: "t7" });
    expect(events(runFailed)).not.toContain("error");
    expect(runFailed.at(-1)!.event).toBe("session.run.failed");
    expect(JSON.parse(runFailed.at(-1)!.data!)).toEqual({
      error: { message: "The agent process exited unexpectedly (scripted failure).", code: "AGENT_CRASHED" },
    });
    expect(await result("exe-t7")).toMatchObject({
      success: false,
      status: "failed",
      error: "The agent process exited unexpectedly (scripted failure).",
    });
    expect(events(await run({ executionId: "exe-t8", turnId: "t8" })).slice(-2)).toEqual(["result", "done"]);

    // none: the stream closes cleanly after the last content frame; the end is in the emulator's state.
    await setVariants(emu, { terminal: "none" });
    const none = await run({ executionId: "exe-t9", turnId: "t9" });
    for (const terminal of ["result", "done", "error", "session.run.failed"])
      expect(events(none)).not.toContain(terminal);
    expect(none.at(-1)!.event).toBe("status");
    contiguous(none);
    const noneResult = await result("exe-t9");
    expect(noneResult).toMatchObject({ success: true, status: "success", executionId: "exe-t9" });
    expect(noneResult.response).toContain("Looking into it");
    expect(await json(await emu.api("GET", runtime(id, "/agents/sessions/s1")))).toEqual({
      data: { session: { state: "idle", latestExecutionId: "exe-t9" } },
    });
    const noneFailed = await run({ message: "x [fail]", executionId: "exe-t10", turnId: "t10" });
    for (const terminal of ["result", "done", "error", "session.run.failed"])
      expect(events(noneFailed)).not.toContain(terminal);
    expect(await result("exe-t10")).toMatchObject({
      success: false,
      status: "failed",
      error: "The agent process exited unexpectedly (scripted failure).",
    });
    // A cancel sends its cancelled status, then the stream closes: no result, no done.
    const noneCancel = await cancelled("exe-t11", "t11");
    expect(noneCancel.at(-1)!.event).toBe("status");
    expect(JSON.parse(noneCancel.at(-1)!.data!)).toEqual({ status: "cancelled", detail: "interrupted" });
    expect((await result("exe-t11")).status).toBe("cancelled");

    // The shape is fixed when a run starts: switching while it waits does not change its ending.
    const waiting = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-t12", turnId: "t12" });
    await setVariants(emu, {});
    await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-t12" });
    const fixed = rawFrames(await whole(waiting)).map(fields);
    expect(events(fixed)).not.toContain("done");
    expect(fixed.at(-1)!.event).toBe("status");
  });

  it("resultRoute: the run-result route by default; 404 NOT_FOUND for every execution when missing", async () => {
    const { emu, id } = await fastSandbox("result-route");
    await whole(await dispatch(emu, id, { executionId: "exe-rr", turnId: "t1" }));
    const path = runtime(id, "/agents/sessions/s1/executions/exe-rr/result");
    expect(PromptResultView.parse(await json(await emu.api("GET", path))).status).toBe("success");

    await setVariants(emu, { resultRoute: "missing" });
    for (const p of [
      path,
      runtime(id, "/agents/sessions/s1/executions/exe-nope/result"),
      runtime("sbx_gone", "/agents/sessions/s1/executions/exe-rr/result"),
    ]) {
      const missing = await emu.api("GET", p);
      expect(missing.status).toBe(404);
      expect(SidecarErrorBody.parse(await json(missing)).error).toEqual({
        code: "NOT_FOUND",
        message: `no route GET ${p}`,
      });
    }
    // Only that route: the session state still tells how the session stands.
    expect((await json(await emu.api("GET", runtime(id, "/agents/sessions/s1")))).data.session).toEqual({
      state: "idle",
      latestExecutionId: "exe-rr",
    });

    await setVariants(emu, {});
    expect((await emu.api("GET", path)).status).toBe(200);
  });

  it("forkRoute: a fork copies a session up to a run under the caller's id, once; missing is 404 NOT_FOUND, not-implemented 501", async () => {
    const { emu, id } = await fastSandbox("fork-route");
    await whole(await dispatch(emu, id, { executionId: "exe-f1", turnId: "t1", message: "one" }));
    await whole(await dispatch(emu, id, { executionId: "exe-f2", turnId: "t2", message: "two" }));
    const path = runtime(id, "/agents/sessions/s1/fork");
    const created = await emu.api("POST", path, { messageId: "exe-f1", sessionId: "s1.b1" });
    expect(created.status).toBe(201);
    expect(await json(created)).toEqual({
      data: { session: { id: "s1.b1", forkedFrom: { sessionId: "s1", messageId: "exe-f1" } } },
    });
    // Again: the same session (200); the id taken by another origin: 409.
    expect((await emu.api("POST", path, { messageId: "exe-f1", sessionId: "s1.b1" })).status).toBe(200);
    expect((await emu.api("POST", path, { messageId: "exe-f2", sessionId: "s1.b1" })).status).toBe(409);
    expect(
      SidecarErrorBody.parse(await json(await emu.api("POST", path, { messageId: "exe-nope", sessionId: "s1.b2" })))
        .error.code,
    ).toBe("MESSAGE_NOT_FOUND");
    expect(
      SidecarErrorBody.parse(
        await json(
          await emu.api("POST", runtime(id, "/agents/sessions/nobody/fork"), { messageId: "exe-f1", sessionId: "x" }),
        ),
      ).error.code,
    ).toBe("SESSION_NOT_FOUND");
    // The fork remembers what it copied: a [recall] run in it names the first message only.
    await whole(
      await dispatch(emu, id, { executionId: "exe-f3", turnId: "t3", sessionId: "s1.b1", message: "three [recall]" }),
    );
    expect(
      PromptResultView.parse(
        await json(await emu.api("GET", runtime(id, "/agents/sessions/s1.b1/executions/exe-f3/result"))),
      ).response,
    ).toContain('Earlier in this session: "one".');

    await setVariants(emu, { forkRoute: "missing" });
    const missing = await emu.api("POST", path, { messageId: "exe-f1", sessionId: "s1.b9" });
    expect(missing.status).toBe(404);
    expect(SidecarErrorBody.parse(await json(missing)).error).toEqual({
      code: "NOT_FOUND",
      message: `no route POST ${path}`,
    });
    await setVariants(emu, { forkRoute: "not-implemented" });
    const notImplemented = await emu.api("POST", path, { messageId: "exe-f1", sessionId: "s1.b9" });
    expect(notImplemented.status).toBe(501);
    expect(SidecarErrorBody.parse(await json(notImplemented)).error.code).toBe("NOT_IMPLEMENTED");
    const counters = (await json(await emu.control("/_emulator/counters"))) as { counters: Record<string, number> };
    expect(counters.counters["sessions.forked"]).toBe(1);
    expect(counters.counters["sessions.forkReplayed"]).toBe(1);
  });

  it('readiness: ready by default; unknown-value reports "warming" for the first N answers that would say ready, then ready (again after a resume)', async () => {
    const emu = emulator("readiness");
    await setVariants(emu, { readiness: "unknown-value", readinessUnknownPolls: 3 });
    const created = await emu.api("POST", "/v1/sandboxes", { name: "warm" });
    const { id } = (await json(created)) as { id: string };
    /** Polls until ready; the readiness each answer showed once the sandbox was running. */
    const pollUntilReady = async () => {
      const seen: string[] = [];
      const deadline = Date.now() + 5_000;
      while (Date.now() < deadline) {
        const sandbox = SandboxView.parse(await json(await emu.api("GET", `/v1/sandboxes/${id}`)));
        if (sandbox.status === "running") seen.push(sandbox.filesystemIncarnationReadiness);
        if (sandbox.filesystemIncarnationReadiness === "ready") return seen;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error(`never ready: ${seen.join(", ")}`);
    };
    expect(await pollUntilReady()).toEqual(["warming", "warming", "warming", "ready"]);
    expect(
      SandboxListView.parse(await json(await emu.api("GET", "/v1/sandboxes"))).sandboxes[0]!
        .filesystemIncarnationReadiness,
    ).toBe("ready");

    // A resumed sandbox's filesystem is a new incarnation: warming again.
    await (await emu.api("POST", `/v1/sandboxes/${id}/stop`)).body?.cancel();
    await (await emu.api("POST", `/v1/sandboxes/${id}/resume`)).body?.cancel();
    expect(await pollUntilReady()).toEqual(["warming", "warming", "warming", "ready"]);

    // The default: the doc's enum only; N defaults to 2.
    await setVariants(emu, {});
    await (await emu.api("POST", `/v1/sandboxes/${id}/stop`)).body?.cancel();
    await (await emu.api("POST", `/v1/sandboxes/${id}/resume`)).body?.cancel();
    expect(await pollUntilReady()).toEqual(["ready"]);
    await setVariants(emu, { readiness: "unknown-value" });
    await (await emu.api("POST", `/v1/sandboxes/${id}/stop`)).body?.cancel();
    await (await emu.api("POST", `/v1/sandboxes/${id}/resume`)).body?.cancel();
    expect(await pollUntilReady()).toEqual(["warming", "warming", "ready"]);
  });

  it("permissionScopes: a permission ask offers [once, session] by default; the contract's [interaction, session, persistent] when switched", async () => {
    const { emu, id } = await fastSandbox("scopes");
    const scopes = async (exe: string, turnId: string) => {
      const text = await readRaw(
        await dispatch(emu, id, { message: "run them [permission]", executionId: exe, turnId }),
        (t) => t.includes("event: interaction"),
      );
      await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: exe });
      const frame = rawFrames(text)
        .map(fields)
        .find((f) => f.event === "interaction")!;
      const request = JSON.parse(frame.data!).request as { kind: string; responseScopes: string[] };
      expect(request.kind).toBe("permission");
      return request.responseScopes;
    };
    expect(await scopes("exe-ps1", "t1")).toEqual(["once", "session"]);
    await setVariants(emu, { permissionScopes: "contract" });
    expect(await scopes("exe-ps2", "t2")).toEqual(["interaction", "session", "persistent"]);
    // The ask the answer route sees is the one the frame carried.
    const stream = await dispatch(emu, id, { message: "run them [permission]", executionId: "exe-ps3", turnId: "t3" });
    await readRaw(stream, (t) => t.includes("event: interaction"));
    const listed = (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data
      .interactions;
    expect(listed.map((a: { responseScopes: string[] }) => a.responseScopes)).toEqual([
      ["interaction", "session", "persistent"],
    ]);
    await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-ps3" });
  });

  it('permissionAnswer: a permission ask answered with a grant by default; in the Sandbox SDK\'s { response: "allow" } form when switched', async () => {
    const { emu, id } = await fastSandbox("permission-answer");
    const asked = async (exe: string, turnId: string) => {
      const stream = await dispatch(emu, id, { message: "run them [permission]", executionId: exe, turnId });
      const text = await readRaw(stream, (t) => t.includes("event: interaction"));
      return JSON.parse(
        rawFrames(text)
          .map(fields)
          .find((f) => f.event === "interaction")!.data!,
      ).request as { id: string; answerSpec: { fields: Array<{ name: string; options?: string[] }> } };
    };
    const first = await asked("exe-pa1", "t1");
    expect(first.answerSpec.fields.map((f) => f.name)).toEqual(["grant", "feedback"]);
    await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-pa1" });

    await setVariants(emu, { permissionAnswer: "response" });
    const second = await asked("exe-pa2", "t2");
    expect(second.answerSpec.fields).toEqual([
      { name: "response", type: "select", label: "Allow?", options: ["allow", "deny"], required: true },
    ]);
    // Its own form is required: a grant is not an answer to it.
    const wrong = await emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), {
      id: second.id,
      outcome: "accepted",
      data: { grant: "allow_once" },
    });
    expect(wrong.status).toBe(400);
    expect(
      (
        await emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), {
          id: second.id,
          outcome: "accepted",
          data: { response: "allow" },
        })
      ).status,
    ).toBe(200);
    const run = await whole(await emu.control("/_emulator/executions/exe-pa2/stream"));
    expect(run).toContain("The tests pass (allowed once).");
  });

  it("backendModel: backend.model as a string (or an object) by default; only an object { provider?, model } when switched, a string refused naming backend.model", async () => {
    const { emu, id } = await fastSandbox("backend-model");
    const started = async () => (await json(await emu.control("/_emulator/counters"))).counters["runs.started"] ?? 0;
    await whole(
      await dispatch(emu, id, {
        executionId: "exe-bm1",
        turnId: "t1",
        backend: { type: "opencode", model: "anthropic/claude" },
      }),
    );
    await whole(
      await dispatch(emu, id, {
        executionId: "exe-bm2",
        turnId: "t2",
        backend: { type: "opencode", model: { provider: "anthropic", model: "claude" } },
      }),
    );
    expect(await started()).toBe(2);

    await setVariants(emu, { backendModel: "object" });
    for (const model of ["anthropic/claude", { provider: "anthropic" }]) {
      const refused = await dispatch(emu, id, {
        executionId: "exe-bm3",
        turnId: "t3",
        backend: { type: "opencode", model },
      });
      expect(refused.status).toBe(400);
      const error = SidecarErrorBody.parse(await json(refused)).error;
      expect(error.code).toBe("VALIDATION_ERROR");
      expect(error.message).toContain("backend.model");
    }
    expect(await started()).toBe(2);
    expect((await emu.control("/_emulator/executions/exe-bm3")).status).toBe(404);
    await whole(
      await dispatch(emu, id, {
        executionId: "exe-bm3",
        turnId: "t3",
        backend: { type: "opencode", model: { provider: "anthropic", model: "claude" } },
      }),
    );
    await whole(
      await dispatch(emu, id, {
        executionId: "exe-bm4",
        turnId: "t4",
        backend: { type: "opencode", model: { model: "claude" } },
      }),
    );
    await whole(await dispatch(emu, id, { executionId: "exe-bm5", turnId: "t5", backend: { type: "opencode" } }));
    expect(await started()).toBe(5);
    expect((await json(await emu.control("/_emulator/executions/exe-bm3"))).request.backend).toEqual({
      type: "opencode",
      model: { provider: "anthropic", model: "claude" },
    });
  });

  it("interactionsAt: the posture is read from the top-level interactions by default, only from backend.interactions when switched; both are always accepted", async () => {
    const { emu, id } = await fastSandbox("interactions-at");
    let n = 0;
    /** Whether a question run with this body asks its question (a posture of {} enables none). */
    const asks = async (body: Record<string, unknown>) => {
      n++;
      const exe = `exe-ia${n}`;
      const res = await dispatch(emu, id, { message: "hi [ask]", executionId: exe, turnId: `t${n}`, ...body });
      expect(res.status).toBe(200);
      const text = await readRaw(res, (t) => t.includes("event: interaction") || t.includes("event: done"));
      const asked = text.includes("event: interaction");
      if (asked) await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: exe });
      else expect((await json(await emu.control(`/_emulator/executions/${exe}`))).status).toBe("completed");
      return asked;
    };
    const none = {};
    const questions = { question: true };

    expect(await asks({})).toBe(true);
    expect(await asks({ interactions: none })).toBe(false);
    expect(await asks({ backend: { type: "opencode", interactions: none } })).toBe(true);
    expect(await asks({ interactions: questions, backend: { type: "opencode", interactions: none } })).toBe(true);
    expect(await asks({ interactions: none, backend: { type: "opencode", interactions: questions } })).toBe(false);

    await setVariants(emu, { interactionsAt: "backend" });
    expect(await asks({ backend: { type: "opencode", interactions: none } })).toBe(false);
    expect(await asks({ interactions: none })).toBe(true);
    expect(await asks({ interactions: none, backend: { type: "opencode", interactions: questions } })).toBe(true);
    expect(await asks({ interactions: questions, backend: { type: "opencode", interactions: none } })).toBe(false);
    // The request as received keeps both.
    expect((await json(await emu.control(`/_emulator/executions/exe-ia${n}`))).request).toMatchObject({
      interactions: questions,
      backend: { type: "opencode", interactions: none },
    });
  });

  it("planDecision: a plan waits as an interaction by default; as a status awaiting_plan_decision decided only through plan/approve and plan/reject when switched, and the run goes on exactly the same", async () => {
    /** Waits until an execution's stored frames satisfy `done`. */
    const waitForFrames = async (emu: Emu, exe: string, done: (text: string) => boolean) => {
      await readRaw(await emu.control(`/_emulator/executions/${exe}/stream`), done);
    };
    const count = (text: string, needle: string) => text.split(needle).length - 1;
    const awaiting = `data: {"status":"awaiting_plan_decision"}`;

    // The same run in both variants (same session and execution ids, so the same frames).
    const asInteraction = await fastSandbox("plan-interaction");
    const a = asInteraction;
    const first = await dispatch(a.emu, a.id, { message: "do it [plan]", executionId: "exe-plan", turnId: "t1" });
    const answer = (body: unknown) => a.emu.api("POST", runtime(a.id, "/agents/sessions/s1/interactions"), body);
    await waitForFrames(a.emu, "exe-plan", (t) => count(t, "event: interaction") === 1);
    expect(
      (
        await answer({
          id: "exe-plan:plan-1",
          outcome: "accepted",
          data: { decision: "reject", feedback: "smaller steps" },
        })
      ).status,
    ).toBe(200);
    await waitForFrames(a.emu, "exe-plan", (t) => count(t, "event: interaction") === 2);
    expect((await answer({ id: "exe-plan:plan-2", outcome: "accepted", data: { decision: "approve" } })).status).toBe(
      200,
    );
    const byInteraction = rawFrames(await whole(first)).map(fields);

    const asRoute = await fastSandbox("plan-route");
    const r = asRoute;
    await setVariants(r.emu, { planDecision: "route" });
    const second = await dispatch(r.emu, r.id, { message: "do it [plan]", executionId: "exe-plan", turnId: "t1" });
    await waitForFrames(r.emu, "exe-plan", (t) => count(t, awaiting) === 1);
    // No interaction is offered: none listed, and the plan's ask is not one the answer route knows.
    expect(
      (await json(await r.emu.api("GET", runtime(r.id, "/agents/sessions/s1/interactions")))).data.interactions,
    ).toEqual([]);
    const viaAnswer = await r.emu.api("POST", runtime(r.id, "/agents/sessions/s1/interactions"), {
      id: "exe-plan:plan-1",
      outcome: "accepted",
      data: { decision: "approve" },
    });
    expect(viaAnswer.status).toBe(404);
    expect((await json(viaAnswer)).error.code).toBe("INTERACTION_NOT_FOUND");
    expect(
      (await r.emu.api("POST", runtime(r.id, "/agents/sessions/s1/plan/reject"), { feedback: "smaller steps" })).status,
    ).toBe(200);
    await waitForFrames(r.emu, "exe-plan", (t) => count(t, awaiting) === 2);
    expect(await json(await r.emu.api("POST", runtime(r.id, "/agents/sessions/s1/plan/approve"), {}))).toEqual({
      data: { status: "accepted" },
    });
    const text = await whole(second);
    const byRoute = rawFrames(text).map(fields);
    expect(text).not.toContain("event: interaction");
    expect(count(text, "event: plan.submitted")).toBe(2);
    expect(text).toContain("Plan revision 2 approved.");
    expect(byRoute.at(-1)!.event).toBe("done");
    expect((await r.emu.api("POST", runtime(r.id, "/agents/sessions/s1/plan/approve"), {})).status).toBe(409);

    // Frame for frame the same run, each interaction of kind plan replaced by the status.
    expect(byRoute.length).toBe(byInteraction.length);
    expect(byRoute).toEqual(
      byInteraction.map((f) =>
        f.event === "interaction" ? { ...f, event: "status", data: `{"status":"awaiting_plan_decision"}` } : f,
      ),
    );
  });

  it("waitSignal: an ask arrives as an interaction frame by default; when switched only a status says the run waits (awaiting_question, blocked_on_approval), the ask listed and answered as usual", async () => {
    const run = async (label: string, waitSignal: "interaction" | "status") => {
      const { emu, id } = await fastSandbox(label);
      await setVariants(emu, { waitSignal });
      const exe = `exe-${label}`;
      const stream = await dispatch(emu, id, { message: "set up [ask] [permission]", executionId: exe, turnId: "t1" });
      const answer = (body: unknown) => emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), body);
      const listed = async () =>
        (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data.interactions.map(
          (i: { id: string }) => i.id,
        );
      const waits =
        waitSignal === "status"
          ? ['{"status":"awaiting_question"}', '{"status":"blocked_on_approval"}']
          : [":question-1", ":permission-1"];
      await readRaw(await emu.control(`/_emulator/executions/${exe}/stream`), (t) => t.includes(waits[0]!));
      expect(await listed()).toEqual([`${exe}:question-1`]);
      expect(
        (await answer({ id: `${exe}:question-1`, outcome: "accepted", data: { project: "demo", framework: "vitest" } }))
          .status,
      ).toBe(200);
      await readRaw(await emu.control(`/_emulator/executions/${exe}/stream`), (t) => t.includes(waits[1]!));
      expect(await listed()).toEqual([`${exe}:permission-1`]);
      expect(
        (await answer({ id: `${exe}:permission-1`, outcome: "accepted", data: { grant: "allow_once" } })).status,
      ).toBe(200);
      return rawFrames(await whole(stream)).map(fields);
    };
    const byFrame = await run("wait-1", "interaction");
    const byStatus = await run("wait-2", "status");
    expect(byStatus.some((f) => f.event === "interaction")).toBe(false);
    // Frame for frame the same run (its ids aside), each interaction frame replaced by the status of its wait.
    const statusOf: Record<string, string> = { question: "awaiting_question", permission: "blocked_on_approval" };
    const same = (f: { event?: string; data?: string }) => ({
      event: f.event,
      data: f.data?.replaceAll("wait-1", "wait-2"),
    });
    expect(byStatus.map(same)).toEqual(
      byFrame.map((f) =>
        f.event === "interaction"
          ? { event: "status", data: JSON.stringify({ status: statusOf[JSON.parse(f.data!).request.kind]! }) }
          : same(f),
      ),
    );
  });

  it("answerRoute: the answer route by default; 501 NOT_IMPLEMENTED when switched, and the ask stays outstanding", async () => {
    const { emu, id } = await fastSandbox("answer-route");
    await readRaw(await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-an", turnId: "t1" }), (t) =>
      t.includes("event: interaction"),
    );
    const answer = { id: "exe-an:question-1", outcome: "accepted", data: { project: "demo", framework: "vitest" } };
    const post = () => emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), answer);

    await setVariants(emu, { answerRoute: "not-implemented" });
    const refused = await post();
    expect(refused.status).toBe(501);
    expect(SidecarErrorBody.parse(await json(refused)).error.code).toBe("NOT_IMPLEMENTED");
    // Whatever the body: the route is not there.
    expect((await emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), { nonsense: true })).status).toBe(
      501,
    );
    // Listing still works, and the ask is still waiting.
    expect(
      (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data.interactions.map(
        (i: { id: string }) => i.id,
      ),
    ).toEqual(["exe-an:question-1"]);
    expect((await json(await emu.control("/_emulator/executions/exe-an"))).status).toBe("running");

    await setVariants(emu, {});
    expect(await json(await post())).toEqual({ data: { status: "accepted" } });
  });

  it("answeredAsk: the same answer again is already_resolved_same and another 409 by default; 404 INTERACTION_NOT_FOUND once answered when switched", async () => {
    const { emu, id } = await fastSandbox("answered-ask");
    const accepted = (project: string) => ({ outcome: "accepted", data: { project, framework: "vitest" } });
    const ask = async (session: string, exe: string) => {
      await readRaw(
        await dispatch(emu, id, { message: "hi [ask]", sessionId: session, executionId: exe, turnId: "t1" }),
        (t) => t.includes("event: interaction"),
      );
      return (body: Record<string, unknown>) =>
        emu.api("POST", runtime(id, `/agents/sessions/${session}/interactions`), { id: `${exe}:question-1`, ...body });
    };

    const answer = await ask("s1", "exe-aa1");
    expect(await json(await answer(accepted("demo")))).toEqual({ data: { status: "accepted" } });
    expect(await json(await answer(accepted("demo")))).toEqual({ data: { status: "already_resolved_same" } });
    const other = await answer(accepted("another"));
    expect(other.status).toBe(409);
    expect((await json(other)).error.code).toBe("ALREADY_ANSWERED");

    await setVariants(emu, { answeredAsk: "gone" });
    const again = await ask("s2", "exe-aa2");
    expect(await json(await again(accepted("demo")))).toEqual({ data: { status: "accepted" } });
    for (const body of [accepted("demo"), accepted("another"), { outcome: "declined" }]) {
      const gone = await again(body);
      expect(gone.status).toBe(404);
      expect((await json(gone)).error.code).toBe("INTERACTION_NOT_FOUND");
    }
    // The first session's ask is forgotten too, now that the deployment forgets answered asks.
    expect((await answer(accepted("demo"))).status).toBe(404);
  });

  it("runControlRef: optional by default (when given it must name the requested execution; it is recorded); required when switched", async () => {
    const { emu, id } = await fastSandbox("run-control-ref");
    const ref = (exe: string) => ({
      runId: exe,
      provider: "tangle-sandbox",
      environmentId: id,
      sessionId: "s1",
      executionId: exe,
    });
    const refused = async (res: Response) => {
      expect(res.status).toBe(400);
      const error = SidecarErrorBody.parse(await json(res)).error;
      expect(error.code).toBe("VALIDATION_ERROR");
      expect(error.message).toContain("runControlRef");
    };

    await whole(await dispatch(emu, id, { executionId: "exe-rc1", turnId: "t1" }));
    await whole(await dispatch(emu, id, { executionId: "exe-rc2", turnId: "t2", runControlRef: ref("exe-rc2") }));
    expect((await json(await emu.control("/_emulator/executions/exe-rc2"))).request.runControlRef).toEqual(
      ref("exe-rc2"),
    );
    // Given through the header only, the requested execution is the header's.
    await whole(
      await dispatch(emu, id, { turnId: "t3", runControlRef: ref("exe-rc3") }, { "x-execution-id": "exe-rc3" }),
    );
    expect((await json(await emu.control("/_emulator/executions/exe-rc3"))).request.runControlRef).toEqual(
      ref("exe-rc3"),
    );
    await refused(await dispatch(emu, id, { executionId: "exe-rc4", turnId: "t4", runControlRef: ref("exe-other") }));
    await refused(await dispatch(emu, id, { turnId: "t4", runControlRef: ref("exe-rc4") }));
    expect((await emu.control("/_emulator/executions/exe-rc4")).status).toBe(404);

    await setVariants(emu, { runControlRef: "required" });
    await refused(await dispatch(emu, id, { executionId: "exe-rc5", turnId: "t5" }));
    // Attaching to a run is a dispatch too.
    await refused(await dispatch(emu, id, { executionId: "exe-rc1", turnId: "t1" }));
    await refused(await dispatch(emu, id, { executionId: "exe-rc5", turnId: "t5", runControlRef: ref("exe-rc6") }));
    expect((await emu.control("/_emulator/executions/exe-rc5")).status).toBe(404);
    const started = rawFrames(
      await whole(await dispatch(emu, id, { executionId: "exe-rc5", turnId: "t5", runControlRef: ref("exe-rc5") })),
    ).map(fields);
    expect(JSON.parse(started[0]!.data!)).toMatchObject({ executionId: "exe-rc5" });
    expect(started.at(-1)!.event).toBe("done");
    // A replay (no message) starts nothing and needs no ref.
    const replay = await emu.api(
      "POST",
      runtime(id, "/agents/run/stream"),
      { message: "", sessionId: "s1" },
      { "x-execution-id": "exe-rc5", "last-event-id": "0" },
    );
    expect(replay.status).toBe(200);
    await whole(replay);
  });

  it("dispatched: absent by default (a busy session is 409); the receipt's dispatched and the run's status when switched, a busy session answering its run's admission", async () => {
    const { emu, id } = await fastSandbox("dispatched");
    const admission = async (res: Response) => {
      expect(res.status).toBe(200);
      // Its first frame (a run waiting for its question keeps its stream open).
      const first = fields(rawFrames(await readRaw(res, (text) => text.includes("\n\n")))[0]!);
      expect(first.event).toBe("execution.started");
      return ExecutionStartedData.parse(JSON.parse(first.data!));
    };
    // A run that waits for its question keeps the session busy.
    const waiting = await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-d1", turnId: "t1" });
    expect(await admission(waiting)).toEqual({ executionId: "exe-d1", sessionId: "s1", turnId: "t1" });
    const busy = await dispatch(emu, id, { executionId: "exe-d2", turnId: "t2" });
    expect(busy.status).toBe(409);
    expect(SidecarErrorBody.parse(await json(busy)).error.code).toBe("SESSION_BUSY");

    await setVariants(emu, { dispatched: "receipt" });
    const before = (await json(await emu.control("/_emulator/counters"))).counters as Record<string, number>;
    // Another run in flight on the session: its admission, nothing started, the stream closed.
    expect(await admission(await dispatch(emu, id, { executionId: "exe-d2", turnId: "t2" }))).toEqual({
      executionId: "exe-d1",
      sessionId: "s1",
      turnId: "t1",
      dispatched: false,
      status: "running",
    });
    expect((await emu.control("/_emulator/executions/exe-d2")).status).toBe(404);
    // The same run again: found in flight.
    expect(
      await admission(await dispatch(emu, id, { message: "hi [ask]", executionId: "exe-d1", turnId: "t1" })),
    ).toMatchObject({
      executionId: "exe-d1",
      alreadyExisted: true,
      dispatched: false,
      status: "running",
    });
    const after = (await json(await emu.control("/_emulator/counters"))).counters as Record<string, number>;
    expect(after["runs.started"]).toBe(before["runs.started"]);
    expect(after["runs.notDispatched"]).toBe(1);
    expect(
      await json(await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-d1" })),
    ).toEqual({ data: { cancelled: true } });
    // A run this call starts: dispatched; its turn again once ended: found, with how it ended.
    expect(await admission(await dispatch(emu, id, { executionId: "exe-d3", turnId: "t3" }))).toMatchObject({
      executionId: "exe-d3",
      dispatched: true,
      status: "running",
    });
    for (
      let i = 0;
      i < 200 && (await json(await emu.control("/_emulator/executions/exe-d3"))).status === "running";
      i++
    )
      await new Promise((r) => setTimeout(r, 10));
    expect(await admission(await dispatch(emu, id, { executionId: "exe-d3", turnId: "t3" }))).toMatchObject({
      executionId: "exe-d3",
      alreadyExisted: true,
      dispatched: false,
      status: "completed",
    });
  });

  it("createReplay: a repeated idempotency key answers its sandbox 200 by default (a fresh create 201); 201 either way when switched", async () => {
    const emu = emulator("create-replay");
    const create = (key: string) => emu.api("POST", "/v1/sandboxes", { name: "test", idempotencyKey: key });
    const fresh = await create("k1");
    expect(fresh.status).toBe(201);
    const { id } = SandboxView.parse(await json(fresh));
    const replay = await create("k1");
    expect(replay.status).toBe(200);
    expect(SandboxView.parse(await json(replay)).id).toBe(id);

    await setVariants(emu, { createReplay: "201" });
    const same = await create("k1");
    expect(same.status).toBe(201);
    expect(SandboxView.parse(await json(same)).id).toBe(id);
    const other = await create("k2");
    expect(other.status).toBe(201);
    expect(SandboxView.parse(await json(other)).id).not.toBe(id);
    const counters = (await json(await emu.control("/_emulator/counters"))).counters as Record<string, number>;
    expect(counters).toMatchObject({ "sandboxes.created": 2, "sandboxes.replayed": 2 });
  });
  it("sandboxLifecycle: a sandbox echoes its create's limits and the resources given; only the [wire] times when switched", async () => {
    const emu = emulator("sandbox-lifecycle");
    const created = await emu.api("POST", "/v1/sandboxes", {
      name: "test",
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 3600,
      resources: { memoryMB: 2048 },
    });
    const full = SandboxView.parse(await json(created));
    expect(full).toMatchObject({
      idleTimeoutSeconds: 600,
      maxLifetimeSeconds: 3600,
      resources: { cpuCores: 2, memoryMB: 2048, diskGB: 10 },
    });
    expect(Date.parse(full.expiresAt!) - Date.parse(full.createdAt)).toBe(3600 * 1000);

    await setVariants(emu, { sandboxLifecycle: "wire-only" });
    const wireOnly = SandboxView.parse(await json(await emu.api("GET", `/v1/sandboxes/${full.id}`)));
    expect(wireOnly.expiresAt).toBe(full.expiresAt);
    expect(wireOnly.lastActivityAt).toBeTypeOf("string");
    for (const name of ["idleTimeoutSeconds", "maxLifetimeSeconds", "resources"])
      expect(wireOnly).not.toHaveProperty(name);
  });

  it("accountUsage: the account's usage is served by default; 404 like a deployment without it when switched", async () => {
    const emu = emulator("account-usage");
    await runningSandbox(emu);
    const served = await emu.api("GET", "/v1/account/usage");
    expect(served.status).toBe(200);
    expect(AccountUsageView.parse(await json(served))).toEqual({ activeSandboxes: 1 });

    await setVariants(emu, { accountUsage: "missing" });
    const missing = await emu.api("GET", "/v1/account/usage");
    expect(missing.status).toBe(404);
    expect(SidecarErrorBody.parse(await json(missing)).error.code).toBe("NOT_FOUND");
  });

  it("workspace: every file and snapshot route 404 like a deployment without them, and a create fromSnapshot 400, when switched", async () => {
    const { emu, id } = await fastSandbox("workspace-missing");
    const taken = await json(await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, {}));
    await setVariants(emu, { workspace: "missing" });
    const form = new FormData();
    form.set("file", new File(["x"], "x.txt"));
    form.set("path", "/home/agent/x.txt");
    const calls: Array<[string, string, unknown?]> = [
      ["GET", runtime(id, "/fs/list/home/agent")],
      ["GET", runtime(id, "/fs/stat/home/agent/README.md")],
      ["POST", runtime(id, "/files/read"), { path: "README.md" }],
      ["GET", runtime(id, "/fs/download/home/agent/README.md")],
      ["GET", runtime(id, "/fs/download-dir/home/agent")],
      ["POST", `/v1/sandboxes/${id}/snapshot`, {}],
      ["GET", `/v1/sandboxes/${id}/snapshots`],
      ["DELETE", `/v1/sandboxes/${id}/snapshots/${taken.snapshotId}`],
      ["GET", `/v1/sandboxes/${id}/snapshots/${taken.snapshotId}/diff`],
      ["POST", `/v1/sandboxes/${id}/snapshots/${taken.snapshotId}/restore`, { operationId: "op" }],
    ];
    for (const [method, path, body] of calls) {
      const res = await emu.api(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(SidecarErrorBody.parse(await json(res)).error.code).toBe("NOT_FOUND");
    }
    const upload = await emu.fetch(runtime(id, "/fs/upload"), {
      method: "POST",
      headers: { authorization: "Bearer k" },
      body: form,
    });
    expect(upload.status).toBe(404);
    await upload.body?.cancel();
    expect((await emu.api("POST", "/v1/sandboxes", { fromSnapshot: taken.snapshotId })).status).toBe(400);

    await setVariants(emu, {});
    expect((await emu.api("GET", `/v1/sandboxes/${id}/snapshots`)).status).toBe(200);
  });

  it("snapshotIdempotency: a keyed snapshot's answer carries its idempotency; none when switched (the key still honoured)", async () => {
    const { emu, id } = await fastSandbox("snapshot-idempotency");
    const echoed = await json(await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { idempotencyKey: "a" }));
    expect(echoed.idempotency).toMatchObject({ outcome: "created" });
    await setVariants(emu, { snapshotIdempotency: "absent" });
    const created = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { idempotencyKey: "b" });
    expect(created.status).toBe(201);
    const absent = await json(created);
    expect(absent).not.toHaveProperty("idempotency");
    const replay = await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, { idempotencyKey: "b" });
    expect(replay.status).toBe(200);
    expect(await json(replay)).toEqual(absent);
  });

  it("snapshotDelete: a delete answers its outcome; 204 with no body when switched", async () => {
    const { emu, id } = await fastSandbox("snapshot-delete");
    const a = await json(await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, {}));
    const b = await json(await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, {}));
    expect(await json(await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${a.snapshotId}`))).toEqual({
      snapshotId: a.snapshotId,
      outcome: "deleted",
    });
    await setVariants(emu, { snapshotDelete: "no-content" });
    const gone = await emu.api("DELETE", `/v1/sandboxes/${id}/snapshots/${b.snapshotId}`);
    expect(gone.status).toBe(204);
    expect(await gone.text()).toBe("");
    expect((await json(await emu.api("GET", `/v1/sandboxes/${id}/snapshots`))).snapshots).toEqual([]);
  });

  it("restore: a restore answers its outcome; 200 {} when switched (the files restored all the same)", async () => {
    const { emu, id } = await fastSandbox("restore-outcome");
    const snap = await json(await emu.api("POST", `/v1/sandboxes/${id}/snapshot`, {}));
    await emu.control(`/_emulator/sandboxes/${id}/files`, { path: "README.md", content: "changed" });
    await setVariants(emu, { restore: "no-outcome" });
    const res = await emu.api("POST", `/v1/sandboxes/${id}/snapshots/${snap.snapshotId}/restore`, {
      operationId: "op",
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({});
    const readme = await emu.control(`/_emulator/sandboxes/${id}/files?path=README.md`);
    expect(new TextDecoder().decode(await readme.arrayBuffer())).toContain("# Demo project");
    await setVariants(emu, {});
    const again = await json(
      await emu.api("POST", `/v1/sandboxes/${id}/snapshots/${snap.snapshotId}/restore`, { operationId: "op" }),
    );
    expect(again).toMatchObject({ snapshotId: snap.snapshotId, outcome: "replayed" });
  });

  it("uploadMaxBytes: an upload over the cap is 413 PAYLOAD_TOO_LARGE (10 MiB by default; workspace.test.ts uploads)", async () => {
    const { emu, id } = await fastSandbox("upload-max");
    await setVariants(emu, { uploadMaxBytes: 4 });
    const upload = (bytes: number) => {
      const form = new FormData();
      form.set("file", new File([new Uint8Array(bytes)], "f.bin"));
      form.set("path", "/home/agent/f.bin");
      return emu.fetch(runtime(id, "/fs/upload"), {
        method: "POST",
        headers: { authorization: "Bearer k" },
        body: form,
      });
    };
    const over = await upload(5);
    expect(over.status).toBe(413);
    expect(SidecarErrorBody.parse(await json(over)).error.code).toBe("PAYLOAD_TOO_LARGE");
    const fits = await upload(4);
    expect(fits.status).toBe(200);
    await fits.body?.cancel();
  });
});
