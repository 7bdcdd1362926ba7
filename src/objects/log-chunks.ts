/**
 * The held tail's rows (docs/sse-protocol.md §12): text deltas that continue a part whose upstream
 * frame carried the part's whole text reach viewers at once and are stored later, several in one
 * row. A chunk row holds the deltas of consecutive seqs of one part of one execution, and is stored
 * at the seq of its last delta (so `seq > cursor` finds every row holding an event after the
 * cursor, and `MAX(seq)` stays the high-water mark). Read back, it is one event per delta, each
 * the same JSON, key for key, as the row the log would have stored for it alone
 * (SessionStore.appendEvent): readers of the log never see a chunk.
 *
 * Pure: the envelope of one delta, a chunk's stored text from its deltas, and the deltas back.
 */
import { z } from "zod";

/** A row of the session's event log as readers get it: one event, its seq, type and envelope JSON. */
export interface EventRow extends Record<string, SqlStorageValue> {
  seq: number;
  type: string;
  envelope: string;
}

/** The `type` column of a chunk row: never an event's type, so no reader of types meets one. */
export const CHUNK_TYPE = "message.part.deltas";
const PART_UPDATED = "message.part.updated";

/** What the deltas of one chunk share: the turn, the execution and the part (less its text). */
export interface DeltaOwner {
  turnId: string;
  executionId: string;
  part: Record<string, unknown>;
}

/** One held delta: its seq, its text and when it was logged (ms since the epoch). */
export interface HeldDelta {
  seq: number;
  delta: string;
  atMs: number;
}

/** The envelope a delta's row carries: the same keys, in the same order, as SessionStore.appendEvent writes. */
export function deltaRow(owner: DeltaOwner, held: HeldDelta): EventRow {
  const envelope = { seq: held.seq, turnId: owner.turnId, executionId: owner.executionId, type: PART_UPDATED, data: { part: owner.part, delta: held.delta }, at: new Date(held.atMs).toISOString() };
  return { seq: held.seq, type: PART_UPDATED, envelope: JSON.stringify(envelope) };
}

/**
 * A chunk as stored: the owner once, the first seq and its instant, then each delta with the
 * milliseconds since the one before it (seqs are consecutive). About the delta's text plus a few
 * bytes per delta.
 */
const StoredChunk = z.strictObject({
  turnId: z.string(),
  executionId: z.string(),
  part: z.record(z.string(), z.unknown()),
  first: z.number().int().positive(),
  at: z.number().int(),
  deltas: z.array(z.tuple([z.string(), z.number().int()])).min(1),
});

/** The stored text of a chunk of consecutive deltas of one owner. */
export function encodeChunk(owner: DeltaOwner, deltas: readonly HeldDelta[]): string {
  const first = deltas[0];
  if (!first) throw new Error("a chunk holds at least one delta");
  let previous = first.atMs;
  const out: Array<[string, number]> = [];
  deltas.forEach((held, i) => {
    if (held.seq !== first.seq + i) throw new Error("a chunk's deltas have consecutive seqs");
    out.push([held.delta, held.atMs - previous]);
    previous = held.atMs;
  });
  return JSON.stringify({ turnId: owner.turnId, executionId: owner.executionId, part: owner.part, first: first.seq, at: first.atMs, deltas: out });
}

/** The events a chunk row holds, each as the row appendEvent would have stored. */
export function expandChunk(text: string): EventRow[] {
  const chunk = StoredChunk.parse(JSON.parse(text));
  const owner: DeltaOwner = { turnId: chunk.turnId, executionId: chunk.executionId, part: chunk.part };
  let atMs = chunk.at;
  return chunk.deltas.map(([delta, ms], i) => {
    atMs += ms;
    return deltaRow(owner, { seq: chunk.first + i, delta, atMs });
  });
}

/** The first seq a stored row holds (a chunk's first delta; any other row's own seq). */
export function firstSeqOf(row: EventRow): number {
  if (row.type !== CHUNK_TYPE) return row.seq;
  return StoredChunk.parse(JSON.parse(row.envelope)).first;
}

/** The log's rows as events: each chunk row expanded into its deltas, every other row as it is. */
export function expandRows(rows: readonly EventRow[]): EventRow[] {
  const out: EventRow[] = [];
  for (const row of rows) {
    if (row.type === CHUNK_TYPE) out.push(...expandChunk(row.envelope));
    else out.push(row);
  }
  return out;
}
