/**
 * The held tail's rows (docs/sse-protocol.md §12): updates of a text or reasoning part whose
 * upstream frame carried the part's whole text reach viewers at once and are stored later, several
 * in one row. A chunk row holds the updates of consecutive seqs of one part of one execution (its
 * whole text first, when the chunk starts with such an update, then deltas), and is stored
 * at the seq of its last event (so `seq > cursor` finds every row holding an event after the
 * cursor, and `MAX(seq)` stays the high-water mark). Read back, it is one event per update, each
 * the same JSON, key for key, as the row the log would have stored for it alone
 * (SessionStore.appendEvent): readers of the log never see a chunk.
 *
 * Pure: the row of one update, a chunk's stored text from its updates, and the updates back.
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

/** What the events of one chunk share: the turn, the execution and the part (less its text). */
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

/** A held update of a part's whole text (its first update, or one that does not continue): the part as upstream sent it. */
export interface HeldWhole {
  seq: number;
  part: Record<string, unknown>;
  atMs: number;
}

function row(owner: DeltaOwner, seq: number, data: Record<string, unknown>, atMs: number): EventRow {
  const envelope = { seq, turnId: owner.turnId, executionId: owner.executionId, type: PART_UPDATED, data, at: new Date(atMs).toISOString() };
  return { seq, type: PART_UPDATED, envelope: JSON.stringify(envelope) };
}

/** The row a delta's event is: the same keys, in the same order, as SessionStore.appendEvent writes. */
export function deltaRow(owner: DeltaOwner, held: HeldDelta): EventRow {
  return row(owner, held.seq, { part: owner.part, delta: held.delta }, held.atMs);
}

/** The row a whole update's event is (`data: { part }`, the part's text in it). */
export function wholeRow(owner: DeltaOwner, held: HeldWhole): EventRow {
  return row(owner, held.seq, { part: held.part }, held.atMs);
}

/**
 * A chunk as stored: the owner once, the first seq and its instant, the part's whole update when
 * the chunk starts with one (`whole`), then each delta with the milliseconds since the event before
 * it (seqs are consecutive). About the deltas' text plus a few bytes each.
 */
const StoredChunk = z
  .strictObject({
    turnId: z.string(),
    executionId: z.string(),
    part: z.record(z.string(), z.unknown()),
    first: z.number().int().positive(),
    at: z.number().int(),
    whole: z.record(z.string(), z.unknown()).optional(),
    deltas: z.array(z.tuple([z.string(), z.number().int()])),
  })
  .refine((chunk) => chunk.whole !== undefined || chunk.deltas.length > 0, "a chunk holds at least one event");

/** The stored text of a chunk: a whole update (or none), then consecutive deltas, of one owner. */
export function encodeChunk(owner: DeltaOwner, whole: HeldWhole | null, deltas: readonly HeldDelta[]): string {
  const start = whole ?? deltas[0];
  if (!start) throw new Error("a chunk holds at least one event");
  let previous = start.atMs;
  let seq = start.seq - (whole ? 0 : 1);
  const out: Array<[string, number]> = [];
  for (const held of deltas) {
    if (held.seq !== ++seq) throw new Error("a chunk's events have consecutive seqs");
    out.push([held.delta, held.atMs - previous]);
    previous = held.atMs;
  }
  return JSON.stringify({ turnId: owner.turnId, executionId: owner.executionId, part: owner.part, first: start.seq, at: start.atMs, ...(whole ? { whole: whole.part } : {}), deltas: out });
}

/** The events a chunk row holds, each as the row appendEvent would have stored. */
export function expandChunk(text: string): EventRow[] {
  const chunk = StoredChunk.parse(JSON.parse(text));
  const owner: DeltaOwner = { turnId: chunk.turnId, executionId: chunk.executionId, part: chunk.part };
  let atMs = chunk.at;
  let seq = chunk.first;
  const out: EventRow[] = [];
  if (chunk.whole) out.push(wholeRow(owner, { seq: seq++, part: chunk.whole, atMs }));
  for (const [delta, ms] of chunk.deltas) {
    atMs += ms;
    out.push(deltaRow(owner, { seq: seq++, delta, atMs }));
  }
  return out;
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
