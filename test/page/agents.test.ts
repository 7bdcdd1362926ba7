/**
 * The agent and model picker's logic (public/lib/agents.js), in Node, on the emulator's catalog as
 * the gateway reads it (src/providers/tangle/catalog.ts over src/emulator/catalog.ts): what it
 * offers a new conversation and one with an agent, what a turn sends, and that a fact the catalog
 * reports unavailable is never offered as supported.
 */
import { describe, expect, it } from "vitest";
import { agentSent, DEFAULT_MODEL, NO_CHOICE, type PickerView, pickerView } from "../../public/lib/agents.js";
import { emptyConversation } from "../../public/lib/conversation.js";
import { reduce } from "../../public/lib/reducer.js";
import { catalogAnswer } from "../../src/emulator/catalog";
import { ProviderError } from "../../src/providers/errors";
import type { HttpTransport } from "../../src/providers/http";
import { readCatalog } from "../../src/providers/tangle/catalog";
import type { AgentCatalog } from "../../src/schemas/agents";

/** The emulator's four backends (opencode the deployment's default), as GET /v1/agents answers them. */
async function emulatorCatalog(): Promise<AgentCatalog> {
  const client = {
    json: async (_route: unknown, schema: { parse: (v: unknown) => unknown }) =>
      schema.parse(catalogAnswer("backends")),
  } as unknown as HttpTransport;
  return readCatalog(client, { backend: "opencode" });
}

const values = (view: PickerView) => view.model.groups.flatMap((g) => g.options.map((o) => o.value));
const labels = (view: PickerView) => view.model.groups.flatMap((g) => g.options.map((o) => o.label));

describe("a new conversation", () => {
  it("offers every backend and the default backend's models, and sends nothing when left alone", async () => {
    const catalog = await emulatorCatalog();
    const view = pickerView(catalog, null, NO_CHOICE);
    expect(view.backend).toEqual({
      shown: true,
      options: ["opencode", "claude-code", "codex", "pi"].map((t) => ({ value: t, label: t })),
      value: "opencode",
      disabled: false,
    });
    expect(labels(view)).toEqual([
      "Default (anthropic/claude-sonnet-4-5)",
      "anthropic/claude-sonnet-4-5",
      "openai/gpt-5",
      "zai/glm-5.2",
    ]);
    expect(view.model.value).toBe(DEFAULT_MODEL);
    expect(view.model.disabled).toBe(false);
    expect(view.send).toEqual({});
    expect(view.note).toBe("");
  });

  it("sends the picked model, and the backend when it is not the deployment's", async () => {
    const catalog = await emulatorCatalog();
    expect(pickerView(catalog, null, { backend: null, model: "zai/glm-5.2" }).send).toEqual({ model: "zai/glm-5.2" });
    const view = pickerView(catalog, null, { backend: "claude-code", model: "anthropic/claude-opus-4-5" });
    expect(values(view)).toEqual([DEFAULT_MODEL, "anthropic/claude-opus-4-5", "anthropic/claude-sonnet-4-5"]);
    expect(view.send).toEqual({
      model: "anthropic/claude-opus-4-5",
      providerOptions: { backend: { type: "claude-code" } },
    });
    // A model the picked backend does not list is not sent: its default is.
    const other = pickerView(catalog, null, { backend: "codex", model: "zai/glm-5.2" });
    expect(other.model.value).toBe(DEFAULT_MODEL);
    expect(other.send).toEqual({ providerOptions: { backend: { type: "codex" } } });
    // Its default named: the deployment's model on the deployment's backend (a turn naming none is sent
    // with it there), another backend's own default elsewhere (the deployment's model is its backend's).
    expect(labels(pickerView(catalog, null, { backend: "claude-code", model: null }))[0]).toBe(
      "Default (anthropic/claude-sonnet-4-5)",
    );
    const configured = { ...catalog, default: { backend: "opencode", model: "zai/glm-5.2" } };
    expect(labels(pickerView(configured, null, { backend: "opencode", model: null }))[0]).toBe("Default (zai/glm-5.2)");
    expect(labels(pickerView(configured, null, { backend: "claude-code", model: null }))[0]).toBe(
      "Default (anthropic/claude-sonnet-4-5)",
    );
    expect(labels(pickerView(configured, null, { backend: "codex", model: null }))[0]).toBe("Default");
    expect(labels(pickerView(catalog, null, { backend: "codex", model: null }))[0]).toBe("Default");
  });

  it("a backend whose models are unavailable offers its default only, and says why", async () => {
    const catalog = await emulatorCatalog();
    const view = pickerView(catalog, null, { backend: "pi", model: "zai/glm-5.2" });
    expect(labels(view)).toEqual(["Default"]);
    expect(view.model.disabled).toBe(true);
    expect(view.note).toBe("Model list unavailable: the Sandbox's catalog does not state it");
    expect(view.send).toEqual({ providerOptions: { backend: { type: "pi" } } });
  });

  it("shows no backend choice where a turn may not name one, or there is one backend only", async () => {
    const catalog = await emulatorCatalog();
    for (const narrowed of [
      { ...catalog, perTurnBackend: false },
      { ...catalog, backends: catalog.backends.slice(0, 1) },
    ]) {
      const view = pickerView(narrowed, null, { backend: "claude-code", model: null });
      expect(view.backend.shown).toBe(false);
      expect(view.backend.value).toBe("opencode");
      expect(view.send).toEqual({});
    }
  });

  it("a deployment without the catalog route: its backend, its default only, nothing unavailable offered", async () => {
    const client = {
      json: async () => {
        throw new ProviderError("not_found", "no route", { status: 404 });
      },
    } as unknown as HttpTransport;
    const catalog = await readCatalog(client, { backend: "opencode", model: "zai/glm-5.2" });
    const view = pickerView(catalog, null, NO_CHOICE);
    expect(view.backend.shown).toBe(false);
    expect(labels(view)).toEqual(["Default (zai/glm-5.2)"]);
    expect(view.model.disabled).toBe(true);
    expect(view.note).toMatch(/^Model list unavailable: /);
  });
});

