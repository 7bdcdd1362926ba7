import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { upstreamRejection as rejection } from "../../test/helpers";
import { ProviderError } from "./errors";
import { errorFromResponse, HttpTransport, type Route } from "./http";

const get: Route = { method: "GET", path: "/v1/things/1" };
const post: Route = { method: "POST", path: "/v1/things" };

function client(
  responses: Array<Response | (() => Promise<Response>)>,
  extra: Partial<ConstructorParameters<typeof HttpTransport>[0]> = {},
) {
  const seen: Request[] = [];
  const sleeps: number[] = [];
  const c = new HttpTransport({
    baseUrl: "https://upstream.example",
    bearer: "secret-account-key",
    headersTimeoutMs: 1000,
    fetch: async (req) => {
      seen.push(req);
      const next = responses.shift();
      if (!next) throw new Error("no more responses");
      return typeof next === "function" ? next() : next;
    },
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...extra,
  });
  return { c, seen, sleeps };
}

describe("upstream error mapping", () => {
  it("reads the sidecar shape, the control-plane shape and the OpenAI-style shape, keeping the wire code", async () => {
    const sidecar = await errorFromResponse(
      Response.json({ error: { code: "SESSION_BUSY", message: "busy" } }, { status: 409 }),
      "dispatch",
    );
    expect(sidecar).toMatchObject({
      status: 409,
      code: "conflict",
      retryable: false,
      options: { wireCode: "SESSION_BUSY" },
    });
    expect(sidecar.message).toContain("busy");
    const control = await errorFromResponse(
      Response.json({ error: "quota exceeded", code: "QUOTA" }, { status: 429, headers: { "retry-after": "7" } }),
      "create",
    );
    expect(control).toMatchObject({
      status: 429,
      code: "rate_limited",
      retryable: true,
      retryAfterMs: 7000,
      options: { wireCode: "QUOTA" },
    });
    const typed = await errorFromResponse(
      Response.json({ error: { message: "Unauthorized", type: "invalid_authentication_error" } }, { status: 401 }),
      "x",
    );
    expect(typed).toMatchObject({ code: "unauthorized", options: { wireCode: "invalid_authentication_error" } });
  });

  it("maps every status, including a non-JSON 502 page", async () => {
    const codes = await Promise.all(
      [400, 401, 404, 408, 409, 410, 429, 500, 501, 502].map(
        async (status) => (await errorFromResponse(new Response("<html>oops</html>", { status }), "x")).code,
      ),
    );
    expect(codes).toEqual([
      "invalid_request",
      "unauthorized",
      "not_found",
      "timeout",
      "conflict",
      "not_found",
      "rate_limited",
      "unavailable",
      "capability_denied",
      "unavailable",
    ]);
  });
});

