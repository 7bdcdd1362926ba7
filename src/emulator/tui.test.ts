/**
 * The agent's own TUI as the emulator serves it (docs/sandbox-wire.md §12): its routes (start,
 * status, control, stop), its capability group, and its PTY: a prompt run through the runner, an
 * ask answered by its number, generation fencing, `/exit`.
 */
import { describe, expect, it } from "vitest";
import { openTerm } from "./terminal-support";
import { type Emu, fastSandbox, json, runtime } from "./test-support";
import { askChoices } from "./tui";

const tui = (id: string, sid: string, rest = "") => runtime(id, `/agents/sessions/${sid}/interactive${rest}`);
const start = async (emu: Emu, id: string, sid: string, key = "k1") =>
  emu.api("POST", tui(id, sid), { idempotencyKey: key });
const connectionOf = async (emu: Emu, id: string, sid: string) =>
  (await json(await start(emu, id, sid))).data.connectionId;
const claim = async (emu: Emu, id: string, sid: string, operationId: string, expectedGeneration: number) =>
  (await json(await emu.api("POST", tui(id, sid, "/control"), { operationId, holderId: "h1", expectedGeneration })))
    .data;

describe("the agent's TUI routes", () => {
  it("start answers 201 then 200 the same; status, control by compare-and-swap, stop fenced by generation", async () => {
    const { emu, id } = await fastSandbox("tui-routes");
    expect((await emu.api("GET", tui(id, "s1"))).status).toBe(404);
    const first = await start(emu, id, "s1");
    expect(first.status).toBe(201);
    const started = (await json(first)).data;
    expect(started).toEqual({
      sessionId: "s1",
      incarnationId: expect.any(String),
      startedAt: expect.any(String),
      connectionId: expect.any(String),
      streamUrl: `/v1/sidecar-proxy/${id}/terminals/${started.connectionId}/ws`,
    });
    const again = await start(emu, id, "s1");
    expect(again.status).toBe(200);
    expect((await json(again)).data).toEqual(started);
    expect((await json(await emu.api("GET", tui(id, "s1")))).data).toEqual({
      status: "running",
      connectionId: started.connectionId,
      streamUrl: started.streamUrl,
      generation: 0,
    });

    expect(await claim(emu, id, "s1", "op1", 0)).toEqual({ status: "accepted", generation: 1 });
    expect(await claim(emu, id, "s1", "op1", 0)).toEqual({ status: "replayed", generation: 1 });
    expect(await claim(emu, id, "s1", "op2", 0)).toEqual({
      status: "conflict",
      generation: 1,
      conflictReason: "generation_mismatch",
    });
    const reuse = await emu.api("POST", tui(id, "s1", "/control"), {
      operationId: "op1",
      holderId: "h2",
      expectedGeneration: 0,
    });
    expect((await json(reuse)).data).toMatchObject({ status: "conflict", conflictReason: "operation_reuse" });
    expect((await emu.api("POST", tui(id, "s1", "/control"), { operationId: "x" })).status).toBe(400);

    const stale = await emu.api("POST", tui(id, "s1", "/stop"), { generation: 0 });
    expect(stale.status).toBe(409);
    expect((await json(stale)).error.code).toBe("GENERATION_MISMATCH");
    const stopped = await emu.api("POST", tui(id, "s1", "/stop"), { generation: 1 });
    expect((await json(stopped)).data).toEqual({ status: "stopped" });
    expect((await json(await emu.api("GET", tui(id, "s1")))).data).toEqual({
      status: "exited",
      endedAt: expect.any(String),
      reason: "stopped",
    });
  });

  it("a session with a run in flight is busy (409 SESSION_BUSY); terminalRoutes: missing is 404 NOT_FOUND", async () => {
    const { emu, id } = await fastSandbox("tui-busy");
    await emu.api("POST", runtime(id, "/agents/run/stream"), { message: "wait [hold]", sessionId: "s1" });
    const busy = await start(emu, id, "s1");
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("SESSION_BUSY");
    await emu.control("/_emulator/variants", { terminalRoutes: "missing" });
    const missing = await start(emu, id, "s2");
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe("NOT_FOUND");
  });

  it("the capability document claims interactiveAgent in full; the capabilities fault can drop the group", async () => {
    const { emu, id } = await fastSandbox("tui-caps");
    const doc = await json(await emu.api("GET", runtime(id, "/capabilities")));
    expect(doc.interactiveAgent).toEqual({
      start: true,
      status: true,
      attach: true,
      control: true,
      sendPrompt: true,
      stop: true,
    });
    await emu.control("/_emulator/faults", { frameDelayMs: 0, capabilities: { interactiveAgent: false } });
    expect(await json(await emu.api("GET", runtime(id, "/capabilities")))).not.toHaveProperty("interactiveAgent");
  });
});

