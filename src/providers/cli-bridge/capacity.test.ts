import { describe, expect, it } from "vitest";
import { ProviderError } from "../errors";
import { errorFromResponse, HttpTransport } from "../http";
import { capacityOf, capacityRunError } from "./capacity";

/** A transport whose bridge answers `/health` with `executor` (and counts its reads). */
function bridgeWithHealth(executor: Record<string, unknown> | undefined, status = 200) {
  const reads: string[] = [];
  const http = new HttpTransport({
    baseUrl: "http://bridge.test",
    bearer: "t",
    headersTimeoutMs: 1_000,
    fetch: async (request) => {
      reads.push(new URL(request.url).pathname);
      return new Response(JSON.stringify({ status: "degraded", ...(executor ? { executor } : {}) }), { status });
    },
  });
  return { http, reads };
}

const answer = (status: number, error: Record<string, unknown>, headers: Record<string, string> = {}) =>
  errorFromResponse(new Response(JSON.stringify({ error }), { status, headers }), "start turn");

describe("the CLI Bridge at capacity, from its refusals (issue 36)", () => {
  it("429 executor_saturated: at capacity, naming the limit, with the bridge's Retry-After", async () => {
    const { http, reads } = bridgeWithHealth(undefined);
    const refused = await answer(
      429,
      {
        type: "executor_saturated",
        capacity: true,
        provider_dispatch: "not_started",
        status: 429,
        executor: "host",
        in_flight: 4,
        max: 4,
        queued: 1,
        deadline_ms: 60000,
        retry_after_ms: 5000,
        message: "host-executor: acquire timeout after 60000ms (in_flight=4/4, queued=1)",
      },
      { "retry-after": "5" },
    );
    const err = await capacityOf(http, refused);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err!.code).toBe("at_capacity");
    expect(err!.message).toContain("all 4 of its agent process slots (BRIDGE_HOST_MAX_CONCURRENCY)");
    expect(err!.message).not.toContain("host-executor");
    expect(reads).toEqual([]);
    expect(err).toMatchObject({
      retryAfterMs: 5000,
      retryable: true,
      options: { details: { limit: 4, inUse: 4, setting: "BRIDGE_HOST_MAX_CONCURRENCY" } },
    });
  });

  it("503 admission_rejected: at capacity, naming the admission gate's limit", async () => {
    const { http } = bridgeWithHealth(undefined);
    const refused = await answer(
      503,
      {
        capacity: true,
        message: "queue full",
        type: "admission_rejected",
        reason: "queue_full",
        admission: { maxActive: 8, active: 8 },
      },
      { "retry-after": "5" },
    );
    const err = await capacityOf(http, refused);
    expect(err).toMatchObject({
      code: "at_capacity",
      message: expect.stringContaining("all 8 of its places for runs (BRIDGE_HOST_CHAT_MAX_ACTIVE)"),
    });
    expect(err!.retryAfterMs).toBe(5000);
  });

  it("503 backend_not_ready after a health probe timed out: at capacity only when /health says every slot is taken", async () => {
    const probe = () =>
      answer(503, {
        message: 'backend "codex" is not ready: health probe timed out after 3500ms',
        type: "backend_not_ready",
      });
    const full = bridgeWithHealth({ in_flight: 4, max: 4 }, 503);
    expect(await capacityOf(full.http, await probe())).toMatchObject({
      code: "at_capacity",
      options: { details: { limit: 4, inUse: 4 } },
    });
    expect(full.reads).toEqual(["/health"]);
    // Not full, or no counts reported (an older bridge): not said to be at capacity.
    expect(await capacityOf(bridgeWithHealth({ in_flight: 2, max: 4 }).http, await probe())).toBeNull();
    expect(await capacityOf(bridgeWithHealth(undefined).http, await probe())).toBeNull();
    // Another reason not to be ready is not capacity, and needs no read.
    const other = bridgeWithHealth({ in_flight: 4, max: 4 });
    expect(
      await capacityOf(
        other.http,
        await answer(503, { message: 'backend "codex" is not ready: exit 1', type: "backend_not_ready" }),
      ),
    ).toBeNull();
    expect(other.reads).toEqual([]);
  });

  it("a run's error frame of a saturated executor: the turn's error in the gateway's words, naming the limit", () => {
    expect(
      capacityRunError({
        type: "executor_saturated",
        capacity: true,
        executor: { name: "host", in_flight: 2, max: 2, queued: 0, deadline_ms: 200 },
      }),
    ).toEqual({
      code: "upstream_at_capacity",
      message: expect.stringContaining("all 2 of its agent process slots"),
    });
    expect(capacityRunError({ type: "backend_error" })).toBeNull();
  });
});
