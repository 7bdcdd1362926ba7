// The Sandbox emulator in a process of its own, for the `agents` section's `cpu` and `concurrent`
// parts (AGENTS_EMULATOR=apart, the default): a `wrangler dev` serving only the emulator
// (bench/emulator-server/), and a gateway dev server of the section's own pointed at it as its
// Sandbox over HTTP, as at a deployment's remote Sandbox (PROVIDER=tangle, SANDBOX_BASE_URL, an
// account key): the gateway's runtime then runs only the gateway, and the emulator's CPU is read
// from its own workerd. `same` keeps the shared dev server, the emulator inside its runtime.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startWrangler } from "../scripts/devserver.mjs";
import { benchPort, client, signIn, sseTurnEnd, startBenchServer, timedRead, untilInterrupted } from "./harness.mjs";
import { quietInspector, runtimeBase } from "./workerd.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * `wrangler dev --config <config>` on `port` (else the next of BENCH_PORTS, else a free port),
 * throwaway state, its own process group (its pid) (scripts/devserver.mjs), with the runtime's
 * network reports to wrangler's inspector proxy off where it could (`inspectorQuiet`). `label`
 * names it in errors.
 */
export async function startWranglerDev(config, label, port = undefined) {
  port ??= (await benchPort()) ?? (await freePort());
  const server = await startWrangler({ config, label, port, timeoutMs: 90_000 });
  // As the gateway's dev server (harness.startBenchServer): no network reports to wrangler's inspector proxy.
  const inspectorQuiet = await quietInspector(server.pid, () => fetch(`${server.base}/healthz`));
  return { ...server, inspectorQuiet };
}

/** The account key the gateway sends the emulator's server (which takes any bearer token): not a secret. */
const LOCAL_KEY = "bench-emulator-apart-key";

/**
 * The emulator's server and a gateway dev server pointed at it, the gateway signed in and warmed
 * up (its sandbox provisioned, everything compiled once): a context as the sections get one
 * (`base`, `api`, `auth`, `server`), with `emulator` (`base`, `api`: its control routes, `pid`: its
 * process group, `via`) and `stop()`. Everything reaches the emulator at its runtime's own address
 * when found (`via: "runtime"`), as the raw streams' reader does: no hop through its wrangler dev's
 * proxy in the gateway's upstream that the raw reference does not also take; else its proxy.
 */
export async function startApart({ results, problems }) {
  const emulatorServer = await startWranglerDev(
    join(root, "bench", "emulator-server", "wrangler.toml"),
    "the emulator's server",
  );
  const done = untilInterrupted(() => emulatorServer.stop());
  let server = null;
  const stop = () => {
    server?.stop();
    emulatorServer.stop();
    done();
  };
  try {
    const direct = await runtimeBase(emulatorServer.pid, () => fetch(`${emulatorServer.base}/healthz`));
    const base = direct ?? emulatorServer.base;
    server = await startBenchServer({
      vars: { PROVIDER: "tangle", SANDBOX_BASE_URL: base, SANDBOX_READY_POLL_MS: "100" },
      secrets: { TANGLE_API_KEY: LOCAL_KEY },
    });
    const health = await (await fetch(`${server.base}/healthz`)).json();
    if (health.provider !== "tangle") throw new Error(`the gateway's provider is ${health.provider}, not tangle`);
    for (const [name, s] of [
      ["gateway", server],
      ["emulator", emulatorServer],
    ])
      if (!s.inspectorQuiet)
        problems.push(`agents (emulator apart): the ${name}'s network reports to its inspector proxy are still on`);
    const ctx = { ...(await signIn(server.base)), results, problems, server };
    const emulator = { base, api: client(base), pid: emulatorServer.pid, via: direct ? "runtime" : "proxy" };
    await ctx.api.post("/v1/conversations/warm/turns", { turnId: "w1", message: "warm up" }, ctx.auth);
    await timedRead(`${ctx.base}/v1/conversations/warm/events`, ctx.auth, sseTurnEnd);
    await emulator.api.faults({ frameDelayMs: 0 });
    return { ...ctx, emulator, stop, output: () => `${server.output()}\n--- emulator ---\n${emulatorServer.output()}` };
  } catch (err) {
    stop();
    throw err;
  }
}
