import { env } from "cloudflare:test";
import { readConfig } from "../src/config";
import { createProvider } from "../src/providers";
import { counters, setFaults, uid } from "./helpers";
import { providerContract } from "./provider-contract";

// The Tangle provider over the Sandbox emulator, which speaks the wire of docs/sandbox-wire.md.
providerContract("tangle over the Sandbox emulator", () => {
  const provider = createProvider(readConfig(env), env);
  return {
    provider,
    environment: async () => (await provider.ensureEnvironment({ ownerKey: uid("owner"), known: null })).record,
    messages: { plain: "hello there", slow: "a long job [slow] [long]", ask: "set up tests [ask]" },
    answers: {
      first: { project: "demo", framework: "vitest" },
      other: { project: "another", framework: "jest" },
    },
    runsStarted: async () => (await counters())["runs.started"] ?? 0,
    repeatFrames: (on) => setFaults(on ? { repeatFrames: true } : {}),
    environmentsCanVanish: true,
    refusesBusySession: true,
  };
});
