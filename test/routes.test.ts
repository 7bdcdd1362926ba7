import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readConfig } from "../src/config";
import type { ApiError } from "../src/errors";
import { api, collect, emulator, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

describe("conversation routes", () => {
  it("lists the user's conversations newest first, with title and state", async () => {
    const token = await tokenFor(uid("user"));
    const [c1, c2] = [uid("conv"), uid("conv")];
    const [t1, t2] = [uid("turn"), uid("turn")];
    await sendTurn(token, c1, t1, "first conversation");
    await waitForTurn(token, c1, t1);
    await sendTurn(token, c2, t2, "second conversation");
    await waitForTurn(token, c2, t2);
    const { conversations } = await json(await api("/v1/conversations", { token }));
    expect(conversations.map((c: any) => c.conversationId)).toEqual([c2, c1]);
    expect(conversations[0]).toMatchObject({ title: "second conversation", state: "idle" });
    expect((await json(await api("/v1/conversations?limit=1", { token }))).conversations).toHaveLength(1);
  });

  it("summary and transcript rebuild what happened", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "show me the README");
    const done = await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary).toMatchObject({
      conversationId: cid,
      state: "idle",
      turnCount: 1,
      title: "show me the README",
      activeTurn: null,
    });
    expect(summary.lastTurn).toMatchObject({ turnId, status: "completed" });
    expect(summary.lastEventId).toBe(done.events.at(-1)!.seq);

    const { messages, lastEventId } = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    expect(lastEventId).toBe(summary.lastEventId);
    expect(messages[0]).toMatchObject({ role: "user", turnId, text: "show me the README" });
    expect(messages[1]).toMatchObject({ role: "assistant", turnId, status: "completed" });
    const tool = messages[1].parts.find((p: any) => p.type === "tool");
    expect(tool).toMatchObject({ tool: "read", state: { status: "completed" } });
    expect(messages[1].text).toBe(summary.lastTurn.result.text);
    expect(
      messages[1].parts
        .filter((p: any) => p.type === "text")
        .map((p: any) => p.text)
        .join("\n\n"),
    ).toBe(messages[1].text);
  });

  it("delete removes the session upstream and every local record; the id can start afresh", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "to be deleted"));
    await waitForTurn(token, cid, turnId);
    const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
    expect(run.id).toBe(accepted.executionId);

    const deleted = await api(`/v1/conversations/${cid}`, { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(await json(deleted)).toEqual({ deleted: true });
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).error.code).toBe("EXECUTION_NOT_FOUND");
    expect((await api(`/v1/conversations/${cid}`, { token })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })).status).toBe(404);
    expect((await json(await api("/v1/conversations", { token }))).conversations).toEqual([]);
    // The same conversation id starts a new conversation; the old turn id is free again.
    expect((await sendTurn(token, cid, turnId, "a new start")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).message).toBe("a new start");
  });
});

describe("service routes", () => {
  it("every answer of the Worker says nosniff and sends no referrer: JSON, errors, event streams, the emulator's pages", async () => {
    const token = await tokenFor(uid("user"));
    const answers = [
      await api("/healthz"),
      await api("/no/such/route"),
      await api("/v1/conversations", { token }),
      await api("/v1/conversations"),
      await api("/_emulator/counters"),
    ];
    for (const res of answers) {
      expect(res.headers.get("x-content-type-options"), res.url).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), res.url).toBe("no-referrer");
      await res.body?.cancel();
    }
  });

  it("healthz answers without a token", async () => {
    const res = await SELF.fetch("https://gateway.example.com/healthz");
    expect(await json(res)).toEqual({ ok: true, version: "0.1.0", provider: "emulator", devLogin: false });
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  it("serves an OpenAPI document generated from the schemas", async () => {
    const doc = await json(await SELF.fetch("https://gateway.example.com/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/conversations/{cid}/turns", "/v1/conversations/{cid}/events"]),
    );
    const submit = doc.components.schemas.SubmitTurn;
    expect(submit.required).toEqual(["message"]);
    expect(submit.additionalProperties).toBe(false);
    expect(doc.components.schemas.Turn.properties.status.enum).toContain("completed");
  });

  it("the emulator's control routes are for loopback development only", async () => {
    expect((await SELF.fetch("https://gateway.example.com/_emulator/counters")).status).toBe(404);
    expect((await api("/_emulator/counters")).status).toBe(200);
  });

  it("the emulator's control routes read a body whole before they answer, even one they refuse (nothing is read after the answer)", async () => {
    // Passed on as the client's stream, a body a control route answered without reading (415, an unknown path)
    // was read after the answer went out: an uncaught TypeError, and wrangler dev restarting the Worker.
    for (const [path, type, status] of [
      ["/_emulator/reset", "text/plain", 415],
      ["/_emulator/nothing-here", "application/json", 404],
    ] as const) {
      let chunks = 0;
      let ended = false;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (chunks === 64) {
            ended = true;
            controller.close();
            return;
          }
          chunks++;
          controller.enqueue(new TextEncoder().encode(" ".repeat(8192)));
        },
      });
      const res = await SELF.fetch(`http://127.0.0.1:8787${path}`, {
        method: "POST",
        headers: { "content-type": type },
        body,
        duplex: "half",
      } as RequestInit);
      // Answered: the whole body was read by then.
      expect({ status: res.status, chunks, ended }).toEqual({ status, chunks: 64, ended: true });
      await res.body?.cancel();
    }
    const tooLarge = await SELF.fetch("http://127.0.0.1:8787/_emulator/faults", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: " ".repeat(1024 * 1024 + 1),
    });
    expect({ status: tooLarge.status, code: (await json(tooLarge)).error.code }).toEqual({
      status: 413,
      code: "payload_too_large",
    });
    // The Worker serves on.
    expect((await api("/_emulator/counters")).status).toBe(200);
  });

  it("a missing or bad configuration value is a 500 config_invalid naming the variable, never the value", () => {
    const base = env as unknown as Record<string, string>;
    const read = (overrides: Record<string, string | undefined>) => {
      try {
        readConfig({ ...base, ...overrides } as unknown as Env);
        return null;
      } catch (err) {
        return err as ApiError;
      }
    };
    const missing = read({ SESSION_ID_SECRET: undefined })!;
    expect(missing).toMatchObject({
      status: 500,
      code: "config_invalid",
      details: { variables: ["SESSION_ID_SECRET"] },
    });
    const short = read({ AUTH_JWT_SECRET: "short-secret-value" })!;
    expect(short.details).toEqual({ variables: ["AUTH_JWT_SECRET"] });
    expect(short.message).not.toContain("short-secret-value");
    expect(read({ MAX_MESSAGE_BYTES: "lots" })!.details).toEqual({ variables: ["MAX_MESSAGE_BYTES"] });
    expect(read({ PROVIDER: "tangle", TANGLE_API_KEY: undefined })!.details).toEqual({ variables: ["TANGLE_API_KEY"] });
    expect(read({})).toBeNull();
  });
});