describe("a conversation with an agent", () => {
  it("shows its agent; a model picked there is sent for that message only", async () => {
    const catalog = await emulatorCatalog();
    const agent = { backend: "opencode", model: "zai/glm-5.2", chosen: "first-turn" as const };
    const view = pickerView(catalog, agent, NO_CHOICE);
    expect(view.backend).toMatchObject({ value: "opencode", disabled: true });
    expect(view.model).toMatchObject({ value: "zai/glm-5.2", disabled: false });
    expect(values(view)).toEqual(["anthropic/claude-sonnet-4-5", "openai/gpt-5", "zai/glm-5.2"]);
    expect(view.send).toEqual({});
    expect(view.note).toBe("");
    const changed = pickerView(catalog, agent, { backend: "codex", model: "openai/gpt-5" });
    expect(changed.model.value).toBe("openai/gpt-5");
    expect(changed.note).toBe("This message only.");
    expect(changed.send).toEqual({ model: "openai/gpt-5" }); // never the backend
  });

  it("its default model shows as the default; a model not listed still shows", async () => {
    const catalog = await emulatorCatalog();
    const byDefault = pickerView(catalog, { backend: "opencode", model: null, chosen: "default" }, NO_CHOICE);
    expect(byDefault.model.value).toBe(DEFAULT_MODEL);
    expect(labels(byDefault)[0]).toBe("Default (anthropic/claude-sonnet-4-5)");
    const unlisted = pickerView(catalog, { backend: "opencode", model: "acme/old", chosen: "first-turn" }, NO_CHOICE);
    expect(unlisted.model.value).toBe("acme/old");
    expect(values(unlisted)[0]).toBe("acme/old");
  });

  it("a backend that cannot change the model per message, or does not say, keeps it fixed", async () => {
    const catalog = await emulatorCatalog();
    const codex = pickerView(
      catalog,
      { backend: "codex", model: "openai/gpt-5-codex", chosen: "first-turn" },
      { backend: null, model: "openai/gpt-5-codex" },
    );
    expect(codex.model.disabled).toBe(true);
    expect(codex.note).toBe("The model is fixed for this conversation (codex does not change it per message).");
    expect(codex.send).toEqual({});
    // pi's per-turn model change is unavailable: never offered as supported.
    const pi = pickerView(catalog, { backend: "pi", model: null, chosen: "first-turn" }, NO_CHOICE);
    expect(pi.model.disabled).toBe(true);
    expect(pi.note).toContain("changing it per message: unknown: the Sandbox's catalog does not state it");
    // A catalog whose perTurnModel is unavailable for a backend with models: still fixed.
    const unknown = {
      ...catalog,
      backends: catalog.backends.map((b) =>
        b.type === "opencode" ? { ...b, supports: { ...b.supports, perTurnModel: { unavailable: "not said" } } } : b,
      ),
    };
    const fixed = pickerView(
      unknown,
      { backend: "opencode", model: "zai/glm-5.2", chosen: "first-turn" },
      { backend: null, model: "openai/gpt-5" },
    );
    expect(fixed.model.disabled).toBe(true);
    expect(fixed.send).toEqual({});
  });

  it("a backend the catalog does not list is shown, fixed", async () => {
    const catalog = await emulatorCatalog();
    const view = pickerView(catalog, { backend: "gone", model: "x/y", chosen: "first-turn" }, NO_CHOICE);
    expect(view.backend.options[0]).toEqual({ value: "gone", label: "gone" });
    expect(view.backend.value).toBe("gone");
    expect(view.model).toMatchObject({ value: "x/y", disabled: true });
  });

  it("the snapshot's agent is kept in the conversation's state", () => {
    const agent = { backend: "claude-code", model: "anthropic/claude-opus-4-5", chosen: "first-turn" as const };
    const state = reduce(emptyConversation("c1"), {
      type: "loaded",
      transcript: { messages: [], lastEventId: 0 },
      agent,
    });
    expect(state.agent).toEqual(agent);
    expect(reduce(state, { type: "loaded", transcript: { messages: [], lastEventId: 0 } }).agent).toBeNull();
  });
});

