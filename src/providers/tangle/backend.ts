/**
 * The `backend` object a sandbox is created with and each turn is dispatched with
 * (agent-provider-tangle, "Per-turn backend options"), and the same object without its bearer
 * material, as a request digest reads it. Pure. In one place so the sandbox's backend and a turn's
 * cannot drift apart.
 */
import type { DispatchInput } from "../provider";
import type { BackendConfig } from "./wire";

/** The deployment's configuration: the backend type, and the model route used when a turn names none. */
export interface BackendDefaults {
  backend: string;
  model?: string;
}

/**
 * A model route as the backend's `model` object (agent-provider-tangle, "Per-turn backend
 * options"): a `provider/model` route splits at its first slash (`anthropic/claude-sonnet-4` →
 * `{ provider: "anthropic", model: "claude-sonnet-4" }`); a model without one is `{ model }`.
 */
function backendModel(route: string): NonNullable<BackendConfig["model"]> {
  const slash = route.indexOf("/");
  return slash > 0 && slash < route.length - 1
    ? { provider: route.slice(0, slash), model: route.slice(slash + 1) }
    : { model: route };
}

/**
 * The backend for a turn on `model` (the deployment's default when omitted), with the turn's
 * interaction posture; `options`: the turn's backend options, whose type and model object win.
 */
export function backendFor(
  defaults: BackendDefaults,
  model: string | undefined,
  interactions?: DispatchInput["interactions"],
  options?: DispatchInput["backend"],
): BackendConfig {
  const chosen = options?.model ?? ((model ?? defaults.model) ? backendModel((model ?? defaults.model)!) : undefined);
  return {
    type: options?.type ?? defaults.backend,
    ...(chosen ? { model: chosen } : {}),
    ...(interactions ? { interactions } : {}),
  };
}

/** Removes bearer material so a rotated credential is the same request (agent-provider-tangle, request digests). */
export function backendWithoutBearer(backend: BackendConfig | undefined): unknown {
  if (!backend?.model) return backend;
  const { apiKey: _dropped, authFiles, ...model } = backend.model;
  return {
    ...backend,
    model: { ...model, ...(authFiles ? { authFiles: authFiles.map((f) => ({ path: f.path, mode: f.mode })) } : {}) },
  };
}
