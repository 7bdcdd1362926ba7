import { describe, expect, it } from "vitest";
import type { TurnRecord } from "./store/records";
import { decideTurn, executionIdFor, turnRequestDigest } from "./turn-cache";

const turn = (status: TurnRecord["status"], requestDigest = "d1"): TurnRecord => ({
  turnId: "t1", ordinal: 1, parentTurnId: null, branch: 0, requestDigest, request: { message: "m" }, executionId: "e1", status, controlRef: null,
  upstreamCursor: null, resultText: null, answerInParts: false, error: null, usage: null, cancelReason: null, acceptedSeq: 1, lostAt: null, parts: null, createdAt: 0, startedAt: 0, updatedAt: 0, completedAt: null,
});

describe("turn decisions", () => {
  it("same id and content: cached when finished (failed too), in progress while running", () => {
    expect(decideTurn(turn("completed"), null, "d1").kind).toBe("cached");
    expect(decideTurn(turn("failed"), null, "d1").kind).toBe("cached");
    expect(decideTurn(turn("cancelled"), null, "d1").kind).toBe("cached");
    expect(decideTurn(turn("running"), turn("running"), "d1").kind).toBe("in_progress");
    expect(decideTurn(turn("pending"), turn("pending"), "d1").kind).toBe("in_progress");
  });

  it("same id, other content: conflict, whatever the state", () => {
    expect(decideTurn(turn("completed"), null, "d2").kind).toBe("conflict");
    expect(decideTurn(turn("running"), turn("running"), "d2").kind).toBe("conflict");
  });

  it("a new id while another runs: busy; otherwise new", () => {
    expect(decideTurn(null, turn("running"), "d1").kind).toBe("busy");
    expect(decideTurn(null, null, "d1").kind).toBe("new");
  });

  it("digests ignore absent optional fields and see every present one", async () => {
    expect(await turnRequestDigest({ message: "a" })).toBe(await turnRequestDigest({ message: "a", model: undefined }));
    expect(await turnRequestDigest({ message: "a" })).not.toBe(await turnRequestDigest({ message: "a", model: "m" }));
    expect(await turnRequestDigest({ message: "a", interactions: {} })).not.toBe(await turnRequestDigest({ message: "a" }));
  });

  it("execution ids are deterministic per (session, turn) and never collide across splits", async () => {
    expect(await executionIdFor("s1", "t1")).toBe(await executionIdFor("s1", "t1"));
    expect(await executionIdFor("s1", "t1")).not.toBe(await executionIdFor("s1", "t2"));
    expect(await executionIdFor("ab", "c")).not.toBe(await executionIdFor("a", "bc"));
  });
});
