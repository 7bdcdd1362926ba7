import { describe, expect, it } from "vitest";
import { Refusal } from "../errors";
import type { AgentCatalog } from "../schemas/agents";
import { agentInputs, checkAgainstCatalog } from "./agent-inputs";

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

describe("a turn's attachments", () => {
  const png = {
    id: "att_AAAAAAAAAAAA",
    path: "uploads/AAAAAAAAAAAA-a.png",
    name: "a.png",
    size: 2048,
    mediaType: "image/png",
  };
  const txt = {
    id: "att_BBBBBBBBBBBB",
    path: "uploads/BBBBBBBBBBBB-b.txt",
    name: "b.txt",
    size: 3 * 1024 * 1024,
    mediaType: "text/plain",
  };
  const deps = (read: () => Promise<AgentCatalog> = async () => catalog) => ({
    catalog: read,
    settings: async () => ({}),
    defaultBackend: "opencode",
    attachments: (ids: readonly string[]) => [png, txt].filter((a) => ids.includes(a.id)),
  });
  const context = { sessionId: "s", conversationId: "c", ownerKey: "o" };

  it("the message says where each is; an image is a part where the catalog says attachments: true", async () => {
    const inputs = await agentInputs(deps(), context, { message: "see", attachments: [png.id, txt.id] });
    expect(inputs.message).toBe(
      `see\n\nAttached: ${png.path}, image/png, 2 KB\nAttached: ${txt.path}, text/plain, 3.0 MB`,
    );
    expect(inputs.images).toEqual([{ path: png.path, mediaType: "image/png", name: "a.png" }]);
  });

  it("no image part where the catalog says false, unavailable, or cannot be read", async () => {
    for (const type of ["codex", "pi"]) {
      const inputs = await agentInputs(deps(), context, { message: "m", attachments: [png.id], backend: { type } });
      expect(inputs.images).toBeUndefined();
      expect(inputs.message).toContain(png.path);
    }
    const failing = deps(async () => {
      throw new Error("catalog down");
    });
    expect((await agentInputs(failing, context, { message: "m", attachments: [png.id] })).images).toBeUndefined();
  });

  it("an id the conversation did not issue is refused, naming it", async () => {
    const err = await agentInputs(deps(), context, { message: "m", attachments: [png.id, "att_CCCCCCCCCCCC"] }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Refusal);
    expect((err as Refusal).code).toBe("attachment_not_found");
    expect((err as Refusal).details?.missing).toEqual(["att_CCCCCCCCCCCC"]);
  });
});
