import { describe, expect, it } from "vitest";
import { type AttemptOptions, attemptDelivery } from "./send";

const request = { url: "https://hooks.example.com/in", headers: { "webhook-id": "msg_1" }, body: "{}" };

function options(fetch: AttemptOptions["fetch"], extra: Partial<AttemptOptions> = {}): AttemptOptions {
  return { local: false, timeoutMs: 200, maxRedirects: 2, maxResponseBytes: 64, fetch, now: () => 0, ...extra };
}

/** A fetch that answers from a table by URL and records every call. */
function scripted(answers: Record<string, () => Response>) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetch = async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    const answer = answers[url];
    if (!answer) throw new Error(`connect ECONNREFUSED ${url}`);
    return answer();
  };
  return { fetch, calls };
}

describe("one delivery attempt", () => {
  it("a 2xx is delivered; the request is a POST of the body, redirects left to us", async () => {
    const { fetch, calls } = scripted({ [request.url]: () => new Response(null, { status: 204 }) });
    expect(await attemptDelivery(request, options(fetch))).toEqual({ kind: "delivered", status: 204 });
    expect(calls[0]!.init).toMatchObject({ method: "POST", body: "{}", redirect: "manual", headers: request.headers });
  });

  it("a 500 fails with the receiver's words, short and on one line; Retry-After is kept; 410 is permanent", async () => {
    const long = `oops\n${"x".repeat(500)}`;
    const { fetch } = scripted({
      [request.url]: () => new Response(long, { status: 503, headers: { "retry-after": "30" } }),
    });
    const failed = await attemptDelivery(request, options(fetch, { maxResponseBytes: 4096 }));
    expect(failed).toMatchObject({ kind: "failed", status: 503, retryAfterMs: 30_000, permanent: false });
    expect(failed.kind === "failed" && failed.error).toMatch(/^the receiver answered 503: oops x+…$/);
    expect(failed.kind === "failed" && failed.error.length).toBeLessThan(240);
    const gone = scripted({ [request.url]: () => new Response("bye", { status: 410 }) });
    expect(await attemptDelivery(request, options(gone.fetch))).toMatchObject({
      kind: "failed",
      status: 410,
      permanent: true,
    });
  });

  it("follows redirects by hand, re-sending the same POST, each hop checked", async () => {
    const { fetch, calls } = scripted({
      [request.url]: () => new Response(null, { status: 301, headers: { location: "/moved" } }),
      "https://hooks.example.com/moved": () =>
        new Response(null, { status: 308, headers: { location: "https://other.example.com/in" } }),
      "https://other.example.com/in": () => new Response("ok", { status: 200 }),
    });
    expect(await attemptDelivery(request, options(fetch))).toEqual({ kind: "delivered", status: 200 });
    expect(calls.map((c) => [c.url, c.init.method, c.init.body])).toEqual([
      [request.url, "POST", "{}"],
      ["https://hooks.example.com/moved", "POST", "{}"],
      ["https://other.example.com/in", "POST", "{}"],
    ]);
  });

  it("a redirect to a private, loopback or metadata address is refused before it is fetched", async () => {
    for (const location of [
      "https://10.0.0.1/x",
      "https://127.0.0.1/x",
      "http://169.254.169.254/latest/meta-data/",
      "https://[::ffff:192.168.0.1]/",
    ]) {
      const { fetch, calls } = scripted({
        [request.url]: () => new Response(null, { status: 302, headers: { location } }),
      });
      const outcome = await attemptDelivery(request, options(fetch));
      expect(outcome).toMatchObject({ kind: "failed", status: null });
      expect(outcome.kind === "failed" && outcome.error).toMatch(/^redirect refused: the location must/);
      expect(calls).toHaveLength(1);
    }
  });

  it("at most maxRedirects redirects are followed", async () => {
    const { fetch, calls } = scripted({
      [request.url]: () => new Response(null, { status: 307, headers: { location: request.url } }),
    });
    expect(await attemptDelivery(request, options(fetch))).toMatchObject({
      kind: "failed",
      status: 307,
      error: "more than 2 redirects",
    });
    expect(calls).toHaveLength(3);
  });

  it("the URL itself is checked before anything is sent", async () => {
    const { fetch, calls } = scripted({});
    const outcome = await attemptDelivery({ ...request, url: "https://192.168.0.10/in" }, options(fetch));
    expect(outcome).toMatchObject({ kind: "failed", error: "target refused: the URL must not be a private address" });
    expect(calls).toHaveLength(0);
  });

  it("a receiver that does not answer in time fails, naming the timeout", async () => {
    const fetch = (_url: string, init: RequestInit) =>
      new Promise<Response>((_, reject) => init.signal!.addEventListener("abort", () => reject(new Error("aborted"))));
    expect(await attemptDelivery(request, options(fetch, { timeoutMs: 20 }))).toMatchObject({
      kind: "failed",
      status: null,
      error: "no answer within 20 ms",
    });
  });

  it("a 2xx is delivered as soon as its status arrives: a body left open is not read", async () => {
    let pulls = 0;
    // Says a little, then holds its body open for good.
    const open = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        if (pulls === 1) controller.enqueue(new TextEncoder().encode("accepted"));
        return new Promise(() => undefined);
      },
    });
    const { fetch } = scripted({ [request.url]: () => new Response(open, { status: 200 }) });
    expect(await attemptDelivery(request, options(fetch, { timeoutMs: 1_000 }))).toEqual({
      kind: "delivered",
      status: 200,
    });
  });

  it("another status whose body is left open fails at the timeout with that status and what arrived of its text", async () => {
    const open = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("busy, come back"));
      },
    });
    const { fetch } = scripted({ [request.url]: () => new Response(open, { status: 503 }) });
    expect(await attemptDelivery(request, options(fetch, { timeoutMs: 20 }))).toEqual({
      kind: "failed",
      status: 503,
      error: "the receiver answered 503: busy, come back",
      permanent: false,
    });
  });

  it("a receiver that cannot be reached fails, saying so", async () => {
    const { fetch } = scripted({});
    expect(await attemptDelivery(request, options(fetch))).toMatchObject({
      kind: "failed",
      error: expect.stringMatching(/^could not reach the receiver: connect ECONNREFUSED/),
    });
  });

  it("reads at most maxResponseBytes of an endless answer", async () => {
    let pulls = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new TextEncoder().encode("y".repeat(16)));
      },
    });
    const { fetch } = scripted({ [request.url]: () => new Response(endless, { status: 500 }) });
    const outcome = await attemptDelivery(request, options(fetch, { maxResponseBytes: 40 }));
    expect(outcome.kind === "failed" && outcome.error).toBe(`the receiver answered 500: ${"y".repeat(40)}`);
    expect(pulls).toBeLessThan(10);
  });
});
