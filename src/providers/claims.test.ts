import { describe, expect, it } from "vitest";
import { type Claims, capabilityReadDue, NO_CLAIMS, turnShortfall } from "./claims";

const bounds = { maxAgeMs: 300_000, recheckMs: 5_000 };

describe("when a capability document is read again", () => {
  it("once it is older than the age bound, whether or not a claim was missing", () => {
    expect(capabilityReadDue(0, 299_999, bounds, false)).toBe(false);
    expect(capabilityReadDue(0, 300_000, bounds, false)).toBe(true);
    expect(capabilityReadDue(0, 300_000, bounds, true)).toBe(true);
  });

  it("sooner for a missing claim, but not before the recheck bound: a repeated refusal costs one read per bound", () => {
    expect(capabilityReadDue(1_000, 1_000, bounds, true)).toBe(false);
    expect(capabilityReadDue(1_000, 5_999, bounds, true)).toBe(false);
    expect(capabilityReadDue(1_000, 6_000, bounds, true)).toBe(true);
    expect(capabilityReadDue(1_000, 6_000, bounds, false)).toBe(false);
  });

  it("a read time that cannot be read is read again", () => {
    expect(capabilityReadDue(Number.NaN, 1_000, bounds, false)).toBe(true);
  });
});

describe("what a turn lacks", () => {
  const all: Claims = {
    detach: true,
    replay: true,
    cancelRun: true,
    interactions: true,
    interactionKinds: ["question"],
    fork: false,
  };

  it("names the streaming claims a turn cannot run without", () => {
    expect(turnShortfall(all, undefined)).toEqual({ missing: [], unsupported: [] });
    expect(turnShortfall({ ...all, replay: false }, undefined).missing).toEqual(["streaming.replay"]);
    expect(turnShortfall(NO_CLAIMS, {}).missing).toEqual(["streaming.detach", "streaming.replay"]);
  });

  it("names the requested interaction kinds not offered, false ones included; cancelRun is not a turn's", () => {
    expect(turnShortfall({ ...all, cancelRun: false }, { question: true, plan: false })).toEqual({
      missing: [],
      unsupported: ["plan"],
    });
    expect(turnShortfall({ ...all, interactions: false }, { question: true }).unsupported).toEqual(["question"]);
  });
});
