import { describe, expect, it } from "vitest";
import { bridgeClaims, supportsRetainedSessions } from "./claims";
import { CapabilityDocument } from "./wire";

/** A Pi route's document (transcript 20), reduced to the groups the claims read. */
const pi = {
  streaming: { live: true, replay: true, detach: true, turnIdempotency: true },
  sessions: { continue: true },
  retainedControl: { exactRunIdentity: true, resultIdentity: true, eventIdentity: true, cancellationIdempotency: true },
  nativeContinuation: { atomicBoundary: true, requestIdempotency: true },
  interactions: { kinds: ["permission"], replay: true, responseIdempotency: true },
};

/** The document as the provider reads it off the wire, then its claims. */
const read = (doc: unknown) => bridgeClaims(CapabilityDocument.parse(doc));

describe("reading a CLI Bridge route's capability document", () => {
  it("a full Pi document claims retained control and its permission asks", () => {
    expect(read(pi)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: true,
      interactionKinds: ["permission"],
      fork: false,
    });
    expect(supportsRetainedSessions(CapabilityDocument.parse(pi))).toBe(true);
  });

  it("a missing group drops only what it gates", () => {
    const { interactions: _i, ...noInteractions } = pi;
    expect(read(noInteractions)).toEqual({ ...read(pi), interactions: false, interactionKinds: [] });
    const { nativeContinuation: _n, ...oneShot } = pi;
    expect(supportsRetainedSessions(CapabilityDocument.parse(oneShot))).toBe(false);
    expect(read(oneShot)).toEqual({
      detach: true,
      replay: true,
      cancelRun: true,
      interactions: false,
      interactionKinds: [],
      fork: false,
    });
    const { streaming: _s, ...noStreaming } = pi;
    expect(read(noStreaming)).toEqual({
      detach: false,
      replay: false,
      cancelRun: false,
      interactions: false,
      interactionKinds: [],
      fork: false,
    });
  });

  it("a group that is not an object, or a flag that is not a boolean, is not a claim; the rest stands", () => {
    expect(read({ ...pi, interactions: "permission" })).toEqual({
      ...read(pi),
      interactions: false,
      interactionKinds: [],
    });
    expect(read({ ...pi, streaming: null })).toEqual(read({ ...pi, streaming: undefined }));
    expect(read({ ...pi, streaming: { ...pi.streaming, replay: "true" } })).toMatchObject({
      detach: true,
      replay: false,
      cancelRun: false,
    });
  });

  it("fields and groups it does not read are ignored, whatever their shape", () => {
    expect(read({ ...pi, profile: "v2", workspace: [1], futureGroup: { flag: true }, observation: null })).toEqual(
      read(pi),
    );
  });
});
