import { describe, expect, it } from "vitest";
import { agentOfTurn, conversationAgent, overridesModel } from "./agent-choice";

const defaults = { backend: "opencode", model: null };

describe("the agent a turn runs on", () => {
  it("the first turn's own choice, with nothing kept yet", () => {
    expect(agentOfTurn({ message: "m", model: "zai/glm" }, null)).toEqual({ model: "zai/glm" });
  });

  it("a later turn naming nothing runs on the conversation's model and backend", () => {
    const conversation = { model: "a/b", backend: { type: "claude-code" } };
    expect(agentOfTurn({ message: "m" }, conversation)).toEqual(conversation);
  });

  it("a turn's own model replaces the conversation's model, backend.model included, for that turn", () => {
    const conversation = { backend: { type: "claude-code", model: { provider: "a", model: "b" } } };
    expect(agentOfTurn({ message: "m", model: "x/y" }, conversation)).toEqual({
      model: "x/y",
      backend: { type: "claude-code" },
    });
  });

  it("a turn's backend type replaces the conversation's, its model kept", () => {
    expect(agentOfTurn({ message: "m", backend: { type: "codex" } }, { model: "a/b" })).toEqual({
      model: "a/b",
      backend: { type: "codex" },
    });
  });
});

describe("the agent a conversation shows", () => {
  it("the deployment's default when the first turn named nothing (or none was kept)", () => {
    expect(conversationAgent(null, defaults, false)).toMatchObject({
      backend: "opencode",
      model: null,
      chosen: "default",
    });
    expect(conversationAgent({}, defaults, false)).toMatchObject({
      backend: "opencode",
      model: null,
      chosen: "default",
    });
  });

  it("the first turn's backend options as a route", () => {
    expect(
      conversationAgent({ backend: { type: "codex", model: { provider: "openai", model: "gpt-5" } } }, defaults, false),
    ).toMatchObject({ backend: "codex", model: "openai/gpt-5", chosen: "first-turn" });
  });

  it("on the CLI Bridge, the route's harness is the backend", () => {
    expect(
      conversationAgent({ model: "pi/tangle-router/fake-echo" }, { backend: null, model: null }, true),
    ).toMatchObject({
      backend: "pi",
      model: "pi/tangle-router/fake-echo",
      chosen: "first-turn",
    });
    expect(conversationAgent(null, { backend: null, model: null }, true)).toMatchObject({
      backend: null,
      model: null,
      chosen: "default",
    });
  });
});

describe("the deployment's model belongs to its backend", () => {
  it("a conversation on another backend with no model shows that backend's own default (null), not AGENT_MODEL", () => {
    const withModel = { backend: "opencode", model: "zai/glm-5.2" };
    expect(conversationAgent({ backend: { type: "claude-code" } }, withModel, false)).toMatchObject({
      backend: "claude-code",
      model: null,
      chosen: "first-turn",
    });
    expect(conversationAgent({ backend: { type: "opencode" } }, withModel, false).model).toBe("zai/glm-5.2");
  });
});

describe("a per-turn model change", () => {
  it("a later turn naming another model than the conversation's, as a route or a backend model", () => {
    const conversation = { model: "a/b" };
    expect(overridesModel({ message: "m", model: "a/c" }, conversation)).toBe(true);
    expect(overridesModel({ message: "m", model: "a/b" }, conversation)).toBe(false);
    expect(overridesModel({ message: "m", backend: { model: { provider: "a", model: "b" } } }, conversation)).toBe(
      false,
    );
    expect(overridesModel({ message: "m" }, conversation)).toBe(false);
    // The first turn chooses; it changes nothing.
    expect(overridesModel({ message: "m", model: "a/c" }, null)).toBe(false);
  });
});

describe("the settings a conversation shows", () => {
  it("the first turn's credential and MCP servers by name (its agent still the default); none: null and []", () => {
    expect(conversationAgent({ credential: "mine", mcpServers: ["docs"] }, defaults, false)).toEqual({
      backend: "opencode",
      model: null,
      chosen: "default",
      credential: "mine",
      mcpServers: ["docs"],
    });
    expect(conversationAgent(null, defaults, false)).toMatchObject({ credential: null, mcpServers: [] });
  });
});
