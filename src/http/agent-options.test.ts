import { describe, expect, it } from "vitest";
import { ApiError } from "../errors";
import { turnAgentRequest } from "./agent-options";

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return { status: err.status, code: err.code };
    throw err;
  }
  return null;
};

describe("a turn's agent request", () => {
  it("the posture stated once is the turn's; the backend keeps its type and model", () => {
    expect(
      turnAgentRequest(
        {
          providerOptions: { backend: { type: "codex", model: { model: "gpt-5" }, interactions: { question: true } } },
        },
        "tangle",
      ),
    ).toEqual({ interactions: { question: true }, backend: { type: "codex", model: { model: "gpt-5" } } });
  });

  it("the same model in both places, as a route or as the name, is not a conflict", () => {
    const backend = { model: { provider: "zai", model: "glm" } };
    expect(turnAgentRequest({ model: "zai/glm", providerOptions: { backend } }, "tangle").model).toBe("zai/glm");
    expect(turnAgentRequest({ model: "glm", providerOptions: { backend } }, "tangle").model).toBe("glm");
    expect(refusal(() => turnAgentRequest({ model: "zai/other", providerOptions: { backend } }, "tangle"))).toEqual({
      status: 400,
      code: "model_conflict",
    });
  });

  it("the same posture in both places is not a conflict; another one is", () => {
    const both = (a: Record<string, boolean>, b: Record<string, boolean>) =>
      refusal(() => turnAgentRequest({ interactions: a, providerOptions: { backend: { interactions: b } } }, "tangle"));
    expect(both({ question: true, plan: false }, { plan: false, question: true })).toBeNull();
    expect(both({ question: true }, {})).toEqual({ status: 400, code: "interactions_conflict" });
  });

  it("the CLI Bridge takes no backend options (its model is a route)", () => {
    expect(refusal(() => turnAgentRequest({ providerOptions: { backend: { type: "pi" } } }, "cli-bridge"))).toEqual({
      status: 400,
      code: "unsupported_field",
    });
    expect(turnAgentRequest({ model: "pi/x" }, "cli-bridge")).toEqual({ model: "pi/x" });
  });
});
