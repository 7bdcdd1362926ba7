import { describe, expect, it } from "vitest";
import { z } from "zod";
import { upstreamRejection } from "../../../test/helpers";
import { SandboxClient, toUpstreamError } from "./client";
import { sandboxRoutes } from "./routes";

function client(responses: Array<Response | (() => Promise<Response>)>, extra: Partial<ConstructorParameters<typeof SandboxClient>[0]> = {}) {
  const seen: Request[] = [];
  const sleeps: number[] = [];
  const c = new SandboxClient({
    baseUrl: "https://sandbox.example",
    apiKey: "secret-account-key",
    timeoutMs: 1000,
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
  it("reads the sidecar shape and the control-plane shape", async () => {
    const sidecar = await toUpstreamError(Response.json({ error: { code: "SESSION_BUSY", message: "busy" } }, { status: 409 }), "dispatch");
    expect(sidecar).toMatchObject({ status: 409, code: "session_busy", retryable: false });
    expect(sidecar.message).toContain("busy");
    const control = await toUpstreamError(Response.json({ error: "quota exceeded", code: "QUOTA" }, { status: 429, headers: { "retry-after": "7" } }), "create");
    expect(control).toMatchObject({ status: 429, code: "quota", retryable: true, retryAfterMs: 7000 });
  });

  it("maps every status, including a non-JSON 502 page", async () => {
    const codes = await Promise.all(
      [400, 401, 404, 408, 409, 429, 500, 502].map(async (status) => (await toUpstreamError(new Response("<html>oops</html>", { status }), "x")).code),
    );
    expect(codes).toEqual([
      "upstream_bad_request", "upstream_unauthorized", "upstream_not_found", "upstream_timeout",
      "upstream_conflict", "upstream_rate_limited", "upstream_unavailable", "upstream_unavailable",
    ]);
  });
});

describe("the Sandbox client", () => {
  it("sends the account key and never puts it in an error", async () => {
    const { c, seen } = client([new Response("nope", { status: 401 })]);
    const err = await upstreamRejection(c.send(sandboxRoutes.getSandbox("sbx_1")));
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer secret-account-key");
    expect(err.message).not.toContain("secret-account-key");
    expect(err.code).toBe("upstream_unauthorized");
  });

  it("retries 5xx and transport failures with backoff, and honours Retry-After", async () => {
    const { c, seen, sleeps } = client([
      new Response("", { status: 503 }),
      new Response("", { status: 429, headers: { "retry-after": "2" } }),
      Response.json({ ok: true }),
    ]);
    expect(await c.json(sandboxRoutes.getSandbox("s"), z.object({ ok: z.boolean() }), { retry: true })).toEqual({ ok: true });
    expect(seen).toHaveLength(3);
    expect(sleeps).toEqual([100, 2000]);
  });

  it("does not retry what is not marked safe, nor a 4xx", async () => {
    const first = client([new Response("", { status: 503 })]);
    expect((await upstreamRejection(first.c.send(sandboxRoutes.createSandbox()))).status).toBe(503);
    expect(first.seen).toHaveLength(1);
    const second = client([Response.json({ error: { code: "BAD", message: "no" } }, { status: 400 })]);
    expect((await upstreamRejection(second.c.send(sandboxRoutes.getSandbox("s"), { retry: true }))).code).toBe("bad");
    expect(second.seen).toHaveLength(1);
  });

  it("gives up after the attempts, and fails a Retry-After beyond its patience at once", async () => {
    const { c, seen } = client([new Response("", { status: 502 }), new Response("", { status: 502 }), new Response("", { status: 502 })]);
    expect((await upstreamRejection(c.send(sandboxRoutes.getSandbox("s"), { retry: true }))).status).toBe(502);
    expect(seen).toHaveLength(3);
    const long = client([new Response("", { status: 429, headers: { "retry-after": "120" } })]);
    const err = await upstreamRejection(long.c.send(sandboxRoutes.getSandbox("s"), { retry: true }));
    expect(err).toMatchObject({ status: 429, retryAfterMs: 120_000 });
    expect(long.seen).toHaveLength(1);
  });

  it("times out a call that does not answer", async () => {
    const hang = () => new Promise<Response>(() => {});
    const { c } = client([hang], { timeoutMs: 20 });
    const err = await upstreamRejection(c.send(sandboxRoutes.getSandbox("s")));
    expect(err).toMatchObject({ status: 408, code: "upstream_timeout", retryable: true });
  });

  it("refuses an answer that is not JSON or not the expected shape", async () => {
    const { c } = client([new Response("<html>", { status: 200 }), Response.json({ wrong: true })]);
    expect((await upstreamRejection(c.json(sandboxRoutes.getSandbox("s"), z.object({ id: z.string() })))).code).toBe("upstream_malformed");
    expect((await upstreamRejection(c.json(sandboxRoutes.getSandbox("s"), z.object({ id: z.string() })))).code).toBe("upstream_malformed");
  });
});
