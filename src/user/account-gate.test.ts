import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AccountDeletion } from "../schemas/environment";
import { beginsDeletion, deletionSeenBy, gateFor, pendingDeletion } from "./account-gate";
import type { DeletionRecord } from "./account-store";

const BEGAN = Date.UTC(2025, 0, 1);
/** The clock skew tokens are allowed: a token must be issued this long after a deletion began to open a fresh account. */
const SKEW_MS = 60_000;

const underWay = (extra: Partial<DeletionRecord> = {}): DeletionRecord => ({
  userId: "u1",
  beganAt: BEGAN,
  step: "conversations",
  conversationsDeleted: 2,
  lastError: null,
  finishedAt: null,
  ...extra,
});
const finished = (extra: Partial<DeletionRecord> = {}): DeletionRecord =>
  underWay({ userId: null, step: "done", finishedAt: BEGAN + 5_000, ...extra });

/** Seconds since the epoch of a token issued `ms` after the deletion began. */
const issuedAfter = (ms: number) => (BEGAN + ms) / 1000;

const arbIssuedAt = fc.option(fc.integer({ min: 0, max: 4_000_000_000 }), { nil: null });
const arbRecord: fc.Arbitrary<DeletionRecord> = fc.record({
  userId: fc.option(fc.string(), { nil: null }),
  beganAt: fc.integer({ min: 0, max: 4_000_000_000_000 }),
  step: fc.constantFrom(...AccountDeletion.shape.step.options),
  conversationsDeleted: fc.nat(),
  lastError: fc.option(fc.string(), { nil: null }),
  finishedAt: fc.option(fc.integer({ min: 0, max: 4_000_000_000_000 }), { nil: null }),
});

describe("the account's gate", () => {
  it("serves every request of an account no deletion ever touched", () => {
    fc.assert(
      fc.property(arbIssuedAt, fc.boolean(), (issuedAt, account) => {
        expect(gateFor(null, issuedAt, account)).toEqual({ open: true });
        expect(deletionSeenBy(null, issuedAt)).toBeNull();
        expect(beginsDeletion(null, issuedAt)).toBe(true);
        expect(pendingDeletion(null)).toBeNull();
      }),
    );
  });

  it("always serves the account routes, whatever the deletion", () => {
    fc.assert(
      fc.property(arbRecord, arbIssuedAt, (record, issuedAt) => {
        expect(gateFor(record, issuedAt, true)).toEqual({ open: true });
      }),
    );
  });

  it("refuses everything else while a deletion runs, a token issued after it began included", () => {
    fc.assert(
      fc.property(arbRecord, arbIssuedAt, (record, issuedAt) => {
        const gate = gateFor({ ...record, finishedAt: null }, issuedAt, false);
        expect(gate).toMatchObject({ open: false, code: "account_deleting" });
      }),
    );
    expect(gateFor(underWay(), issuedAfter(10 * SKEW_MS), false)).toEqual({
      open: false,
      code: "account_deleting",
      message: "this account is being deleted: its conversations and sandbox can no longer be read or used",
    });
  });

  it("once a deletion finished, refuses a token issued before it began, or within the skew after", () => {
    for (const issuedAt of [null, issuedAfter(-3_600_000), issuedAfter(0), issuedAfter(SKEW_MS)]) {
      expect(gateFor(finished(), issuedAt, false)).toEqual({
        open: false,
        code: "account_deleted",
        message: "this account was deleted; sign in again for a new, empty account",
      });
    }
  });

  it("opens a fresh account to a token issued more than the skew after the finished deletion began", () => {
    expect(gateFor(finished(), issuedAfter(SKEW_MS + 1_000), false)).toEqual({ open: true });
    fc.assert(
      fc.property(arbRecord, fc.integer({ min: 1, max: 1_000_000_000 }), (record, past) => {
        const done = { ...record, finishedAt: record.beganAt + 1 };
        // Whole seconds past the skew: the token's time has a second's grain.
        const issuedAt = Math.ceil((done.beganAt + SKEW_MS) / 1000) + past;
        expect(gateFor(done, issuedAt, false)).toEqual({ open: true });
      }),
    );
  });
});

describe("the deletion as a token sees it", () => {
  it("shows a deletion under way to every token, with its step, times, count and last error", () => {
    const record = underWay({ lastError: "upstream said no" });
    for (const issuedAt of [null, issuedAfter(0), issuedAfter(10 * SKEW_MS)]) {
      expect(deletionSeenBy(record, issuedAt)).toEqual({
        state: "deleting",
        step: "conversations",
        beganAt: new Date(BEGAN).toISOString(),
        finishedAt: null,
        conversationsDeleted: 2,
        lastError: "upstream said no",
      });
    }
  });

  it("shows a finished deletion to the tokens of the account it deleted, and none to a fresh account's", () => {
    expect(deletionSeenBy(finished(), issuedAfter(0))).toEqual({
      state: "deleted",
      step: "done",
      beganAt: new Date(BEGAN).toISOString(),
      finishedAt: new Date(BEGAN + 5_000).toISOString(),
      conversationsDeleted: 2,
      lastError: null,
    });
    expect(deletionSeenBy(finished(), issuedAfter(SKEW_MS + 1_000))).toBeNull();
  });

  it("a token sees no deletion exactly when the gate lets it in and it may begin a new one", () => {
    fc.assert(
      fc.property(arbRecord, arbIssuedAt, (record, issuedAt) => {
        const open = gateFor(record, issuedAt, false).open;
        expect(deletionSeenBy(record, issuedAt) === null).toBe(open);
        expect(beginsDeletion(record, issuedAt)).toBe(open);
      }),
    );
  });
});

describe("the deletion under way", () => {
  it("is the record's user id and next step while it runs, and none once it finished", () => {
    expect(pendingDeletion(underWay())).toEqual({ userId: "u1", step: "conversations" });
    expect(pendingDeletion(finished())).toBeNull();
    expect(pendingDeletion(finished({ userId: "u1" }))).toBeNull();
  });

  it("leaves a deletion under way as it is, whoever asks", () => {
    fc.assert(
      fc.property(arbRecord, arbIssuedAt, (record, issuedAt) => {
        expect(beginsDeletion({ ...record, finishedAt: null }, issuedAt)).toBe(false);
      }),
    );
  });
});
