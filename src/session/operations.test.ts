import { describe, expect, it } from "vitest";
import type { CancellationAcknowledgement, InteractionAcknowledgement } from "../schemas/contracts";
import { priorOperation } from "./operations";
import type { StoredOperation } from "./store/records";

const digest = (c: string) => `sha256:${c.repeat(64)}` as const;
const run = {
  runId: "run-1",
  provider: "tangle",
  environmentId: "env-1",
  sessionId: "s-1",
  executionId: "x-1",
  requestDigest: digest("a"),
};
const cancelAck: CancellationAcknowledgement = {
  operationId: "op-1",
  requestDigest: digest("c"),
  run,
  status: "accepted",
  effect: "cancel_requested",
};
const answerAck: InteractionAcknowledgement = {
  operationId: "op-1",
  binding: {
    runId: "x-1",
    provider: "tangle",
    environmentId: "env-1",
    sessionId: "s-1",
    executionId: "x-1",
    interactionId: "ask-1",
  },
  commandDigest: digest("d"),
  status: "accepted",
};
const cancel: StoredOperation = { kind: "cancel", requestDigest: digest("c"), ack: cancelAck };
const answer: StoredOperation = { kind: "answer", requestDigest: "f".repeat(64), ack: answerAck };

describe("an operation id names one command", () => {
  it("an id nothing was recorded under goes ahead", () => {
    expect(priorOperation(null, "cancel", digest("c"))).toEqual({ kind: "new" });
    expect(priorOperation(null, "answer", "f".repeat(64))).toEqual({ kind: "new" });
  });

  it("the same command again replays the acknowledgement recorded for it", () => {
    expect(priorOperation(cancel, "cancel", digest("c"))).toEqual({ kind: "replay", ack: cancelAck });
    expect(priorOperation(answer, "answer", "f".repeat(64))).toEqual({ kind: "replay", ack: answerAck });
  });

  it("another command of the same kind under the id is a conflict, naming the digest recorded", () => {
    expect(priorOperation(cancel, "cancel", digest("e"))).toEqual({ kind: "conflict", recordedDigest: digest("c") });
    expect(priorOperation(answer, "answer", "0".repeat(64))).toEqual({
      kind: "conflict",
      recordedDigest: "f".repeat(64),
    });
  });

  it("a command of another kind is a conflict even under the very digest recorded, and names no digest: an answer's keyed hash never leaves", () => {
    expect(priorOperation(answer, "cancel", answer.requestDigest)).toEqual({ kind: "conflict", recordedDigest: null });
    expect(priorOperation(cancel, "answer", cancel.requestDigest)).toEqual({ kind: "conflict", recordedDigest: null });
  });
});
