/**
 * The account's gate (docs/api.md#deleting-an-account), pure: from the deletion record (./account-store.ts), what a
 * request of a token issued at `issuedAtSeconds` may do, and what it sees of the deletion. A request belongs to the
 * account its token was issued for: while a deletion runs nothing is served (but the account routes); once it
 * finished, a token issued before it began is refused everywhere but the account routes, and one issued later opens
 * a fresh account, which sees no deletion and may delete itself in turn. ./account.ts applies it (the fence).
 */
import type { AccountDeletion, DeletionStep } from "../schemas/environment";
import type { DeletionRecord } from "./account-store";

/**
 * How long after a deletion began a token must have been issued to open a fresh account: the
 * clock skew tokens are allowed (src/auth/tokens.ts), so a token issued before the deletion never
 * passes for a later one.
 */
const FRESH_TOKEN_AFTER_MS = 60_000;

/** What a request may do while (or after) the account is deleted. */
export type Gate = { open: true } | { open: false; code: "account_deleting" | "account_deleted"; message: string };

/** A token issued this long after a finished deletion began belongs to a fresh account. */
function freshAfter(record: DeletionRecord, issuedAtSeconds: number | null): boolean {
  return (
    record.finishedAt !== null &&
    issuedAtSeconds !== null &&
    issuedAtSeconds * 1000 > record.beganAt + FRESH_TOKEN_AFTER_MS
  );
}

/**
 * Whether a request of a token issued at `issuedAtSeconds` is served (`account`: GET or DELETE
 * /v1/me), given the deletion record (null: none ever began).
 */
export function gateFor(record: DeletionRecord | null, issuedAtSeconds: number | null, account: boolean): Gate {
  if (!record || freshAfter(record, issuedAtSeconds) || account) return { open: true };
  if (record.finishedAt === null)
    return {
      open: false,
      code: "account_deleting",
      message: "this account is being deleted: its conversations and sandbox can no longer be read or used",
    };
  return {
    open: false,
    code: "account_deleted",
    message: "this account was deleted; sign in again for a new, empty account",
  };
}

/** A deletion under way (begun and not finished): its user id and next step. */
export function pendingDeletion(record: DeletionRecord | null): { userId: string; step: DeletionStep } | null {
  if (!record || record.finishedAt !== null || record.userId === null) return null;
  return { userId: record.userId, step: record.step };
}

/**
 * The deletion as a token issued at `issuedAtSeconds` sees it (null: none, or one before this
 * token's fresh account).
 */
export function deletionSeenBy(record: DeletionRecord | null, issuedAtSeconds: number | null): AccountDeletion | null {
  if (!record || freshAfter(record, issuedAtSeconds)) return null;
  return {
    state: record.finishedAt === null ? "deleting" : "deleted",
    step: record.step,
    beganAt: new Date(record.beganAt).toISOString(),
    finishedAt: record.finishedAt === null ? null : new Date(record.finishedAt).toISOString(),
    conversationsDeleted: record.conversationsDeleted,
    lastError: record.lastError,
  };
}

/**
 * Whether a token issued at `issuedAtSeconds` begins a new deletion: one under way, or one
 * finished for this token, stays as it is.
 */
export function beginsDeletion(record: DeletionRecord | null, issuedAtSeconds: number | null): boolean {
  // A fresh account's token comes after a finished deletion only: one under way is never begun again.
  return !record || freshAfter(record, issuedAtSeconds);
}
