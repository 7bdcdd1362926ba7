/**
 * The held tail's rows (docs/sse-protocol.md §12): part updates that upstream can send again and
 * that replace what a reader holds (a part's whole state, or a text delta whose frame carried the
 * part's whole text) reach viewers at once and are stored later, several in one row. A chunk row
 * holds the updates of consecutive seqs of one execution (each a delta or a part's whole update),
 * and is stored
 * at the seq of its last event (so `seq > cursor` finds every row holding an event after the
 * cursor, and `MAX(seq)` stays the high-water mark). Read back, it is one event per update, each
 * the same JSON, key for key, as the row the log would have stored for it alone
 * (./log.ts appendEvent): readers of the log never see a chunk.
 *
 * Pure: the row of one update, a chunk's stored text from its updates, and the updates back.
 */
import { z } from "zod";
import type { EventEnvelope, EventRow } from "./records";

/** The `type` column of a chunk row: never an event's type, so no reader of types meets one. */
export const CHUNK_TYPE = "message.part.deltas";
const PART_UPDATED = "message.part.updated";

/** What the updates of one chunk share: the turn and the execution. */
export interface ChunkOwner {
  turnId: string;
  executionId: string;
}

type Obj = Record<string, unknown>;

/**
 * One held update, its seq and when it was logged (ms since the epoch): a text delta (with the part
 * less its text, as a delta's event carries it), or a part's whole update (the part as upstream sent
 * it: a text part with its whole text, any other part in full).
 */
export type HeldUpdate = { seq: number; atMs: number } & ({ part: Obj; delta: string } | { whole: Obj });

/** The event an update is: the same keys, in the same order, as ./log.ts appendEvent writes. */
function updateEvent(owner: ChunkOwner, held: HeldUpdate): EventEnvelope {
  const data = "whole" in held ? { part: held.whole } : { part: { ...held.part }, delta: held.delta };
  return {
    seq: held.seq,
    turnId: owner.turnId,
    executionId: owner.executionId,
    type: PART_UPDATED,
    data,
    at: new Date(held.atMs).toISOString(),
  };
}

/**
 * The event each row `updateRow` built was written from (the row's envelope is its JSON), while the
 * row lives: the relay encodes a held update it publishes from it, not by parsing the JSON back.
 * The event is the row's own (built for it alone), and nothing changes either after.
 */
const builtFrom = new WeakMap<EventRow, EventEnvelope>();

/** The event a row was built from by `updateRow`, if it was (undefined: parse its envelope). */
export function builtEvent(row: EventRow): EventEnvelope | undefined {
  return builtFrom.get(row);
}

/** The row an update's event is (./log.ts appendEvent's). */
export function updateRow(owner: ChunkOwner, held: HeldUpdate): EventRow {
  const event = updateEvent(owner, held);
  const row = { seq: held.seq, type: PART_UPDATED, envelope: JSON.stringify(event) };
  builtFrom.set(row, event);
  return row;
}

/** A part less its text: what a delta after its whole update carries. */
function lessText(part: Obj): Obj {
  const { text: _text, ...rest } = part;
  return rest;
}

/**
 * A chunk as stored: the owner once, the first seq and its instant, then each update with the
 * milliseconds since the one before it (seqs are consecutive): `[ms, delta]` a delta of the part
 * of the update before it (its part less text), `[ms, delta, part]` a delta of another part
 * (less text), `[ms, { part }]`... as `[ms, part]`, a part's whole update. A delta costs its text
 * plus a few bytes.
 */
const StoredChunk = z.strictObject({
  turnId: z.string(),
  executionId: z.string(),
  first: z.number().int().positive(),
  at: z.number().int(),
  /** Each update's seq, when they are not consecutive (a compacted chunk, ../compaction.ts); absent: first, first + 1, … */
  seqs: z.array(z.number().int().positive()).optional(),
  updates: z
    .array(
      z.union([
        z.tuple([z.number().int(), z.string()]),
        z.tuple([z.number().int(), z.record(z.string(), z.unknown())]),
        z.tuple([z.number().int(), z.string(), z.record(z.string(), z.unknown())]),
      ]),
    )
    .min(1),
});

/**
 * The stored text of a chunk: updates of one owner in increasing seqs (consecutive as the tail
 * holds them; a compacted chunk's may skip, and then name their seqs).
 */
