import { describe, expect, it } from "vitest";
import { ProviderError } from "../providers/errors";
import { type DispatchTries, rekeyedTurnId, retryStep } from "./dispatch-retry";

const first: DispatchTries = { attempt: 1, recovered: false, rekeyed: 0 };
const ref = (sessionId: string, executionId = "exec-other") => ({
  runId: executionId,
  provider: "tangle",
  environmentId: "env",
  sessionId,
  executionId,
  requestDigest: `sha256:${"0".repeat(64)}`,
});
const mismatch = (admittedRef: unknown, earlier?: boolean) =>
  new ProviderError("admission_mismatch", "another run was admitted", {
    details: { admittedRef, ...(earlier !== undefined ? { earlier } : {}) },
  });

describe("what a dispatch does after upstream refused it", () => {
  it("an environment gone or stopped is recovered once, then the error stands", () => {
    for (const code of ["environment_gone", "environment_not_running"] as const) {
      expect(retryStep(new ProviderError(code, "gone"), first, "s")).toEqual({ kind: "recover" });
      expect(retryStep(new ProviderError(code, "gone"), { ...first, attempt: 2, recovered: true }, "s")).toEqual({
        kind: "refuse",
      });
    }
  });

  it("a run admitted in our place, in our session, is replaced: the turn goes again once under a new key", () => {
    const admitted = ref("s");
    expect(retryStep(mismatch(admitted), first, "s")).toEqual({
      kind: "replaced",
      admitted,
      rekeyed: 1,
      exhausted: false,
    });
    // A second run started in place of ours by a call of ours passes the bound: it is stopped, and the turn refused.
    expect(retryStep(mismatch(admitted), { attempt: 2, recovered: false, rekeyed: 1 }, "s")).toEqual({
      kind: "replaced",
      admitted,
      rekeyed: 2,
      exhausted: true,
    });
  });

  it("a run an earlier dispatch left only names the next key: it does not count, but the chain of keys is bounded", () => {
    const admitted = ref("s");
    expect(retryStep(mismatch(admitted, true), { attempt: 2, recovered: false, rekeyed: 1 }, "s")).toEqual({
      kind: "replaced",
      admitted,
      rekeyed: 1,
      exhausted: false,
    });
    expect(retryStep(mismatch(admitted, true), { attempt: 12, recovered: false, rekeyed: 0 }, "s")).toMatchObject({
      exhausted: false,
    });
    expect(retryStep(mismatch(admitted, true), { attempt: 13, recovered: false, rekeyed: 0 }, "s")).toMatchObject({
      kind: "replaced",
      exhausted: true,
    });
  });

  it("a mismatch naming a run of another session, or no readable run, is refused as it is", () => {
    expect(retryStep(mismatch(ref("someone-else")), first, "s")).toEqual({ kind: "refuse" });
    expect(retryStep(mismatch({ executionId: "half a ref" }), first, "s")).toEqual({ kind: "refuse" });
    expect(retryStep(new ProviderError("admission_mismatch", "no details"), first, "s")).toEqual({ kind: "refuse" });
  });

  it("a session still busy after our previous receipt is waited for, backing off, five times", () => {
    const busy = new ProviderError("session_busy", "busy");
    expect([1, 2, 3, 4, 5].map((attempt) => retryStep(busy, { ...first, attempt }, "s"))).toEqual(
      [100, 200, 300, 400, 500].map((delayMs) => ({ kind: "wait", delayMs })),
    );
    expect(retryStep(busy, { ...first, attempt: 6 }, "s")).toEqual({ kind: "refuse" });
  });

  it("anything else is refused at once", () => {
    for (const code of ["unavailable", "dispatch_refused", "conflict", "rate_limited"] as const) {
      expect(retryStep(new ProviderError(code, "no", { retryable: true }), first, "s")).toEqual({ kind: "refuse" });
    }
  });
});

describe("the turn key of a turn sent again in place of another run", () => {
  it("is derived from the turn and the run it replaces: the same after a crash, another for another run", async () => {
    const key = await rekeyedTurnId("turn-1", "exec-a");
    expect(key).toMatch(/^turn-1\.r-[0-9a-f]{16}$/);
    expect(await rekeyedTurnId("turn-1", "exec-a")).toBe(key);
    expect(await rekeyedTurnId("turn-1", "exec-b")).not.toBe(key);
    expect(await rekeyedTurnId("turn-2", "exec-a")).not.toMatch(/^turn-1/);
    // Length-prefixed: the boundary between the two cannot move.
    const digest = (key: string) => key.split(".r-")[1];
    expect(digest(await rekeyedTurnId("ab", "c"))).not.toBe(digest(await rekeyedTurnId("a", "bc")));
  });
});