describe("the agent's TUI on its PTY", () => {
  it("runs a typed prompt through the runner onto the screen, the session's records showing it; /exit is exit code 0", async () => {
    const { emu, id } = await fastSandbox("tui-prompt");
    const cid = await connectionOf(emu, id, "s1");
    const t = await openTerm(emu, id, cid);
    await t.untilOutput("Agent session s1");
    await t.untilOutput("> ");
    t.type("hello there\r");
    await t.untilOutput("hello there\r\n");
    // The run's end brings a new prompt.
    const at = t.output().length;
    await t.until((x) => x.output().indexOf("\r\n> ", at) !== -1, "the prompt after the run");
    const session = (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1")))).data.session;
    expect(session.state).toBe("idle");
    const exe = await json(await emu.control(`/_emulator/executions/${session.latestExecutionId}`));
    expect(exe).toMatchObject({ sessionId: "s1", status: "completed", request: { message: "hello there" } });
    expect(t.output()).toContain(exe.result.response.split("\n")[0].slice(0, 20));

    t.type("/exit\r");
    expect(await t.untilClosed()).toEqual({ code: 1000, reason: "exited" });
    expect(t.frames.at(-1)).toEqual({ type: "exit", exitCode: 0 });
    expect((await json(await emu.api("GET", tui(id, "s1")))).data).toMatchObject({
      status: "exited",
      exitCode: 0,
      reason: "exited",
    });
  });

  it("shows an ask as numbered choices and answers it by its number, as the answer route would", async () => {
    const { emu, id } = await fastSandbox("tui-ask");
    const cid = await connectionOf(emu, id, "s1");
    const t = await openTerm(emu, id, cid);
    await t.untilOutput("> ");
    t.type("run the tests [permission]\r");
    await t.untilOutput("answer #: ");
    expect(t.output()).toContain("? Run the test suite?");
    expect(t.output()).toContain("  1) allow_once\r\n  2) allow_session\r\n  3) deny\r\n  4) Decline");
    const asks = (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data.interactions;
    expect(asks).toHaveLength(1);
    t.type("9\r");
    await t.untilOutput("type a number from 1 to 4");
    t.type("1\r");
    await t.untilOutput("(allow_once)");
    const at = t.output().length;
    await t.until((x) => x.output().indexOf("\r\n> ", at) !== -1, "the prompt after the run");
    expect(
      (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data.interactions,
    ).toEqual([]);
    // The HTTP answer route sees the same record: the same answer again is acknowledged.
    const same = await emu.api("POST", runtime(id, "/agents/sessions/s1/interactions"), {
      id: asks[0].id,
      outcome: "accepted",
      data: { grant: "allow_once" },
    });
    expect((await json(same)).data.status).toBe("already_resolved_same");
    t.ws.close(1000);
  });

  it("fences writes by generation: a socket of a stale generation gets generation_mismatch and its input is dropped", async () => {
    const { emu, id } = await fastSandbox("tui-fence");
    const cid = await connectionOf(emu, id, "s1");
    expect(await claim(emu, id, "s1", "op1", 0)).toMatchObject({ generation: 1 });
    const held = await openTerm(emu, id, cid, "?generation=1");
    await held.untilOutput("> ");
    held.type("a");
    await held.untilOutput("> a");
    expect(await claim(emu, id, "s1", "op2", 1)).toMatchObject({ status: "accepted", generation: 2 });
    const before = held.output();
    held.type("b");
    held.send({ type: "resize", cols: 100, rows: 30 });
    await held.until((x) => x.frames.filter((f) => f.type === "error").length === 2, "two error frames");
    expect(held.frames.filter((f) => f.type === "error")).toEqual([
      { type: "error", message: "generation_mismatch" },
      { type: "error", message: "generation_mismatch" },
    ]);
    expect(held.output()).toBe(before);
    // A stop by the held generation ends the PTY: its socket closes 1001, no exit frame.
    expect((await emu.api("POST", tui(id, "s1", "/stop"), { generation: 2 })).status).toBe(200);
    expect((await held.untilClosed()).code).toBe(1001);
    expect(held.frames.some((f) => f.type === "exit")).toBe(false);
  });

  it("numbers an ask's choices: the first select's options when nothing else is required, then Decline", () => {
    expect(
      askChoices({ id: "a", answerSpec: { fields: [{ name: "grant", type: "select", options: ["yes", "no"] }] } }),
    ).toEqual([
      { label: "yes", outcome: "accepted", data: { grant: "yes" } },
      { label: "no", outcome: "accepted", data: { grant: "no" } },
      { label: "Decline", outcome: "declined" },
    ]);
    const withText = {
      id: "b",
      answerSpec: {
        fields: [
          { name: "project", type: "text", required: true },
          { name: "framework", type: "select", options: ["vitest"] },
        ],
      },
    };
    expect(askChoices(withText)).toEqual([{ label: "Decline", outcome: "declined" }]);
  });
});