export function encodeChunk(
  owner: ChunkOwner,
  updates: readonly HeldUpdate[],
  options: { gaps?: boolean } = {},
): string {
  const start = updates[0];
  if (!start) throw new Error("a chunk holds at least one update");
  let previous = start.atMs;
  let current: string | null = null;
  const out: unknown[] = [];
  const consecutive = updates.every((held, i) => held.seq === start.seq + i);
  updates.forEach((held, i) => {
    if (options.gaps ? i > 0 && held.seq <= updates[i - 1]!.seq : held.seq !== start.seq + i)
      throw new Error(
        options.gaps ? "a chunk's updates have increasing seqs" : "a chunk's updates have consecutive seqs",
      );
    const ms = held.atMs - previous;
    previous = held.atMs;
    if ("whole" in held) {
      out.push([ms, held.whole]);
      current = JSON.stringify(lessText(held.whole));
    } else {
      const key = JSON.stringify(held.part);
      out.push(key === current ? [ms, held.delta] : [ms, held.delta, held.part]);
      current = key;
    }
  });
  return JSON.stringify({
    turnId: owner.turnId,
    executionId: owner.executionId,
    first: start.seq,
    at: start.atMs,
    ...(consecutive ? {} : { seqs: updates.map((u) => u.seq) }),
    updates: out,
  });
}

/**
 * A chunk of consecutive seqs as it is encoded so far (a chunk that grows in place, ./held-tail.ts):
 * its first seq and instant, its entries' JSON (comma-separated), and what the next update is
 * encoded after: the last seq, its instant and its part (less text, as JSON).
 */
export interface ChunkEncoding {
  first: number;
  at: number;
  entries: string;
  lastSeq: number;
  lastAtMs: number;
  current: string | null;
}

/**
 * `encoding` (null: a new chunk) with `updates` after it, each encoded once: a chunk that grows by
 * its new updates costs their text, not the whole chunk's again. `chunkText` of the result is what
 * `encodeChunk` writes for all of the chunk's updates.
 */
export function extendChunk(encoding: ChunkEncoding | null, updates: readonly HeldUpdate[]): ChunkEncoding {
  const start = updates[0];
  if (!start && !encoding) throw new Error("a chunk holds at least one update");
  let lastSeq = encoding ? encoding.lastSeq : start!.seq - 1;
  let lastAtMs = encoding ? encoding.lastAtMs : start!.atMs;
  let current = encoding ? encoding.current : null;
  const out: string[] = encoding ? [encoding.entries] : [];
  for (const held of updates) {
    if (held.seq !== lastSeq + 1) throw new Error("a chunk's updates have consecutive seqs");
    const ms = held.atMs - lastAtMs;
    if ("whole" in held) {
      out.push(JSON.stringify([ms, held.whole]));
      current = JSON.stringify(lessText(held.whole));
    } else {
      const key = JSON.stringify(held.part);
      out.push(JSON.stringify(key === current ? [ms, held.delta] : [ms, held.delta, held.part]));
      current = key;
    }
    lastSeq = held.seq;
    lastAtMs = held.atMs;
  }
  return {
    first: encoding ? encoding.first : start!.seq,
    at: encoding ? encoding.at : start!.atMs,
    entries: out.join(","),
    lastSeq,
    lastAtMs,
    current,
  };
}

/** The stored text of a chunk encoded by `extendChunk`: the same as `encodeChunk` of its updates. */
export function chunkText(owner: ChunkOwner, encoding: ChunkEncoding): string {
  const head = JSON.stringify({
    turnId: owner.turnId,
    executionId: owner.executionId,
    first: encoding.first,
    at: encoding.at,
  });
  return `${head.slice(0, -1)},"updates":[${encoding.entries}]}`;
}

/** A chunk's owner and its updates, as read from its stored text. */
type ChunkRead = { owner: ChunkOwner; updates: HeldUpdate[] };

/**
 * Chunks read in one job, by their stored text: a second reading of the same text (a turn's end
 * reads the turn's events, then compacts the rows holding them) is the first one's, not a second
 * parse and check. Its caller makes one for the job and drops it; nothing read from it is changed.
 */
export type ChunkReads = Map<string, ChunkRead>;

/** `readChunk`, once per text in `reads` (none: every time). */
function readChunkOnce(text: string, reads: ChunkReads | undefined): ChunkRead {
  if (!reads) return readChunk(text);
  let read = reads.get(text);
  if (!read) reads.set(text, (read = readChunk(text)));
  return read;
}

/** A chunk's owner and its updates, read (and checked) from its stored text. */
function readChunk(text: string): ChunkRead {
  const chunk = StoredChunk.parse(JSON.parse(text));
  const owner: ChunkOwner = { turnId: chunk.turnId, executionId: chunk.executionId };
  let atMs = chunk.at;
  let current: Obj | null = null;
  if (chunk.seqs && chunk.seqs.length !== chunk.updates.length) throw new Error("a chunk names a seq for each update");
  const updates = chunk.updates.map((entry, i): HeldUpdate => {
    atMs += entry[0];
    const seq = chunk.seqs ? chunk.seqs[i]! : chunk.first + i;
    if (typeof entry[1] !== "string") {
      current = lessText(entry[1]);
      return { seq, atMs, whole: entry[1] };
    }
    const part = entry.length === 3 ? entry[2] : current;
    if (!part) throw new Error("a chunk's delta names no part");
    current = part;
    return { seq, atMs, part, delta: entry[1] };
  });
  return { owner, updates };
}

