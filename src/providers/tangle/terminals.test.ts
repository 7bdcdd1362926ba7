import { describe, expect, it } from "vitest";
import { ProviderError } from "../errors";
import { HttpTransport } from "../http";
import type { UpstreamTerminalFrame } from "../provider";
import { TangleInteractive } from "./interactive";
import { TangleTerminals } from "./terminals";

/** A transport over scripted answers (each a Response, or a function of the request). */
function transport(answers: Array<Response | ((req: Request) => Response)>) {
  const seen: Request[] = [];
  const client = new HttpTransport({
    baseUrl: "https://sandbox.example",
    bearer: "key",
    headersTimeoutMs: 1000,
    fetch: async (req) => {
      seen.push(req);
      const next = answers.shift();
      if (!next) throw new Error("no more answers");
      return typeof next === "function" ? next(req) : next;
    },
    sleep: async () => undefined,
  });
  return { client, seen };
}

const error = (status: number, code: string) => Response.json({ error: { code, message: code } }, { status });

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error("expected a failure");
}

const META = { sessionId: "p1", name: "t", shell: "/bin/sh", cwd: "/home/agent", cols: 80, rows: 24 };

describe("a terminal's metadata on the Sandbox (sandbox-wire §12)", () => {
  it("reads the older sidecar's { success, data } envelope and the object bare; an unknown terminal is null", async () => {
    const { client, seen } = transport([
      Response.json({ success: true, data: META }),
      Response.json(META),
      error(404, "TERMINAL_NOT_FOUND"),
    ]);
    const terminals = new TangleTerminals(client);
    expect(await terminals.metadata("sbx", "p1")).toEqual(META);
    expect(await terminals.metadata("sbx", "p1")).toEqual(META);
    expect(await terminals.metadata("sbx", "p1")).toBeNull();
    expect(new URL(seen[0]!.url).pathname).toBe("/v1/sidecar-proxy/sbx/terminals/p1");
  });

  it("a route missing is no terminals here (capability_denied), a sandbox gone is environment_gone", async () => {
    const { client } = transport([error(404, "NOT_FOUND"), error(404, "SANDBOX_NOT_FOUND")]);
    const terminals = new TangleTerminals(client);
    const missing = await failure(terminals.metadata("sbx", "p1"));
    expect(missing.code).toBe("capability_denied");
    expect(missing.options.details?.missing).toEqual(["interactiveTerminal"]);
    expect((await failure(terminals.metadata("sbx", "p1"))).code).toBe("environment_gone");
  });
});

describe("a terminal's socket on the Sandbox", () => {
  it("upgrades under the sidecar proxy with the account key, and reads output binary or JSON, a character split across frames whole", async () => {
    const pair = new WebSocketPair();
    const [client, server] = [pair[0], pair[1]];
    server.accept();
    const { client: http, seen } = transport([() => new Response(null, { status: 101, webSocket: client })]);
    const connection = await new TangleTerminals(http).connect("sbx", "c1", { cols: 100, rows: 30, generation: 2 });
    const url = new URL(seen[0]!.url);
    expect(url.pathname).toBe("/v1/sidecar-proxy/sbx/terminals/c1/ws");
    expect(Object.fromEntries(url.searchParams)).toEqual({ cols: "100", rows: "30", generation: "2" });
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer key");
    expect(seen[0]!.headers.get("upgrade")).toBe("websocket");

    const frames: UpstreamTerminalFrame[] = [];
    const bytes = new TextEncoder().encode("café\r\n");
    server.send(JSON.stringify({ type: "ready", sessionId: "p1", restored: false, detachTimeoutMs: 60000 }));
    server.send(bytes.slice(0, 4)); // "caf" and the first byte of "é"
    server.send(bytes.slice(4));
    server.send(JSON.stringify({ type: "output", data: "as text" }));
    server.send(JSON.stringify({ type: "something-newer" }));
    server.send(JSON.stringify({ type: "exit", exitCode: 3 }));
    const closed = new Promise<number>((resolve) => connection.onClose((code) => resolve(code)));
    connection.onFrame((f) => frames.push(f));
    server.close(1000, "exited");
    expect(await closed).toBe(1000);
    expect(frames).toEqual([
      { type: "ready", sessionId: "p1", restored: false, detachTimeoutMs: 60000 },
      { type: "output", data: "caf" },
      { type: "output", data: "é\r\n" },
      { type: "output", data: "as text" },
      { type: "exit", exitCode: 3 },
    ]);
  });

  it("a socket route answering 404 NOT_FOUND is no terminals here; a 101 without a socket is not taken", async () => {
    const { client } = transport([error(404, "NOT_FOUND"), new Response("nope", { status: 200 })]);
    const terminals = new TangleTerminals(client);
    const missing = await failure(terminals.connect("sbx", "c1", { cols: 80, rows: 24 }));
    expect(missing.code).toBe("capability_denied");
    expect((await failure(terminals.connect("sbx", "c1", { cols: 80, rows: 24 }))).code).toBe("invalid_response");
  });
});

describe("the agent's own terminal UI on the Sandbox", () => {
  it("reads answers enveloped or bare, a claim's conflict as an answer, and no TUI as null", async () => {
    const { client, seen } = transport([
      Response.json({ data: { connectionId: "tui-1", sessionId: "s1" } }, { status: 201 }),
      Response.json({ status: "accepted", generation: 1 }),
      Response.json(
        { data: { status: "conflict", generation: 2, conflictReason: "generation_mismatch" } },
        { status: 409 },
      ),
      Response.json({ data: { status: "running", connectionId: "tui-1", generation: 2 } }),
      error(404, "INTERACTIVE_NOT_FOUND"),
    ]);
    const tui = new TangleInteractive(client);
    expect(await tui.start("sbx", "s1", { cols: 80, rows: 24, idempotencyKey: "k" })).toEqual({
      connectionId: "tui-1",
    });
    const request = { operationId: "o", holderId: "h", expectedGeneration: 0 };
    expect(await tui.claim("sbx", "s1", request)).toEqual({ status: "accepted", generation: 1 });
    expect(await tui.claim("sbx", "s1", request)).toEqual({ status: "conflict", generation: 2 });
    expect(await tui.status("sbx", "s1")).toEqual({ status: "running" });
    expect(await tui.status("sbx", "s1")).toBeNull();
    expect(new URL(seen[1]!.url).pathname).toBe("/v1/sandboxes/sbx/runtime/agents/sessions/s1/interactive/control");
  });

  it("a deployment without the routes is no interactive agent here", async () => {
    const { client } = transport([error(404, "NOT_FOUND")]);
    const missing = await failure(
      new TangleInteractive(client).start("sbx", "s1", { cols: 80, rows: 24, idempotencyKey: "k" }),
    );
    expect(missing.code).toBe("capability_denied");
    expect(missing.options.details?.missing).toEqual(["interactiveAgent"]);
  });
});
