import { describe, expect, it } from "vitest";
import { backendFor, backendWithoutBearer } from "./backend";

const defaults = { backend: "opencode", model: "zai/glm-5.2" };

describe("the backend a turn is sent with", () => {
  it("the deployment's model only on the deployment's backend; another backend runs its own default", () => {
    expect(backendFor(defaults, undefined)).toEqual({ type: "opencode", model: { provider: "zai", model: "glm-5.2" } });
    expect(backendFor(defaults, undefined, undefined, { type: "claude-code" })).toEqual({ type: "claude-code" });
    expect(backendFor(defaults, "anthropic/claude-opus-4-5", undefined, { type: "claude-code" }).model).toEqual({
      provider: "anthropic",
      model: "claude-opus-4-5",
    });
  });

  it("a user's key, attachments and prompt; none of their secrets in what a digest reads", () => {
    const backend = backendFor(defaults, undefined, { question: true }, undefined, {
      credential: { provider: "zai", key: "sk-1", baseUrl: "https://r.test/v1" },
      attachments: [{ name: "docs", url: "https://m.test", headers: { Authorization: "Bearer x" } }],
      systemPrompt: { append: "Be brief." },
    });
    expect(backend).toEqual({
      type: "opencode",
      model: { provider: "zai", model: "glm-5.2", apiKey: "sk-1", baseUrl: "https://r.test/v1" },
      profile: { prompt: { appendSystemPrompt: "Be brief." } },
      interactions: { question: true },
      runtimeAttachments: [
        { type: "mcp", name: "docs", url: "https://m.test", headers: { Authorization: "Bearer x" } },
      ],
    });
    const digested = JSON.stringify(backendWithoutBearer(backend));
    expect(digested).not.toContain("sk-1");
    expect(digested).not.toContain("Bearer x");
    expect(digested).toContain("Authorization");
  });

  it("the operator's named credential by reference, unless the turn carries the user's own key", () => {
    const named = { ...defaults, modelCredential: { name: "ROUTER_KEY", baseUrl: "https://router.test/v1" } };
    expect(backendFor(named, undefined).model).toEqual({
      provider: "zai",
      model: "glm-5.2",
      apiKeyEnv: "ROUTER_KEY",
      baseUrl: "https://router.test/v1",
    });
    expect(
      backendFor(named, undefined, undefined, undefined, { credential: { provider: "zai", key: "sk-2" } }).model,
    ).toEqual({ provider: "zai", model: "glm-5.2", apiKey: "sk-2" });
  });
});
