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
  /**
   * The deployment's named model credential (AGENT_MODEL_CREDENTIAL): the secret the Sandbox holds
   * and the endpoint it is sent to; a sandbox is created with `secrets: [name]` and every turn names
   * it, unless the turn carries a user's own key.
   */
  modelCredential?: { name: string; baseUrl: string };
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
  extras: Pick<DispatchInput, "credential" | "attachments" | "systemPrompt"> = {},
): BackendConfig {
  // The deployment's model is its backend's: a turn on another backend with no model runs that backend's own default.
  const onDefaultBackend = options?.type === undefined || options.type === defaults.backend;
  const route = model ?? (onDefaultBackend ? defaults.model : undefined);
  const chosen = options?.model ?? (route ? backendModel(route) : undefined);
  const { credential, attachments, systemPrompt } = extras;
  // A session credential: the user's key for its provider, sent with the model (the seed's session credential bundle).
  const withKey = credential
    ? {
        ...chosen,
        provider: credential.provider,
        apiKey: credential.key,
        ...(credential.baseUrl ? { baseUrl: credential.baseUrl } : {}),
      }
    : defaults.modelCredential
      ? { ...chosen, apiKeyEnv: defaults.modelCredential.name, baseUrl: defaults.modelCredential.baseUrl }
      : chosen;
  const prompt = {
    ...(systemPrompt?.replace !== undefined ? { systemPrompt: systemPrompt.replace } : {}),
    ...(systemPrompt?.append !== undefined ? { appendSystemPrompt: systemPrompt.append } : {}),
  };
  return {
    type: options?.type ?? defaults.backend,
    ...(withKey ? { model: withKey } : {}),
    ...(Object.keys(prompt).length > 0 ? { profile: { prompt } } : {}),
    ...(interactions ? { interactions } : {}),
    ...(attachments && attachments.length > 0
      ? { runtimeAttachments: attachments.map((a) => ({ type: "mcp" as const, ...a })) }
      : {}),
  };
}

/** Removes bearer material so a rotated credential is the same request (agent-provider-tangle, request digests). */
export function backendWithoutBearer(backend: BackendConfig | undefined): unknown {
  if (!backend) return backend;
  const { runtimeAttachments, ...rest } = backend;
  // An attachment's auth is bearer material too: its header names stay, their values go.
  const attachments = runtimeAttachments?.map(({ headers, ...a }) => ({
    ...a,
    ...(headers ? { headers: Object.keys(headers).sort() } : {}),
  }));
  const withAttachments = attachments ? { ...rest, runtimeAttachments: attachments } : rest;
  if (!backend.model) return withAttachments;
  const { apiKey: _dropped, authFiles, ...model } = backend.model;
  return {
    ...withAttachments,
    model: { ...model, ...(authFiles ? { authFiles: authFiles.map((f) => ({ path: f.path, mode: f.mode })) } : {}) },
  };
}
