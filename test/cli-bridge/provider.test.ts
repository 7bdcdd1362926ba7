/**
 * The CLI Bridge provider's rules that depend on the deployment's configuration (which the
 * `cli-bridge` vitest project fixes for the gateway), at the provider seam against the stand-in,
 * each in a stand-in instance of its own.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Refusal } from "../../src/errors";
import { CliBridgeProvider } from "../../src/providers/cli-bridge/provider";
import { HttpTransport } from "../../src/providers/http";
import type { ProviderEvent } from "../../src/providers/provider";
import { providerRefusal } from "../../src/providers/refusal";
import { uid, upstreamRejection } from "../helpers";

const base = (env as unknown as Record<string, string>).CLI_BRIDGE_URL!;
const PI = "pi/tangle-router/fake-echo";
const CODEX = "codex/default";

function peer(execution?: Record<string, unknown>) {
  const url = `${base}/i/${uid("provider")}/`;
  const provider = new CliBridgeProvider({
    transport: new HttpTransport({
      baseUrl: url,
      bearer: "standin-token",
      fetch: (r) => fetch(r),
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 10_000,
    }),
    ...(execution ? { execution } : {}),
  });
  const control = async (path: string, body?: unknown) =>
    (await (
      await fetch(
        `${url}_standin/${path}`,
        body === undefined
          ? {}
          : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
      )
    ).json()) as any;
  return { provider, control };
}

const turn = (model: string) => ({
  environmentId: "cli-bridge",
  sessionId: uid("sess"),
  turnId: uid("turn"),
  executionId: uid("exe"),
  message: "hello",
  model,
});

describe("a retained native session runs on the host only (agent-provider-cli-bridge)", () => {
  it('a retained route under a kind: "sandbox" execution default is refused before any session is opened, clearly; a one-shot route takes the default unchanged', async () => {
    const execution = { kind: "sandbox", repoUrl: "https://example.invalid/repo.git" };
    const { provider, control } = peer(execution);
    const err = await upstreamRejection(provider.dispatch(turn(PI)));
    expect(err.code).toBe("not_configured");
    expect(err.message).toContain('kind "sandbox"');
    expect(err.message).toContain(PI);
    const counters = (await control("counters")).counters;
    expect(counters.sessionsCreated).toBe(0);
    expect(Object.keys(counters.requests)).toEqual(["GET /v1/capabilities"]);
    // The API answers it as 501 provider_unavailable, with the reason.
    const refusal = providerRefusal(err) as Refusal;
    expect(refusal).toBeInstanceOf(Refusal);
    expect([refusal.code, refusal.message]).toEqual(["provider_unavailable", err.message]);

    const oneShot = turn(CODEX);
    const receipt = await provider.dispatch(oneShot);
    expect((await control(`runs/${receipt.controlRef.runId}`)).request.execution).toEqual(execution);
  });

  it("an explicit host default opens the retained session with it", async () => {
    const execution = { kind: "host", jail: { mode: "fs-jail" } };
    const { provider, control } = peer(execution);
    const receipt = await provider.dispatch(turn(PI));
    expect((await control(`sessions/${encodeURIComponent(receipt.controlRef.sessionId)}`)).request.execution).toEqual(
      execution,
    );
  });
});

describe("a bridge whose process slots are all taken (issue 36)", () => {
  it("a one-shot run it accepted, then refused for want of a slot, ends failed upstream_at_capacity naming the limit, not in the bridge's words", async () => {
    const { provider, control } = peer();
    await control("settings", { maxConcurrency: 1, acquireDeadlineMs: 200 });
    // A run that holds the one slot; the route's capability document is read once, and reused.
    const holder = await provider.dispatch({ ...turn(CODEX), message: "[hang] hold the slot" });
    await expect.poll(async () => (await control(`runs/${holder.controlRef.runId}`)).status).toBe("running");
    const refused = await provider.dispatch(turn(CODEX));
    let end: ProviderEvent | undefined;
    for await (const event of provider.events(refused.controlRef, {})) if (event.kind === "terminal") end = event;
    expect(end).toMatchObject({ kind: "terminal", status: "failed", error: { code: "upstream_at_capacity" } });
    const message = (end as { error: { message: string } }).error.message;
    expect(message).toContain("all 1 of its agent process slots (BRIDGE_HOST_MAX_CONCURRENCY)");
    expect(message).not.toContain("host-executor");
    await provider.cancel(holder.controlRef);
  });
});

describe("the bridge's catalog (GET /v1/agents)", () => {
  it("its model routes grouped by harness, each harness's facts from its route's capability document", async () => {
    const { provider } = peer();
    const catalog = await provider.catalog();
    expect(catalog.provider).toBe("cli-bridge");
    // The backend is the route's harness: a turn names a route, never a backend of its own.
    expect(catalog.perTurnBackend).toBe(false);
    const pi = catalog.backends.find((b) => b.type === "pi")!;
    const codex = catalog.backends.find((b) => b.type === "codex")!;
    expect(pi.models).toContain(PI);
    expect(codex.models).toContain(CODEX);
    // Pi's retained sessions prove interactions; Codex's one-shot runs carry none.
    expect(pi.supports.interactions).toBe(true);
    expect(codex.supports.interactions).toBe(false);
    for (const b of catalog.backends) {
      expect(typeof b.supports.attachments === "boolean" || "unavailable" in (b.supports.attachments as object)).toBe(
        true,
      );
      expect(b.supports.perTurnModel).toBe(true);
    }
  });
});