/** The events a chunk row holds, each as the row appendEvent would have stored. */
export function expandChunk(text: string): EventRow[] {
  const { owner, updates } = readChunk(text);
  return updates.map((held) => updateRow(owner, held));
}

/**
 * The events a chunk row holds, as events: what parsing each of `expandChunk`'s rows gives, without
 * writing each as JSON and reading it back (a turn's end reads every event of the turn).
 */
export function chunkEvents(text: string, reads?: ChunkReads): EventEnvelope[] {
  const { owner, updates } = readChunkOnce(text, reads);
  return updates.map((held) => updateEvent(owner, held));
}

/** The first seq a stored row holds (a chunk's first update; any other row's own seq). */
export function firstSeqOf(row: EventRow): number {
  if (row.type !== CHUNK_TYPE) return row.seq;
  return StoredChunk.parse(JSON.parse(row.envelope)).first;
}

/** The log's rows as events: each chunk row expanded into its updates, every other row as it is. */
export function expandRows(rows: readonly EventRow[]): EventRow[] {
  const out: EventRow[] = [];
  for (const row of rows) {
    if (row.type === CHUNK_TYPE) out.push(...expandChunk(row.envelope));
    else out.push(row);
  }
  return out;
}

/** A rewrite of one stored row: its key now, and what it becomes (null: it goes). */
export interface RowRewrite {
  seq: number;
  to: EventRow | null;
}

/** An event of a chunk as the update a chunk holds (every event a chunk holds is a part's update). */
function asUpdate(row: EventRow): HeldUpdate {
  const envelope = JSON.parse(row.envelope) as { data: { part: Obj; delta?: string }; at: string };
  const atMs = Date.parse(envelope.at);
  return typeof envelope.data.delta === "string"
    ? { seq: row.seq, atMs, part: envelope.data.part, delta: envelope.data.delta }
    : { seq: row.seq, atMs, whole: envelope.data.part };
}

/**
 * How stored rows change when runs of their events are each replaced by one event at the run's
 * last seq (../compaction.ts): an event inside a run goes, the run's last becomes its replacement.
 * A plain row is rewritten or goes; a chunk row keeps what is left of it (its seqs named, since
 * they skip now), as a plain row when one event is left, and goes when none is. Rows nothing
 * touches are not rewritten: one row written per row touched. Pure.
 */
export function compactRows(
  rows: readonly EventRow[],
  runs: ReadonlyArray<{ fromSeq: number; toSeq: number; row: EventRow }>,
  reads?: ChunkReads,
): RowRewrite[] {
  const sorted = [...runs].sort((a, b) => a.fromSeq - b.fromSeq);
  // Runs do not overlap: the one holding a seq is found by halving (a long turn has hundreds of runs).
  const runOf = (seq: number) => {
    let lo = 0;
    let hi = sorted.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const run = sorted[mid]!;
      if (seq < run.fromSeq) hi = mid - 1;
      else if (seq > run.toSeq) lo = mid + 1;
      else return run;
    }
    return undefined;
  };
  const out: RowRewrite[] = [];
  for (const row of rows) {
    if (row.type !== CHUNK_TYPE) {
      const run = runOf(row.seq);
      if (run) out.push({ seq: row.seq, to: row.seq === run.toSeq ? run.row : null });
      continue;
    }
    // A chunk's updates as they are (not each written as a row and read back): each kept, or a
    // run's replacement (a row) at the run's last seq.
    const { owner, updates } = readChunkOnce(row.envelope, reads);
    let touched = false;
    const kept: Array<HeldUpdate | EventRow> = [];
    for (const held of updates) {
      const run = runOf(held.seq);
      if (!run) kept.push(held);
      else {
        touched = true;
        if (held.seq === run.toSeq) kept.push(run.row);
      }
    }
    if (!touched) continue;
    if (kept.length === 0) out.push({ seq: row.seq, to: null });
    else if (kept.length === 1) {
      const only = kept[0]!;
      out.push({ seq: row.seq, to: "envelope" in only ? only : updateRow(owner, only) });
    } else {
      const chunk = kept.map((k) => ("envelope" in k ? asUpdate(k) : k));
      out.push({
        seq: row.seq,
        to: { seq: kept.at(-1)!.seq, type: CHUNK_TYPE, envelope: encodeChunk(owner, chunk, { gaps: true }) },
      });
    }
  }
  return out;
}
