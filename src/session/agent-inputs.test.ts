import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import type { AgentCatalog } from "../schemas/agents";
import { checkAgainstCatalog } from "./agent-inputs";

const supports = (over: Partial<AgentCatalog["backends"][number]["supports"]> = {}) => ({
  interactions: true,
  attachments: true,
  systemPromptReplace: false,
  systemPromptAppend: true,
  perTurnModel: true,
  ...over,
});
const catalog: AgentCatalog = {
  provider: "tangle",
  default: { backend: "opencode", model: null },
  perTurnBackend: true,
  backends: [
    { type: "opencode", models: ["a/b"], defaultModel: null, supports: supports() },
    {
      type: "codex",
      models: ["c/d"],
      defaultModel: null,
      supports: supports({ attachments: false, perTurnModel: false }),
    },
    {
      type: "pi",
      models: { unavailable: "x" },
      defaultModel: null,
      supports: supports({ attachments: { unavailable: "not stated" } }),
    },
  ],
};

const code = (request: Parameters<typeof checkAgainstCatalog>[1], modelOverride = false) => {
  try {
    checkAgainstCatalog(catalog, request, "opencode", modelOverride);
    return null;
  } catch (err) {
    if (!(err instanceof Refusal)) throw err;
    return { code: err.code, capability: err.details?.capability ?? null };
  }
};

describe("a turn against the catalog", () => {
  it("a backend the catalog does not list is refused; the default backend needs no listing to name nothing", () => {
    expect(code({ message: "m", backend: { type: "nope" } })).toEqual({ code: "unknown_backend", capability: null });
    expect(code({ message: "m" })).toBeNull();
  });

  it("attachments need the backend to say it takes them: false and unavailable are both refused", () => {
    expect(code({ message: "m", mcpServers: ["x"] })).toBeNull();
    expect(code({ message: "m", mcpServers: ["x"], backend: { type: "codex" } })).toEqual({
      code: "capability_unsupported",
      capability: "attachments",
    });
    expect(code({ message: "m", mcpServers: ["x"], backend: { type: "pi" } })).toEqual({
      code: "capability_unsupported",
      capability: "attachments",
    });
    expect(code({ message: "m", mcpServers: [], backend: { type: "codex" } })).toBeNull();
  });

  it("a replacement of the system prompt needs replace; instructions need append", () => {
    expect(code({ message: "m", systemPrompt: "x" })).toEqual({
      code: "capability_unsupported",
      capability: "systemPromptReplace",
    });
    expect(code({ message: "m", instructions: "x" })).toBeNull();
  });

  it("a turn naming another model than its conversation's needs perTurnModel", () => {
    expect(code({ message: "m", model: "x/y", backend: { type: "codex" } }, true)).toEqual({
      code: "capability_unsupported",
      capability: "perTurnModel",
    });
    expect(code({ message: "m", model: "x/y", backend: { type: "codex" } }, false)).toBeNull();
    expect(code({ message: "m", model: "x/y" }, true)).toBeNull();
  });
});
