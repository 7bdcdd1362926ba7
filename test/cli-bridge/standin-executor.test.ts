/**
 * The stand-in's process slots, jail and Pi configuration, as the real bridge's source has them
 * (issue 36; test/cli-bridge/README.md "Process slots"): every CLI holds a slot while its process
 * lives (a retained session's from its first turn until closed), a spawn waits for one and is then
 * refused, a health probe (capability reads, session creates) answers 503 when it finds none, and a
 * retained session's first turn needs the bridge's own fs-jail. Each test in an instance of its
 * own, with short waits set.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uid } from "../helpers";

const ROOT = (env as unknown as Record<string, string>).CLI_BRIDGE_URL!;
const auth = { authorization: "Bearer standin-token" };
const CODEX = "codex/default";
const PI = "pi/tangle-router/fake-echo";

// Bodies read back from the stand-in are checked field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

function instance(settings: Record<string, unknown>) {
  const base = `${ROOT}/i/${uid("executor")}`;
  /** A GET without a body; a POST with one (`null`: a POST with none, the legacy cancel). */
  const call = async (path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { ...auth, ...(body === undefined || body === null ? {} : { "content-type": "application/json" }) },
      body: body === undefined || body === null ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      body: text.startsWith("{") ? (JSON.parse(text) as Json) : undefined,
    };
  };
  const control = async (path: string, body?: unknown) => (await call(`/_standin/${path}`, body)).body;
  const slots = async () => (await call("/health")).body.executor as { in_flight: number; max: number; queued: number };
  /** A one-shot run's whole stream (it ends by itself unless `[hang]`). */
  const chat = async (runId: string, content: string, model = CODEX) =>
    fetch(`${base}/v1/chat/completions`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "x-run-id": runId },
      body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content }] }),
    });
  const ready = control("settings", settings);
  return { call, control, slots, chat, ready };
}

