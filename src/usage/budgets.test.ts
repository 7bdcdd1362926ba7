import { describe, expect, it } from "vitest";
import type { TotalView } from "../schemas/api";
import type { Provenance } from "../schemas/common";
import { budgetUsage, type Spend, tightestBudget } from "./budgets";

const total = (
  inputTokens: number | null,
  outputTokens: number | null,
  complete = true,
  provenance: { input?: Provenance; output?: Provenance } = {},
): TotalView => ({
  inputTokens,
  outputTokens,
  reasoningTokens: null,
  cacheReadInputTokens: null,
  cacheCreationInputTokens: null,
  cost: null,
  provenance: {
    inputTokens: inputTokens === null ? null : (provenance.input ?? "measured"),
    outputTokens: outputTokens === null ? null : (provenance.output ?? "measured"),
    reasoningTokens: null,
    cacheReadInputTokens: null,
    cacheCreationInputTokens: null,
    cost: null,
  },
  conflict: false,
  complete,
  unknown: complete ? [] : ["outputTokens"],
});
const elsewhere = (used: number, complete: boolean, provenance: Provenance = "measured"): Spend => ({
  used,
  complete,
  provenance,
});
const nothingElsewhere = elsewhere(0, true);

describe("token budgets", () => {
  it("no limit set: no budget", () => {
    expect(tightestBudget(total(10, 10), nothingElsewhere, {})).toBeNull();
  });

  it("is exceeded when the limit is reached exactly, not only when passed", () => {
    expect(tightestBudget(total(60, 39), nothingElsewhere, { perConversation: 100 })).toMatchObject({
      used: 99,
      exceeded: false,
    });
    expect(tightestBudget(total(60, 40), nothingElsewhere, { perConversation: 100 })).toMatchObject({
      used: 100,
      exceeded: true,
    });
  });

  it("the user's budget counts the other conversations; the tightest applies", () => {
    const budget = tightestBudget(total(50, 0), elsewhere(900, true), { perConversation: 200, perUser: 1000 });
    expect(budget).toEqual({
      scope: "user",
      tokens: 1000,
      used: 950,
      complete: true,
      exceeded: false,
      provenance: "measured",
    });
    expect(tightestBudget(total(150, 0), elsewhere(100, true), { perConversation: 200, perUser: 1000 })?.scope).toBe(
      "conversation",
    );
  });

  it("a floor stays a floor: unknown usage anywhere makes the figure incomplete", () => {
    expect(tightestBudget(total(50, null, false), nothingElsewhere, { perConversation: 100 })).toMatchObject({
      used: 50,
      complete: false,
    });
    expect(tightestBudget(total(50, 5), elsewhere(10, false), { perUser: 100 })).toMatchObject({
      used: 65,
      complete: false,
    });
  });

  it("spend counted from estimates is an estimate, however much of it was measured (agent-provider-cli-bridge, usage provenance)", () => {
    expect(budgetUsage(total(60, 40, true, { output: "estimated" }))).toEqual({
      used: 100,
      complete: true,
      provenance: "estimated",
    });
    expect(
      tightestBudget(total(60, 40, true, { input: "estimated" }), nothingElsewhere, { perConversation: 100 }),
    ).toMatchObject({ exceeded: true, provenance: "estimated" });
    // Unknown provenance is not a measurement either; an estimate is weaker still.
    expect(budgetUsage(total(60, 40, true, { input: "unknown" })).provenance).toBe("unknown");
    expect(budgetUsage(total(60, 40, true, { input: "unknown", output: "estimated" })).provenance).toBe("estimated");
    expect(budgetUsage(total(60, 40)).provenance).toBe("measured");
  });

  it("the user's budget is as weak as the spend it counts elsewhere; nothing spent elsewhere counts nothing", () => {
    expect(tightestBudget(total(50, 0), elsewhere(900, true, "estimated"), { perUser: 1000 })).toMatchObject({
      scope: "user",
      used: 950,
      provenance: "estimated",
    });
    expect(tightestBudget(total(50, 0), elsewhere(0, true, "estimated"), { perUser: 1000 })).toMatchObject({
      provenance: "measured",
    });
    // The conversation's own budget does not count what was spent elsewhere.
    expect(
      tightestBudget(total(150, 0), elsewhere(10, true, "estimated"), { perConversation: 200, perUser: 1000 }),
    ).toMatchObject({ scope: "conversation", provenance: "measured" });
  });
});
