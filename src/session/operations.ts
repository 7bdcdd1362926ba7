/**
 * Idempotent commands (a cancel, an answer): an `operationId` names one command for good. What is
 * recorded under it decides a new command's fate: the same command again replays the recorded
 * acknowledgement, any other is a conflict, and only an id nothing was recorded under goes ahead
 * (docs/contracts.md "Cancellation" and "Interactions"). One rule for both kinds, so cancel and
 * answer cannot drift apart; each caller shapes its own replay and conflict acknowledgements.
 * Pure: the caller reads the record and writes the new one.
 */
import type { StoredOperation } from "./store/records";

type AckOf<K extends StoredOperation["kind"]> = Extract<StoredOperation, { kind: K }>["ack"];

export type PriorOperation<K extends StoredOperation["kind"]> =
  | { kind: "new" }
  /** The same command was acknowledged under this id: answer what it was answered. */
  | { kind: "replay"; ack: AckOf<K> }
  /**
   * Another command holds this id. `recordedDigest` is the digest it was recorded under when it is
   * of the same kind, else null: a record of another kind is not this caller's to show (an
   * answer's is a keyed hash of the answer, which no acknowledgement may carry, docs/contracts.md
   * "Interactions"; the answer's own conflict shows none either).
   */
  | { kind: "conflict"; recordedDigest: string | null };

/** What the record under an operation id says about a `kind` command whose digest is `digest`. */
export function priorOperation<K extends StoredOperation["kind"]>(
  recorded: StoredOperation | null,
  kind: K,
  digest: string,
): PriorOperation<K> {
  if (!recorded) return { kind: "new" };
  if (recorded.kind === kind && recorded.requestDigest === digest)
    return { kind: "replay", ack: recorded.ack as AckOf<K> };
  return { kind: "conflict", recordedDigest: recorded.kind === kind ? recorded.requestDigest : null };
}