/** Reads an SSE body until `enough` says so (or its end). */
async function readUntil(res: Response, enough: (text: string) => boolean): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!enough(text)) {
    const next = await reader.read();
    if (next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  await reader.cancel().catch(() => undefined);
  return text;
}

describe("process slots (the bridge's host executor)", () => {
  it("a run holds its slot while it runs; with none free a probe answers 503 backend_not_ready and a run's stream ends executor_saturated; the slot comes back when the run ends", async () => {
    const bridge = instance({ maxConcurrency: 1, acquireDeadlineMs: 200, healthProbeTimeoutMs: 150 });
    await bridge.ready;
    const holder = uid("run");
    await readUntil(await bridge.chat(holder, "[hang] hold the slot"), (t) => t.includes("echo: "));
    expect(await bridge.slots()).toMatchObject({ in_flight: 1, max: 1 });

    for (const [path, body, backend] of [
      [`/v1/capabilities?model=${encodeURIComponent(CODEX)}`, undefined, "codex"],
      ["/v1/sessions", { session_id: uid("sess"), model: PI }, "pi"],
    ] as const) {
      const refused = await bridge.call(path, body);
      expect(refused.status, path).toBe(503);
      expect(refused.body).toEqual({
        error: {
          message: `backend "${backend}" is not ready: health probe timed out after 150ms`,
          type: "backend_not_ready",
        },
      });
    }

    // A second run's stream answered 200 at once; its CLI waited for a slot and was refused.
    const second = uid("run");
    const res = await bridge.chat(second, "no room");
    expect(res.status).toBe(200);
    const frames = (await readUntil(res, (t) => t.includes("[DONE]")))
      .split("\n")
      .filter((l) => l.startsWith("data: {"));
    expect(JSON.parse(frames.at(-1)!.slice("data: ".length))).toEqual({
      error: {
        message: "host-executor: acquire timeout after 200ms (in_flight=1/1, queued=0)",
        type: "executor_saturated",
        provider_dispatch: "not_started",
        status: 429,
        capacity: true,
        executor: { name: "host", in_flight: 1, max: 1, queued: 0, deadline_ms: 200 },
      },
    });
    expect((await bridge.call(`/v1/runs/${second}`)).body.status).toBe("error");

    await bridge.call(`/v1/runs/${holder}/cancel?wait_ms=2000`, null);
    expect(await bridge.slots()).toMatchObject({ in_flight: 0 });
    expect((await bridge.call(`/v1/capabilities?model=${encodeURIComponent(CODEX)}`)).status).toBe(200);
  });

  it("a retained session holds its slot from its first turn, idle between turns, until it is closed; its first turn waits for one, then 429 with Retry-After; a close frees one for a waiting turn", async () => {
    const bridge = instance({ maxConcurrency: 2, acquireDeadlineMs: 200 });
    await bridge.ready;
    const [first, second, third] = [uid("sess"), uid("sess"), uid("sess")];
    for (const id of [first, second, third])
      expect((await bridge.call("/v1/sessions", { session_id: id, model: PI })).status).toBe(201);
    // Created, no turn yet: no process, no slot.
    expect(await bridge.slots()).toMatchObject({ in_flight: 0 });
    const run = uid("run");
    expect((await bridge.call(`/v1/sessions/${first}/turns`, { message: "hello", run_id: run })).status).toBe(202);
    await bridge.call(`/v1/runs/${run}?wait_ms=5000`);
    expect(await bridge.slots()).toMatchObject({ in_flight: 1 });

    // One slot left, taken by the second session; the third's first turn waits, then is refused.
    expect((await bridge.call(`/v1/sessions/${second}/turns`, { message: "hello", run_id: uid("run") })).status).toBe(
      202,
    );
    const refused = await bridge.call(`/v1/sessions/${third}/turns`, { message: "hello", run_id: uid("run") });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    expect(refused.body).toEqual({
      error: {
        type: "executor_saturated",
        capacity: true,
        provider_dispatch: "not_started",
        status: 429,
        executor: "host",
        in_flight: 2,
        max: 2,
        queued: 0,
        deadline_ms: 200,
        retry_after_ms: 5000,
        message: "host-executor: acquire timeout after 200ms (in_flight=2/2, queued=0)",
      },
    });

    // A turn waiting for a slot gets the one a close gives back.
    await bridge.control("settings", { acquireDeadlineMs: 10_000 });
    const waiting = bridge.call(`/v1/sessions/${third}/turns`, { message: "hello", run_id: uid("run") });
    await expect.poll(async () => (await bridge.slots()).queued).toBe(1);
    expect((await bridge.call(`/v1/sessions/${first}/close`, {})).body.status).toBe("closed");
    expect((await waiting).status).toBe(202);
    expect(await bridge.slots()).toMatchObject({ in_flight: 2, queued: 0 });
  });

  it("a session is not closed while a turn runs in it (409 active_run); a cancel ends its process; a restart frees every slot", async () => {
    const bridge = instance({});
    await bridge.ready;
    const session = uid("sess");
    await bridge.call("/v1/sessions", { session_id: session, model: PI });
    const run = uid("run");
    await bridge.call(`/v1/sessions/${session}/turns`, { message: "[hang] busy", run_id: run });
    const close = await bridge.call(`/v1/sessions/${session}/close`, {});
    expect(close.status).toBe(409);
    expect(close.body.error).toEqual({
      message: "active retained runs must be cancelled before the session can close",
      type: "active_run",
    });
    await bridge.call(`/v1/runs/${run}/cancel?wait_ms=2000`, null);
    expect(await bridge.slots()).toMatchObject({ in_flight: 0 });

    const other = uid("sess");
    await bridge.call("/v1/sessions", { session_id: other, model: PI });
    await bridge.call(`/v1/sessions/${other}/turns`, { message: "hello", run_id: uid("run") });
    await bridge.chat(uid("run"), "[hang] one-shot").then((r) => readUntil(r, (t) => t.includes("echo: ")));
    expect(await bridge.slots()).toMatchObject({ in_flight: 2 });
    await bridge.control("restart", {});
    expect(await bridge.slots()).toMatchObject({ in_flight: 0 });
  });
});

describe("what a retained session's first turn needs besides a slot", () => {
  it("the bridge's own fs-jail: without BRIDGE_JAIL_MODE=fs-jail its first turn is 501 not_configured, whatever the request's execution says; the session then takes turns once it is set", async () => {
    const bridge = instance({ jailMode: "off" });
    await bridge.ready;
    const session = uid("sess");
    await bridge.call("/v1/sessions", {
      session_id: session,
      model: PI,
      execution: { kind: "host", jail: { mode: "fs-jail" } },
    });
    const refused = await bridge.call(`/v1/sessions/${session}/turns`, { message: "hello", run_id: uid("run") });
    expect(refused.status).toBe(501);
    expect(refused.body).toEqual({
      error: {
        message:
          "backend pi requires an enforced Linux fs-jail so Bash and descendants cannot read host credentials or sibling sessions; set BRIDGE_JAIL_MODE=fs-jail and enable bubblewrap",
        type: "not_configured",
      },
    });
    expect(await bridge.slots()).toMatchObject({ in_flight: 0 });
    await bridge.control("settings", { jailMode: "fs-jail" });
    expect((await bridge.call(`/v1/sessions/${session}/turns`, { message: "hello", run_id: uid("run") })).status).toBe(
      202,
    );
  });

  it("a Pi route its models.json does not list: refused naming the file's path on the host, one-shot (error frame) and retained (501)", async () => {
    const bridge = instance({});
    await bridge.ready;
    await bridge.control("faults", { piModelUnlisted: true });
    const message =
      "backend pi model tangle-router/fake-echo has no explicit entry in /home/bridge-operator/.pi/agent/models.json; the bridge refuses to combine dynamic model metadata with custom provider auth controls";
    const session = uid("sess");
    await bridge.call("/v1/sessions", { session_id: session, model: PI });
    expect((await bridge.call(`/v1/sessions/${session}/turns`, { message: "hello", run_id: uid("run") })).body).toEqual(
      { error: { message, type: "not_configured" } },
    );
    await bridge.control("variants", { piTransport: "one-shot" });
    const frames = (await readUntil(await bridge.chat(uid("run"), "hello", PI), (t) => t.includes("[DONE]")))
      .split("\n")
      .filter((l) => l.startsWith("data: {"));
    expect(JSON.parse(frames.at(-1)!.slice("data: ".length))).toEqual({ error: { message, type: "not_configured" } });
  });
});