describe("the HTTP transport", () => {
  it("retries a retryable failure only where `retryIf` allows it, and answers an `accept`ed status as a response (issue 36)", async () => {
    const saturated = () =>
      Response.json(
        { error: { type: "executor_saturated", message: "full" } },
        { status: 429, headers: { "retry-after": "1" } },
      );
    const refused = client([saturated(), saturated()]);
    const err = await rejection(
      refused.c.send(post, { body: {}, retry: true, retryIf: (e) => e.options.wireCode !== "executor_saturated" }),
    );
    expect([err.code, refused.seen.length, refused.sleeps]).toEqual(["rate_limited", 1, []]);
    const retried = client([Response.json({ error: { type: "other" } }, { status: 503 }), Response.json({ ok: true })]);
    expect(
      (
        await retried.c.send(post, {
          body: {},
          retry: true,
          retryIf: (e) => e.options.wireCode !== "executor_saturated",
        })
      ).status,
    ).toBe(200);
    expect(retried.seen.length).toBe(2);
    const degraded = client([Response.json({ executor: { in_flight: 4, max: 4 } }, { status: 503 })]);
    expect(await degraded.c.json(get, z.looseObject({ executor: z.unknown() }), { accept: [503] })).toEqual({
      executor: { in_flight: 4, max: 4 },
    });
  });

  it("sends the account key and never puts it in an error", async () => {
    const { c, seen } = client([new Response("nope", { status: 401 })]);
    const err = await rejection(c.send(get));
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer secret-account-key");
    expect(err.message).not.toContain("secret-account-key");
    expect(err.code).toBe("unauthorized");
  });

  it("retries 5xx and transport failures with backoff, and honours Retry-After", async () => {
    const { c, seen, sleeps } = client([
      new Response("", { status: 503 }),
      new Response("", { status: 429, headers: { "retry-after": "2" } }),
      Response.json({ ok: true }),
    ]);
    expect(await c.json(get, z.object({ ok: z.boolean() }), { retry: true })).toEqual({ ok: true });
    expect(seen).toHaveLength(3);
    expect(sleeps).toEqual([100, 2000]);
  });

  it("does not retry what is not marked safe, nor a 4xx", async () => {
    const first = client([new Response("", { status: 503 })]);
    expect((await rejection(first.c.send(post))).status).toBe(503);
    expect(first.seen).toHaveLength(1);
    const second = client([Response.json({ error: { code: "BAD", message: "no" } }, { status: 400 })]);
    expect((await rejection(second.c.send(get, { retry: true }))).options.wireCode).toBe("BAD");
    expect(second.seen).toHaveLength(1);
  });

  it("gives up after the attempts, and fails a Retry-After beyond its patience at once", async () => {
    const { c, seen } = client([
      new Response("", { status: 502 }),
      new Response("", { status: 502 }),
      new Response("", { status: 502 }),
    ]);
    expect((await rejection(c.send(get, { retry: true }))).status).toBe(502);
    expect(seen).toHaveLength(3);
    const long = client([new Response("", { status: 429, headers: { "retry-after": "120" } })]);
    const err = await rejection(long.c.send(get, { retry: true }));
    expect(err).toMatchObject({ status: 429, retryAfterMs: 120_000 });
    expect(long.seen).toHaveLength(1);
  });

  it("times out a call that does not answer", async () => {
    const hang = () => new Promise<Response>(() => {});
    const { c } = client([hang], { headersTimeoutMs: 20 });
    const err = await rejection(c.send(get));
    expect(err).toMatchObject({ status: 408, code: "timeout", retryable: true });
  });

  it("refuses an answer that is not JSON or not the expected shape", async () => {
    const { c } = client([new Response("<html>", { status: 200 }), Response.json({ wrong: true })]);
    expect((await rejection(c.json(get, z.object({ id: z.string() })))).code).toBe("invalid_response");
    expect((await rejection(c.json(get, z.object({ id: z.string() })))).code).toBe("invalid_response");
  });

  it("fails a streamed body that goes silent for longer than the body timeout, and lets a trickling one through", async () => {
    const silent = new ReadableStream<Uint8Array>({
      start: (controller) => controller.enqueue(new TextEncoder().encode("data: 1\n\n")),
    });
    const { c } = client([new Response(silent)], { bodyTimeoutMs: 30 });
    const reader = c.reader(await c.send(get, { stream: true }));
    expect((await reader.read()).done).toBe(false);
    const err = await reader.read().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ code: "timeout", retryable: true });

    let sent = 0;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((r) => setTimeout(r, 10));
        if (sent++ < 5) controller.enqueue(new TextEncoder().encode(": ping\n\n"));
        else controller.close();
      },
    });
    const second = client([new Response(trickle)], { bodyTimeoutMs: 30 });
    const trickled = second.c.reader(await second.c.send(get, { stream: true }));
    let text = "";
    for (let next = await trickled.read(); !next.done; next = await trickled.read()) {
      text += new TextDecoder().decode(next.value);
    }
    expect(text.split(": ping").length - 1).toBe(5);
  });

  it("takes its abort listener off the request's signal once the answer is in (a stream's, a JSON call's, a refusal's)", async () => {
    const added = new Map<EventListenerOrEventListenerObject, AbortSignal>();
    const add = vi.spyOn(AbortSignal.prototype, "addEventListener").mockImplementation(function (
      this: AbortSignal,
      type: string,
      listener: EventListenerOrEventListenerObject | null,
    ) {
      if (type === "abort" && listener) added.set(listener, this);
    });
    const remove = vi.spyOn(AbortSignal.prototype, "removeEventListener").mockImplementation(function (
      this: AbortSignal,
      type: string,
      listener: EventListenerOrEventListenerObject | null,
    ) {
      if (type === "abort" && listener && added.get(listener) === this) added.delete(listener);
    });
    try {
      const caller = new AbortController();
      const { c } = client(
        [new Response("data: 1\n\n"), Response.json({ id: "x" }), Response.json({ error: "no" }, { status: 404 })],
        { bodyTimeoutMs: 1000 },
      );
      const stream = await c.send(get, { stream: true, signal: caller.signal });
      await c.json(get, z.object({ id: z.string() }));
      await rejection(c.send(get));
      expect(added.size).toBe(0);
      await stream.body?.cancel();
    } finally {
      add.mockRestore();
      remove.mockRestore();
    }
  });

  it("does not time a reader that waits before asking for more: only a read upstream leaves unanswered", async () => {
    const encoder = new TextEncoder();
    let sent = 0;
    const ready = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 3) controller.enqueue(encoder.encode(`data: ${sent}\n\n`));
        else controller.close();
      },
    });
    const { c } = client([new Response(ready)], { bodyTimeoutMs: 30 });
    const reader = c.reader(await c.send(get, { stream: true }));
    const chunks: string[] = [];
    for (;;) {
      // The reader is slower than the timeout; upstream always has the next chunk ready.
      await new Promise((r) => setTimeout(r, 60));
      const next = await reader.read();
      if (next.done) break;
      chunks.push(new TextDecoder().decode(next.value));
    }
    expect(chunks).toEqual(["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"]);
  });

  it("keeps the base URL's own path in front of every route (a service behind a proxy path)", async () => {
    for (const baseUrl of ["https://upstream.example/bridge", "https://upstream.example/bridge/"]) {
      const { c, seen } = client([new Response("")], { baseUrl });
      await c.send(get);
      expect(new URL(seen[0]!.url).pathname).toBe("/bridge/v1/things/1");
    }
  });

  it("sends query parameters and asks for an event stream when it expects one", async () => {
    const { c, seen } = client([new Response("")]);
    await c.send(get, { query: { model: "codex/default" }, stream: true });
    expect(new URL(seen[0]!.url).searchParams.get("model")).toBe("codex/default");
    expect(seen[0]!.headers.get("accept")).toBe("text/event-stream");
  });
});

describe("the header timer", () => {
  it("is cleared once a JSON answer (or a refusal) is read: no timer is left pending to keep an object awake", async () => {
    vi.useFakeTimers();
    try {
      const { c } = client([
        Response.json({ ok: true }),
        Response.json({ error: { code: "NOPE", message: "no" } }, { status: 400 }),
        new Response(null, { status: 204 }),
      ]);
      expect(await c.json(get, z.object({ ok: z.literal(true) }))).toEqual({ ok: true });
      expect(vi.getTimerCount()).toBe(0);
      await rejection(c.json(post, z.unknown()));
      expect(vi.getTimerCount()).toBe(0);
      expect((await c.send({ method: "DELETE", path: "/v1/things/1" })).status).toBe(204);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
