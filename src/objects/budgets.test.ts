import { describe, expect, it } from "vitest";
import type { TotalView } from "../schemas/api";
import { tightestBudget } from "./budgets";

const total = (inputTokens: number | null, outputTokens: number | null, complete = true): TotalView => ({
  inputTokens,
  outputTokens,
  reasoningTokens: null,
  cacheReadInputTokens: null,
  cacheCreationInputTokens: null,
  cost: null,
  conflict: false,
  complete,
  unknown: complete ? [] : ["outputTokens"],
});
const nothingElsewhere = { used: 0, complete: true };

describe("token budgets", () => {
  it("no limit set: no budget", () => {
    expect(tightestBudget(total(10, 10), nothingElsewhere, {})).toBeNull();
  });

  it("is exceeded when the limit is reached exactly, not only when passed", () => {
    expect(tightestBudget(total(60, 39), nothingElsewhere, { perConversation: 100 })).toMatchObject({ used: 99, exceeded: false });
    expect(tightestBudget(total(60, 40), nothingElsewhere, { perConversation: 100 })).toMatchObject({ used: 100, exceeded: true });
  });

  it("the user's budget counts the other conversations; the tightest applies", () => {
    const budget = tightestBudget(total(50, 0), { used: 900, complete: true }, { perConversation: 200, perUser: 1000 });
    expect(budget).toEqual({ scope: "user", tokens: 1000, used: 950, complete: true, exceeded: false });
    expect(tightestBudget(total(150, 0), { used: 100, complete: true }, { perConversation: 200, perUser: 1000 })?.scope).toBe("conversation");
  });

  it("a floor stays a floor: unknown usage anywhere makes the figure incomplete", () => {
    expect(tightestBudget(total(50, null, false), nothingElsewhere, { perConversation: 100 })).toMatchObject({ used: 50, complete: false });
    expect(tightestBudget(total(50, 5), { used: 10, complete: false }, { perUser: 100 })).toMatchObject({ used: 65, complete: false });
  });
});
