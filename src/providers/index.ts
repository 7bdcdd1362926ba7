/**
 * Builds the provider the configuration selects. The emulator is the Tangle provider itself,
 * with the emulator object's `fetch` in place of the network: the same client, routes and parser.
 */
import type { Config } from "../config";
import { CliBridgeProvider } from "./cli-bridge/provider";
import { ProviderError } from "./errors";
import { type FetchLike, HttpTransport } from "./http";
import type { AgentProvider } from "./provider";
import { TangleProvider } from "./tangle/provider";

const EMULATOR_BASE_URL = "http://sandbox-emulator.local";
const EMULATOR_OBJECT_NAME = "default";

export function emulatorFetch(env: Env): FetchLike {
  const emulator = env.SANDBOX_EMULATOR;
  // Only wrangler.toml's `local` environment binds the emulator: a deploy has none.
  if (!emulator) throw new ProviderError("not_configured", "the Sandbox emulator exists only in local development");
  const stub = emulator.get(emulator.idFromName(EMULATOR_OBJECT_NAME));
  return (request) => stub.fetch(request);
}

export function createProvider(config: Config, env: Env): AgentProvider {
  if (config.provider === "cli-bridge") {
    return new CliBridgeProvider({
      transport: new HttpTransport({
        baseUrl: config.CLI_BRIDGE_URL!,
        bearer: config.CLI_BRIDGE_TOKEN ?? "",
        fetch: (request) => fetch(request),
        headersTimeoutMs: config.CLI_BRIDGE_HEADERS_TIMEOUT_MS,
        bodyTimeoutMs: config.CLI_BRIDGE_BODY_TIMEOUT_MS,
      }),
      ...(config.CLI_BRIDGE_MODEL ? { model: config.CLI_BRIDGE_MODEL } : {}),
      ...(config.CLI_BRIDGE_EXECUTION ? { execution: config.CLI_BRIDGE_EXECUTION } : {}),
      ...(config.CLI_BRIDGE_CWD ? { cwd: config.CLI_BRIDGE_CWD } : {}),
      capabilityRecheckMs: config.CAPABILITIES_RECHECK_MS,
      sessionIdleMs: config.CLI_BRIDGE_SESSION_IDLE_MS,
    });
  }
  const isEmulator = config.provider === "emulator";
  const client = new HttpTransport({
    baseUrl: isEmulator ? EMULATOR_BASE_URL : config.sandboxBaseUrl,
    bearer: isEmulator ? "emulator-local-key" : config.TANGLE_API_KEY!,
    fetch: isEmulator ? emulatorFetch(env) : (request) => fetch(request),
    headersTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
    bodyTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
  });
  return new TangleProvider({
    client,
    backend: config.AGENT_BACKEND,
    model: config.AGENT_MODEL,
    ...(config.AGENT_MODEL_CREDENTIAL && config.AGENT_MODEL_CREDENTIAL_BASE_URL
      ? {
          modelCredential: { name: config.AGENT_MODEL_CREDENTIAL, baseUrl: config.AGENT_MODEL_CREDENTIAL_BASE_URL },
        }
      : {}),
    git: config.AGENT_GIT_URL
      ? { url: config.AGENT_GIT_URL, ...(config.AGENT_GIT_REF ? { ref: config.AGENT_GIT_REF } : {}) }
      : undefined,
    readyTimeoutMs: config.SANDBOX_READY_TIMEOUT_MS,
    admissionTimeoutMs: config.ADMISSION_TIMEOUT_MS,
    limits: {
      idleTimeoutSeconds: config.SANDBOX_IDLE_TIMEOUT_SECONDS,
      maxLifetimeSeconds: config.SANDBOX_MAX_LIFETIME_SECONDS,
    },
    workspaceRoot: config.SANDBOX_WORKSPACE_ROOT,
    readyPollMs: isEmulator ? Math.min(config.SANDBOX_READY_POLL_MS, 100) : config.SANDBOX_READY_POLL_MS,
  });
}
