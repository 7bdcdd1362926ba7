/**
 * The emulator's backend catalog (`GET /v1/backends` [ours], docs/sandbox-wire.md §2): several
 * backends with different capabilities, so a gateway's checks against a catalog are testable. The
 * route's answer is not public; the variant `catalog` serves each plausible shape (`{ backends }`,
 * `{ data: { backends } }`, a bare array) or none (404, a deployment without the route).
 */
interface CatalogBackend {
  type: string;
  models?: string[];
  defaultModel?: string;
  capabilities?: {
    interactions?: boolean;
    runtimeAttachments?: boolean;
    systemPrompt?: { replace?: boolean; append?: boolean };
    perTurnModel?: boolean;
  };
}

const CATALOG: readonly CatalogBackend[] = [
  {
    type: "opencode",
    models: ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "zai/glm-5.2"],
    defaultModel: "anthropic/claude-sonnet-4-5",
    capabilities: {
      interactions: true,
      runtimeAttachments: true,
      systemPrompt: { replace: false, append: true },
      perTurnModel: true,
    },
  },
  {
    type: "claude-code",
    models: ["anthropic/claude-opus-4-5", "anthropic/claude-sonnet-4-5"],
    defaultModel: "anthropic/claude-sonnet-4-5",
    capabilities: {
      interactions: true,
      runtimeAttachments: true,
      systemPrompt: { replace: true, append: true },
      perTurnModel: true,
    },
  },
  {
    type: "codex",
    models: ["openai/gpt-5-codex"],
    capabilities: {
      interactions: false,
      runtimeAttachments: false,
      systemPrompt: { replace: false, append: true },
      perTurnModel: false,
    },
  },
  // A backend whose entry states little: what it does not state is unknown.
  { type: "pi", capabilities: { interactions: true } },
];

/** Whether the catalog has a backend of this type. */
export const knownBackend = (type: string): boolean => CATALOG.some((b) => b.type === type);

/** Whether the catalog says the backend takes runtime attachments (a backend not saying so does not). */
export const takesAttachments = (type: string): boolean =>
  CATALOG.find((b) => b.type === type)?.capabilities?.runtimeAttachments === true;

/** The catalog in the answer shape of the variant in force. */
export function catalogAnswer(shape: "backends" | "data" | "array"): unknown {
  const backends = CATALOG.map((b) => structuredClone(b));
  if (shape === "array") return backends;
  return shape === "data" ? { data: { backends } } : { backends };
}
