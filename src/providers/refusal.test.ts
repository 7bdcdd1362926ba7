import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import { ProviderError } from "./errors";
import { providerRefusal } from "./refusal";

describe("provider failures as refusals", () => {
  it("at capacity: upstream_at_capacity, retryable, the provider's words and details, the upstream's Retry-After in whole seconds (issue 36)", () => {
    const err = new ProviderError(
      "at_capacity",
      "the CLI Bridge is at capacity: all 4 of its agent process slots (BRIDGE_HOST_MAX_CONCURRENCY) are taken",
      {
        status: 429,
        retryable: true,
        retryAfterMs: 4_200,
        details: { setting: "BRIDGE_HOST_MAX_CONCURRENCY", limit: 4, inUse: 4 },
      },
    );
    const refusal = providerRefusal(err) as Refusal;
    expect(refusal).toBeInstanceOf(Refusal);
    expect(refusal).toMatchObject({
      code: "upstream_at_capacity",
      message: err.message,
      retryAfterSeconds: 5,
      details: { upstreamStatus: 429, retryable: true, setting: "BRIDGE_HOST_MAX_CONCURRENCY", limit: 4, inUse: 4 },
    });
    // Without the upstream's Retry-After, none is made up.
    expect(
      (providerRefusal(new ProviderError("at_capacity", "full", { status: 503, retryable: true })) as Refusal)
        .retryAfterSeconds,
    ).toBeUndefined();
  });
});
