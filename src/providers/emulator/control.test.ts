/**
 * The control routes take JSON only (a cross-site form or text/plain post must not reset or fault
 * a developer's emulator), and the Sandbox API takes exactly the bodies docs/sandbox-wire.md allows.
 */
import { describe, expect, it } from "vitest";
import { dispatch, emulator, json, fields, rawFrames, readRaw, runningSandbox, runtime } from "./test-support";
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
    const charset = await emu.fetch("/_emulator/faults", { method: "POST", headers: { "content-type": "Application/JSON; charset=utf-8" }, body: "{}" });
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
    });
    const stream = rawFrames(await readRaw(await emu.control("/_emulator/executions/exe-c/stream?after=2")));
    expect(fields(stream[0]!).id).toBe("3");

    // The Sandbox API's answers keep the emulator's own response shapes.
    expect(CapabilityDocument.parse(await json(await emu.api("GET", runtime(sandboxId, "/capabilities")))).dispatch).toEqual({
      runControlRef: true,
      executionIdOnAdmission: true,
    });
    expect(SandboxListView.parse(await json(await emu.api("GET", "/v1/sandboxes"))).sandboxes.map((s) => s.id)).toEqual([sandboxId]);
    const result = PromptResultView.parse(await json(await emu.api("GET", runtime(sandboxId, "/agents/sessions/s1/executions/exe-c/result"))));
    expect(result).toMatchObject({ success: true, status: "success", executionId: "exe-c" });
    expect(result.response).toContain("Looking into it");

    const sandbox = await json(await emu.control(`/_emulator/sandboxes/${sandboxId}`));
    expect(sandbox).toMatchObject({ id: sandboxId, status: "running", idempotencyKey: null, body: { name: "test" } });
    expect((await emu.control(`/_emulator/sandboxes/${sandboxId}/status`, { status: "paused" })).status).toBe(400);
    expect(await json(await emu.control(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" }))).toEqual({ ok: true });
    const stopped = await emu.api("GET", runtime(sandboxId, "/capabilities"));
    expect(stopped.status).toBe(409);
    expect((await json(stopped)).error.code).toBe("SANDBOX_NOT_RUNNING");

    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({ "sandboxes.created": 1, "runs.dispatches": 1, "runs.started": 1, "streams.opened": 2, "requests.runtime.run": 1 });
    expect((await emu.control("/_emulator/nowhere")).status).toBe(404);
  });
});

describe("the emulator's Sandbox API bodies are strict", () => {
  it("refuses a dispatch with a field the doc does not name, and starts nothing", async () => {
    const emu = emulator("strict-dispatch");
    const sandboxId = await runningSandbox(emu);
    for (const extra of [{ requestDigest: "sha256:00" }, { backend: { type: "opencode", interactions: {} } }, { parts: [{ type: "image", url: "x" }] }]) {
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
    const abort = await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"), { executionId: "exe-1", reason: "user" });
    expect(abort.status).toBe(400);
    expect((await json(abort)).error.code).toBe("VALIDATION_ERROR");
    // `{}` and no body at all are the wire's abort.
    expect(await json(await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"), {}))).toEqual({ data: { cancelled: false, reason: "not_running" } });
    expect((await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/abort"))).status).toBe(200);

    const create = await emu.api("POST", "/v1/sandboxes", { name: "x", region: "eu" });
    expect(create.status).toBe(400);
    const answer = await emu.api("POST", runtime(sandboxId, "/agents/sessions/s1/interactions"), { id: "i", outcome: "accepted", note: "x" });
    expect(answer.status).toBe(400);
    expect((await json(answer)).error.code).toBe("INVALID_INTERACTION_ANSWER");
  });
});
