/**
 * Each variant's shape on the wire, read straight from the emulator object (raw SSE text for the
 * stream variants), and that a variant changes only what it names.
 */
import { describe, expect, it } from "vitest";
import { dispatch, emulator, json, fields, rawFrames, readRaw, runningSandbox, runtime, type Emu } from "./test-support";
import { ControlPlaneErrorBody, ExecutionStartedData, SessionStateInner, SidecarErrorBody } from "./wire";

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
      },
    });
    const set = await emu.control("/_emulator/variants", { errorBody: "control-plane", fieldOrder: "data-first" });
    expect(set.status).toBe(200);
    expect((await json(set)).variants).toEqual({ errorBody: "control-plane", fieldOrder: "data-first" });
    const read = await json(await emu.control("/_emulator/variants"));
    expect(read.effective.errorBody).toBe("control-plane");
    expect(read.effective.abort).toBe("wrapped");

    for (const bad of [{ errorBody: "teapot" }, { notAVariant: true }, { connectionEstablished: "yes" }]) {
      const res = await emu.control("/_emulator/variants", bad);
      expect(res.status).toBe(400);
      expect((await json(res)).error.code).toBe("INVALID_VARIANTS");
    }
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({ errorBody: "control-plane", fieldOrder: "data-first" });

    expect((await emu.control("/_emulator/reset", {})).status).toBe(200);
    expect((await json(await emu.control("/_emulator/variants"))).variants).toEqual({});
  });

  it("errorBody: sidecar { error: { code, message } } by default, control plane { error: text, code } when switched", async () => {
    const { emu, id } = await fastSandbox("error-body");
    const sidecar = await emu.api("GET", "/v1/sandboxes/sbx_missing");
    expect(sidecar.status).toBe(404);
    const sidecarBody = await json(sidecar);
    expect(SidecarErrorBody.parse(sidecarBody)).toEqual({ error: { code: "SANDBOX_NOT_FOUND", message: "sandbox not found" } });

    // The details of an invalid cursor sit inside `error` in the sidecar shape...
    const run = await dispatch(emu, id, { executionId: "exe-eb", turnId: "t1" });
    await whole(run);
    const cursor = await emu.api("POST", runtime(id, "/agents/run/stream"), { message: "", sessionId: "s1" }, { "x-execution-id": "exe-eb", "last-event-id": "9999" });
    expect(cursor.status).toBe(409);
    const cursorBody = (await json(cursor)) as { error: Record<string, unknown> };
    expect(cursorBody.error).toMatchObject({ code: "INVALID_CURSOR", firstAvailableEventId: "1" });
    const lastEventId = cursorBody.error.lastEventId as string;
    expect(Number(lastEventId)).toBeGreaterThan(1);

    await setVariants(emu, { errorBody: "control-plane" });
    const plane = await emu.api("GET", "/v1/sandboxes/sbx_missing");
    expect(plane.status).toBe(404);
    expect(ControlPlaneErrorBody.parse(await json(plane))).toEqual({ error: "sandbox not found", code: "SANDBOX_NOT_FOUND" });
    // ...and beside it in the control-plane shape.
    const cursor2 = await emu.api("POST", runtime(id, "/agents/run/stream"), { message: "", sessionId: "s1" }, { "x-execution-id": "exe-eb", "last-event-id": "9999" });
    expect(await json(cursor2)).toEqual({
      error: "cursor 9999 is not in this execution",
      code: "INVALID_CURSOR",
      firstAvailableEventId: "1",
      lastEventId,
    });
    // Auth failures, injected failures and unknown routes of the API take the same shape.
    expect(await json(await emu.fetch("/v1/sandboxes"))).toEqual({ error: "missing or malformed bearer token", code: "UNAUTHORIZED" });
    await emu.control("/_emulator/faults", { failNext: { status: 503, count: 1 } });
    const injected = await emu.api("GET", "/v1/sandboxes");
    expect(injected.status).toBe(503);
    expect(await json(injected)).toEqual({ error: "injected 503", code: "INJECTED_FAILURE" });
    expect((await json(await emu.api("GET", "/v1/nowhere"))).code).toBe("NOT_FOUND");
    // The control routes keep their own shape.
    expect(await json(await emu.control("/_emulator/executions/nope"))).toEqual({ error: { code: "EXECUTION_NOT_FOUND", message: "execution not found" } });
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
    expect(await json(await abort({ executionId: "exe-other" }))).toEqual({ cancelled: false, noopReason: "not_running" });
    expect(await json(await abort({ executionId: "exe-a2" }))).toEqual({ cancelled: true });
    await whole(second);
  });

  it("admission: an execution.started frame by default; a status frame { status: started, executionId, sessionId } when switched", async () => {
    const { emu, id } = await fastSandbox("admission");
    const plain = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-ad1", turnId: "t1" })));
    expect(plain[0]).toEqual(["event: execution.started", "id: 1", `data: {"executionId":"exe-ad1","sessionId":"s1","turnId":"t1"}`]);

    await setVariants(emu, { admission: "status" });
    const text = await whole(await dispatch(emu, id, { executionId: "exe-ad2", turnId: "t2" }));
    expect(text).not.toContain("execution.started");
    const frames = rawFrames(text);
    expect(frames[0]).toEqual(["event: status", "id: 1", `data: {"status":"started","executionId":"exe-ad2","sessionId":"s1"}`]);
    // The rest of the run is unchanged: the script's own frames follow from id 2.
    expect(fields(frames[1]!).id).toBe("2");
    expect(text).toContain("event: result");

    // A dispatch that attaches to the run is admitted the same way, id-less and marked.
    const again = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-ad2", turnId: "t2" })));
    expect(again[0]).toEqual(["event: status", `data: {"status":"started","executionId":"exe-ad2","sessionId":"s1","alreadyExisted":true}`]);
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
      await emu.api("POST", runtime(id, "/agents/run/stream"), { message: "", sessionId: "s1" }, { "x-execution-id": "exe-ce1", "last-event-id": "3" }),
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
    expect(dataFirst[0]).toEqual([`data: {"executionId":"exe-fo2","sessionId":"s1","turnId":"t2"}`, "event: execution.started", "id: 1"]);
  });

  it("dispatchExecutionId: the body's executionId by default; only the X-Execution-ID header when switched, a body executionId refused", async () => {
    const { emu, id } = await fastSandbox("dispatch-id");
    // Default: the body names the run; the header on a dispatch is not read.
    const byBody = rawFrames(await whole(await dispatch(emu, id, { executionId: "exe-body", turnId: "t1" }, { "x-execution-id": "exe-ignored" })));
    expect(JSON.parse(fields(byBody[0]!).data!).executionId).toBe("exe-body");

    await setVariants(emu, { dispatchExecutionId: "header" });
    const refused = await dispatch(emu, id, { executionId: "exe-x", turnId: "t2" });
    expect(refused.status).toBe(400);
    const error = (await json(refused)) as { error: { code: string; message: string } };
    expect(error.error.code).toBe("VALIDATION_ERROR");
    expect(error.error.message).toContain("executionId");
    expect((await json(await emu.control("/_emulator/executions/exe-x"))).error.code).toBe("EXECUTION_NOT_FOUND");

    const byHeader = rawFrames(await whole(await dispatch(emu, id, { turnId: "t3" }, { "x-execution-id": "exe-header" })));
    expect(fields(byHeader[0]!)).toMatchObject({ event: "execution.started", id: "1" });
    expect(JSON.parse(fields(byHeader[0]!).data!)).toEqual({ executionId: "exe-header", sessionId: "s1", turnId: "t3" });
    // The same header again attaches to that run.
    const again = rawFrames(await whole(await dispatch(emu, id, { turnId: "t4" }, { "x-execution-id": "exe-header" })));
    expect(JSON.parse(fields(again[0]!).data!)).toMatchObject({ executionId: "exe-header", alreadyExisted: true });
    // A replay (empty message) still works as before.
    const replay = await whole(
      await emu.api("POST", runtime(id, "/agents/run/stream"), { message: "", sessionId: "s1" }, { "x-execution-id": "exe-header", "last-event-id": "0" }),
    );
    expect(fields(rawFrames(replay)[0]!).id).toBe("1");
  });
});