describe("the CLI Bridge", () => {
  const bridge: AgentCatalog = {
    provider: "cli-bridge",
    default: { backend: "claude", model: "claude/sonnet" },
    perTurnBackend: false,
    backends: [
      {
        type: "claude",
        models: ["claude/sonnet", "claude/opus"],
        defaultModel: null,
        supports: {
          interactions: true,
          attachments: false,
          systemPromptReplace: false,
          systemPromptAppend: true,
          perTurnModel: true,
        },
      },
      {
        type: "codex",
        models: ["codex/gpt-5"],
        defaultModel: null,
        supports: {
          interactions: false,
          attachments: false,
          systemPromptReplace: false,
          systemPromptAppend: false,
          perTurnModel: { unavailable: "not stated" },
        },
      },
    ],
  };

  it("offers every model route under its harness, and sends the route as the model", () => {
    const view = pickerView(bridge, null, { backend: "codex", model: "codex/gpt-5" });
    expect(view.backend.shown).toBe(false);
    expect(view.model.groups.map((g) => g.label)).toEqual([null, "claude", "codex"]);
    expect(labels(view)[0]).toBe("Default (claude/sonnet)");
    expect(view.send).toEqual({ model: "codex/gpt-5" });
    expect(agentSent(bridge, view.send)).toEqual({ backend: "codex", model: "codex/gpt-5", chosen: "first-turn" });
    expect(agentSent(bridge, {})).toEqual({ backend: "claude", model: "claude/sonnet", chosen: "default" });
  });
});

describe("the agent a first turn sent chose, until the server says", () => {
  it("names the backend and model sent, else the deployment's", async () => {
    const catalog = await emulatorCatalog();
    expect(agentSent(catalog, {})).toEqual({ backend: "opencode", model: null, chosen: "default" });
    expect(
      agentSent(catalog, { model: "anthropic/claude-opus-4-5", providerOptions: { backend: { type: "claude-code" } } }),
    ).toEqual({ backend: "claude-code", model: "anthropic/claude-opus-4-5", chosen: "first-turn" });
  });
});
