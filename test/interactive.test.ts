/**
 * Interactive mode through the public API (docs/api.md#terminals, issue 41): a conversation's agent
 * session opened in the agent's own terminal UI (the emulator's TUI, docs/sandbox-wire.md §12), a
 * turn refused while it holds the session, control fenced by generation, given back to the chat.
 */
import { afterEach, describe, expect, it } from "vitest";
import { api, emulator, json, runTurn, sendTurn, setFaults, tokenFor, uid, upstream, waitForTurn } from "./helpers";
import { openSocket, type as typeLine } from "./terminal-socket";

afterEach(async () => {
  await setFaults({});
});

async function conversation() {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const { sandboxId } = await runTurn(token, cid, "hello");
  return { token, cid, sandboxId };
}

const openInteractive = async (token: string, cid: string) => {
  const res = await api(`/v1/conversations/${cid}/interactive`, { token, body: {} });
  return { status: res.status, body: await json(res) };
};

describe("interactive mode", () => {
  it("drives the session from the agent's own UI; a turn meanwhile is 409; released, the chat goes on", async () => {
    const { token, cid } = await conversation();
    const opened = await openInteractive(token, cid);
    expect(opened.status).toBe(201);
    expect(opened.body.terminal).toMatchObject({ kind: "agent", conversationId: cid, isRunning: true });
    expect(opened.body.generation).toBeGreaterThanOrEqual(1);

    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.interactive).toMatchObject({
      terminalId: opened.body.terminal.terminalId,
      generation: opened.body.generation,
    });
    const refused = await sendTurn(token, cid, uid("turn"), "from the chat");
    expect(refused.status).toBe(409);
    expect((await json(refused)).error.code).toBe("session_interactive");

    const tui = await openSocket(opened.body.url);
    await tui.until((v) => v.output().includes("Agent session"), "the TUI's header");
    typeLine(tui, "hello from the terminal");
    // The scripted agent answers in the TUI: the run is the session's, as a chat turn's would be.
    await tui.until(
      (v) => /hello from the terminal[\s\S]*\r\n.*\S/.test(v.output().split("Agent session")[1] ?? ""),
      "an answer",
    );

    const released = await json(await api(`/v1/conversations/${cid}/interactive`, { token, method: "DELETE" }));
    expect(released).toEqual({ status: "released" });
    await tui.until((v) => v.closed !== null, "the TUI's socket closed");
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).interactive).toBeNull();
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "back in the chat")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    // Released twice: nothing held.
    expect(await json(await api(`/v1/conversations/${cid}/interactive`, { token, method: "DELETE" }))).toEqual({
      status: "not_interactive",
    });
  });

  it("the agent's UI ended in the terminal (/exit) gives the session back: the next turn runs, a new start starts afresh", async () => {
    const { token, cid } = await conversation();
    const opened = await openInteractive(token, cid);
    const tui = await openSocket(opened.body.url);
    await tui.until((v) => v.output().includes("Agent session"), "the TUI's header");
    typeLine(tui, "/exit");
    await tui.until((v) => v.closed !== null, "the TUI's exit");
    expect(tui.frames.find((f) => f.type === "exit")).toMatchObject({ exitCode: 0 });
    const turnId = uid("turn");
    const sent = await sendTurn(token, cid, turnId, "back in the chat");
    expect(sent.status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).interactive).toBeNull();
    const again = await openInteractive(token, cid);
    expect(again.status).toBe(201);
    expect(again.body.status).toBe("attached");
    const next = await openSocket(again.body.url);
    await next.until((v) => v.output().includes("Agent session"), "a new TUI's header");
    next.ws.close();
  });

  it("the conversation's events say when the terminal drives it and when it gives it back", async () => {
    const { token, cid } = await conversation();
    await openInteractive(token, cid);
    await api(`/v1/conversations/${cid}/interactive`, { token, method: "DELETE" });
    const res = await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": "0" } });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("interactive.released")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    expect(text.indexOf("event: interactive.started")).toBeGreaterThan(-1);
    expect(text.indexOf("event: interactive.released")).toBeGreaterThan(text.indexOf("event: interactive.started"));
  });

  it("input from a stale claim is refused by the sandbox: another holder's greater generation fences it", async () => {
    const { token, cid, sandboxId } = await conversation();
    const opened = await openInteractive(token, cid);
    const tui = await openSocket(opened.body.url);
    await tui.until((v) => v.output().includes("Agent session"), "the TUI's header");
    // Another coordinator takes control with a greater generation.
    const sessions = (await emulator(`/_emulator/sandboxes/${sandboxId}/terminals`)).terminals as any[];
    expect(sessions.length).toBeGreaterThan(0);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    const claimed = await upstreamClaim(sandboxId, await agentSessionOf(token, cid), summary.interactive.generation);
    expect(claimed.generation).toBe(summary.interactive.generation + 1);
    typeLine(tui, "x");
    await tui.until(
      (v) => v.frames.some((f) => f.type === "error" && /generation_mismatch/.test(f.message)),
      "the sandbox's refusal, relayed",
    );
    expect(tui.output()).not.toContain("\r\n$ x");
    // A resize from the stale claim is refused the same way.
    const refusals = () => tui.frames.filter((f) => f.type === "error" && /generation_mismatch/.test(f.message)).length;
    const before = refusals();
    tui.send({ type: "resize", cols: 100, rows: 30 });
    await tui.until(() => refusals() > before, "the sandbox's refusal of the resize");
    tui.ws.close();
  });

  it("is refused 501 naming interactiveAgent where the capability document lacks it", async () => {
    await setFaults({ capabilities: { interactiveAgent: false } });
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await runTurn(token, cid, "hello");
    const res = await openInteractive(token, cid);
    expect(res.status).toBe(501);
    expect(res.body.error).toMatchObject({ code: "capability_denied", details: { missing: ["interactiveAgent"] } });
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).interactive).toBeNull();
  });

  it("is refused while a turn runs (session_busy), and deleting the conversation stops the TUI", async () => {
    const { token, cid, sandboxId } = await conversation();
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "[hold] wait here")).status).toBe(202);
    const busy = await openInteractive(token, cid);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe("session_busy");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    await waitForTurn(token, cid, turnId);

    expect((await openInteractive(token, cid)).status).toBe(201);
    const sessionId = await agentSessionOf(token, cid);
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    const status = await upstreamStatus(sandboxId, sessionId);
    expect(status.status).toBe("exited");
    expect((await json(await api("/v1/environment/terminals", { token }))).terminals).toEqual([]);
  });
});

/** The conversation's agent session id upstream, as its last turn's dispatch named it. */
async function agentSessionOf(token: string, cid: string): Promise<string> {
  const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
  const executionId = summary.lastTurn.executionId;
  return (await emulator(`/_emulator/executions/${executionId}`)).sessionId;
}

async function upstreamClaim(sandboxId: string, sessionId: string, expectedGeneration: number) {
  return (
    await upstreamJson("POST", `/v1/sandboxes/${sandboxId}/runtime/agents/sessions/${sessionId}/interactive/control`, {
      operationId: uid("op"),
      holderId: "another-coordinator",
      expectedGeneration,
    })
  ).data;
}

async function upstreamStatus(sandboxId: string, sessionId: string) {
  return (await upstreamJson("GET", `/v1/sandboxes/${sandboxId}/runtime/agents/sessions/${sessionId}/interactive`))
    .data;
}

const upstreamJson = async (method: "GET" | "POST", path: string, body?: unknown) =>
  (await upstream(method, path, body)).json() as Promise<any>;
