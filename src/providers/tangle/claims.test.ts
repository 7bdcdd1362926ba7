import { describe, expect, it } from "vitest";
import { unsupportedKinds } from "../claims";
import { claimsOf, claimsOf as claimsOfDoc } from "./claims";
import { SandboxCapabilities } from "./wire";

const full = {
  schema: 1,
  dispatch: { runControlRef: true, executionIdOnAdmission: true },
  cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
  runs: { executionScopedStatus: true, eventReplay: true },
  interactions: { responseDedupe: true },
  interactiveAgent: { start: true, status: true, attach: true, control: true, sendPrompt: true, stop: true },
};

const without = (group: keyof typeof full, name: string) => ({
  ...full,
  [group]: { ...(full[group] as object), [name]: undefined },
});

describe("capability claims", () => {
  it("a full document claims everything; no document claims nothing", () => {
    expect(claimsOf(full)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: true,
      interactionKinds: ["question", "permission", "plan"],
      fork: true,
      interactiveAgent: true,
    });
    expect(claimsOf(null)).toEqual({
      detach: false,
      replay: false,
      cancelRun: false,
      interactions: false,
      interactionKinds: [],
      fork: false,
      interactiveAgent: false,
    });
  });

  it("claims the agent's own terminal UI only with all six interactiveAgent flags, and nothing else hangs on them", () => {
    for (const name of ["start", "status", "attach", "control", "sendPrompt", "stop"]) {
      const { interactiveAgent, ...rest } = claimsOf(without("interactiveAgent", name));
      expect(interactiveAgent).toBe(false);
      const { interactiveAgent: _all, ...fullRest } = claimsOf(full);
      expect(rest).toEqual(fullRest);
    }
    const { interactiveAgent: _group, ...noGroup } = full;
    expect(claimsOf(noGroup).interactiveAgent).toBe(false);
  });

  it("each flag drops exactly the claims it gates (agent-provider-tangle table)", () => {
    const claimsOf = (doc: Record<string, unknown>) => {
      const { interactionKinds: _kinds, fork: _fork, interactiveAgent: _agent, ...flags } = claimsOfDoc(doc);
      return flags;
    };
    expect(claimsOf(without("dispatch", "runControlRef"))).toEqual({
      detach: false,
      replay: true,
      cancelRun: false,
      interactions: true,
    });
    expect(claimsOf(without("dispatch", "executionIdOnAdmission"))).toEqual({
      detach: false,
      replay: true,
      cancelRun: false,
      interactions: true,
    });
    expect(claimsOf(without("runs", "eventReplay"))).toEqual({
      detach: true,
      replay: false,
      cancelRun: false,
      interactions: true,
    });
    for (const [group, name] of [
      ["cancel", "canonicalRunCancellation"],
      ["cancel", "digestBound"],
      ["cancel", "idempotent"],
      ["runs", "executionScopedStatus"],
    ] as const) {
      expect(claimsOf(without(group, name))).toEqual({
        detach: true,
        replay: true,
        cancelRun: false,
        interactions: true,
      });
    }
    expect(claimsOf(without("interactions", "responseDedupe"))).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: false,
    });
  });

  it("fork is claimed with detached dispatch (the sessions guide documents it; no flag gates it)", () => {
    expect(claimsOf(full).fork).toBe(true);
    expect(claimsOf(without("dispatch", "runControlRef")).fork).toBe(false);
  });

  it("only true is a claim: false, a string or a missing group is unknown", () => {
    expect(claimsOf({ ...full, interactions: { responseDedupe: "true" } }).interactions).toBe(false);
    expect(claimsOf({ ...full, cancel: undefined }).cancelRun).toBe(false);
  });

  it("a requested interaction kind must be offered, false ones included", () => {
    const claims = claimsOf(full);
    expect(unsupportedKinds({ question: true, permission: false }, claims)).toEqual([]);
    expect(unsupportedKinds({ "vendor.kind": false, plan: true }, claims)).toEqual(["vendor.kind"]);
    expect(unsupportedKinds({ question: true }, claimsOf(without("interactions", "responseDedupe")))).toEqual([
      "question",
    ]);
    expect(unsupportedKinds({}, claimsOf(null))).toEqual([]);
  });
});

/** The document as the provider reads it off the wire, then its claims. */
const read = (doc: unknown) => claimsOf(SandboxCapabilities.parse(doc));
const { interactions: _withoutInteractions, ...noInteractionsGroup } = full;

describe("reading the capability document (sandbox-wire §6)", () => {
  it("a document without the interactions group keeps every claim its other flags back", () => {
    expect(read(noInteractionsGroup)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: false,
      interactionKinds: [],
      fork: true,
      interactiveAgent: true,
    });
  });

  it("each missing group drops only what it gates", () => {
    const { cancel: _c, ...noCancel } = full;
    expect(read(noCancel)).toEqual({ ...read(full), cancelRun: false });
    const { runs: _r, ...noRuns } = full;
    expect(read(noRuns)).toEqual({ ...read(full), replay: false, cancelRun: false });
    const { dispatch: _d, ...noDispatch } = full;
    expect(read(noDispatch)).toEqual({ ...read(full), detach: false, cancelRun: false, fork: false });
    expect(read({ schema: 1 })).toEqual(claimsOf(null));
  });

  it("fields and groups it does not read are ignored, whatever their shape", () => {
    const extra = {
      ...full,
      agentInterface: 7,
      image: { ref: "sandbox:next" },
      futureGroup: { someFlag: true },
      dispatch: { ...full.dispatch, streamingV2: "yes" },
    };
    expect(read(extra)).toEqual(read(full));
    // The interactiveAgent group is read: one that is not an object claims nothing of it.
    expect(read({ ...full, interactiveAgent: true })).toEqual({ ...read(full), interactiveAgent: false });
  });

  it("a flag that is not a boolean, or a group that is not an object, is not a claim", () => {
    expect(read({ ...full, interactions: { responseDedupe: "true" } })).toEqual({
      ...read(full),
      interactions: false,
      interactionKinds: [],
    });
    expect(read({ ...full, cancel: { ...full.cancel, idempotent: 1 } }).cancelRun).toBe(false);
    expect(read({ ...full, runs: null })).toEqual({ ...read(full), replay: false, cancelRun: false });
    expect(read({ ...full, dispatch: [true, true] })).toEqual({
      ...read(full),
      detach: false,
      cancelRun: false,
      fork: false,
    });
  });

  it("a document of another schema, or none at all, is not read (it claims nothing)", () => {
    expect(SandboxCapabilities.safeParse({ ...full, schema: 2 }).success).toBe(false);
    expect(SandboxCapabilities.safeParse({ ...full, schema: undefined }).success).toBe(false);
    expect(SandboxCapabilities.safeParse([full]).success).toBe(false);
  });
});
