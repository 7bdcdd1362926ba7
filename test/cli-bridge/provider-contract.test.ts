import { env } from "cloudflare:test";
import { CliBridgeProvider } from "../../src/providers/cli-bridge/provider";
import { HttpTransport } from "../../src/providers/http";
import { uid } from "../helpers";
import { providerContract } from "../provider-contract";

const base = (env as unknown as Record<string, string>).CLI_BRIDGE_URL!;

// The CLI Bridge provider over the stand-in (an instance of its own: faults elsewhere cannot reach it).
providerContract("cli-bridge over the stand-in (Pi, retained sessions)", () => {
  const url = `${base}/i/contract-${uid("peer")}/`;
  const provider = new CliBridgeProvider({
    transport: new HttpTransport({
      baseUrl: url,
      bearer: "standin-token",
      fetch: (r) => fetch(r),
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 10_000,
    }),
    model: "pi/tangle-router/fake-echo",
  });
  return {
    provider,
    environment: async () => (await provider.ensureEnvironment({ ownerKey: uid("owner"), known: null })).record,
    messages: { plain: "hello bridge peer", slow: "[hang] a long job", ask: "[permission] run the tests" },
    askInteractions: { permission: true },
    refusesBusySession: true,
    answers: { first: { grant: "allow_once" }, other: { grant: "deny" } },
    runsStarted: async () => {
      const counters = (await (
        await fetch(`${url}_standin/counters`, { headers: { authorization: "Bearer standin-token" } })
      ).json()) as { counters: { runsStarted: Record<string, number> } };
      return Object.values(counters.counters.runsStarted).reduce((a, b) => a + b, 0);
    },
    environmentsCanVanish: false,
    namesSessions: true,
  };
});

// The same contract over one-shot runs (Codex: no retained sessions, no interactions).
providerContract(
  "cli-bridge over the stand-in (Codex, one-shot runs)",
  () => {
    const url = `${base}/i/contract-${uid("peer")}/`;
    const provider = new CliBridgeProvider({
      transport: new HttpTransport({
        baseUrl: url,
        bearer: "standin-token",
        fetch: (r) => fetch(r),
        headersTimeoutMs: 10_000,
        bodyTimeoutMs: 10_000,
      }),
      model: "codex/default",
    });
    return {
      provider,
      environment: async () => (await provider.ensureEnvironment({ ownerKey: uid("owner"), known: null })).record,
      messages: { plain: "hello bridge peer", slow: "[hang] a long job", ask: "" },
      answers: { first: {}, other: {} },
      refusesBusySession: false,
      runsStarted: async () => {
        const counters = (await (
          await fetch(`${url}_standin/counters`, { headers: { authorization: "Bearer standin-token" } })
        ).json()) as { counters: { runsStarted: Record<string, number> } };
        return Object.values(counters.counters.runsStarted).reduce((a, b) => a + b, 0);
      },
      environmentsCanVanish: false,
      namesSessions: true,
    };
  },
  { interactions: false },
);
