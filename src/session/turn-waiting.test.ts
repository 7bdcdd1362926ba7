import { describe, expect, it } from "vitest";
import { waitingStateOf } from "../../public/wire/waiting.js";
import { sameWaiting, waitingOf } from "./turn-waiting";

const ask = (interactionId: string, kind: string) => ({ interactionId, request: { kind } });

describe("what a turn waits for", () => {
  it("each kind of ask in the Sandbox's names; a namespaced kind as an interaction", () => {
    expect(waitingStateOf("question")).toBe("awaiting_question");
    expect(waitingStateOf("permission")).toBe("awaiting_permission");
    expect(waitingStateOf("plan")).toBe("awaiting_plan_decision");
    expect(waitingStateOf("acme.confirm")).toBe("awaiting_interaction");
    expect(waitingStateOf("constructor")).toBe("awaiting_interaction");
  });

  it("the oldest open ask decides; nothing open is null", () => {
    expect(waitingOf([])).toBeNull();
    expect(waitingOf([ask("p", "permission"), ask("q", "question")])).toEqual({
      waitingFor: "awaiting_permission",
      interactionId: "p",
    });
  });

  it("the same state for another ask is a change", () => {
    expect(sameWaiting(null, null)).toBe(true);
    expect(sameWaiting(waitingOf([ask("a", "question")]), waitingOf([ask("a", "question")]))).toBe(true);
    expect(sameWaiting(waitingOf([ask("a", "question")]), waitingOf([ask("b", "question")]))).toBe(false);
    expect(sameWaiting(waitingOf([ask("a", "question")]), null)).toBe(false);
  });
});
