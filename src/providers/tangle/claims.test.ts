import { describe, expect, it } from "vitest";
import { unsupportedKinds } from "../claims";
import { claimsOf, claimsOf as claimsOfDoc } from "./claims";

const full = {
  schema: 1,
  dispatch: { runControlRef: true, executionIdOnAdmission: true },
  cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
  runs: { executionScopedStatus: true, eventReplay: true },
  interactions: { responseDedupe: true },
};

const without = (group: keyof typeof full, name: string) => ({ ...full, [group]: { ...(full[group] as object), [name]: undefined } });

describe("capability claims", () => {
  it("a full document claims everything; no document claims nothing", () => {
    expect(claimsOf(full)).toEqual({ detach: true, replay: true, cancelRun: true, interactions: true, interactionKinds: ["question", "permission", "plan"] });
    expect(claimsOf(null)).toEqual({ detach: false, replay: false, cancelRun: false, interactions: false, interactionKinds: [] });
  });

  it("each flag drops exactly the claims it gates (seed 000 table)", () => {
    const claimsOf = (doc: Record<string, unknown>) => {
      const { interactionKinds: _kinds, ...flags } = claimsOfDoc(doc);
      return flags;
    };
    expect(claimsOf(without("dispatch", "runControlRef"))).toEqual({ detach: false, replay: true, cancelRun: false, interactions: true });
    expect(claimsOf(without("dispatch", "executionIdOnAdmission"))).toEqual({ detach: false, replay: true, cancelRun: false, interactions: true });
    expect(claimsOf(without("runs", "eventReplay"))).toEqual({ detach: true, replay: false, cancelRun: false, interactions: true });
    for (const [group, name] of [["cancel", "canonicalRunCancellation"], ["cancel", "digestBound"], ["cancel", "idempotent"], ["runs", "executionScopedStatus"]] as const) {
      expect(claimsOf(without(group, name))).toEqual({ detach: true, replay: true, cancelRun: false, interactions: true });
    }
    expect(claimsOf(without("interactions", "responseDedupe"))).toEqual({ detach: true, replay: true, cancelRun: true, interactions: false });
  });

  it("only true is a claim: false, a string or a missing group is unknown", () => {
    expect(claimsOf({ ...full, interactions: { responseDedupe: "true" } }).interactions).toBe(false);
    expect(claimsOf({ ...full, cancel: undefined }).cancelRun).toBe(false);
  });

  it("a requested interaction kind must be offered, false ones included", () => {
    const claims = claimsOf(full);
    expect(unsupportedKinds({ question: true, permission: false }, claims)).toEqual([]);
    expect(unsupportedKinds({ "vendor.kind": false, plan: true }, claims)).toEqual(["vendor.kind"]);
    expect(unsupportedKinds({ question: true }, claimsOf(without("interactions", "responseDedupe")))).toEqual(["question"]);
    expect(unsupportedKinds({}, claimsOf(null))).toEqual([]);
  });
});
