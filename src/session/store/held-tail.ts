/**
 * The held tail (docs/sse-protocol.md §12): part updates published to viewers before they are
 * stored, and how the next commit stores them in one row write.
 *
 * An update is held only when upstream can send its frame again and what it says replaces what a
 * reader holds (../ingest.ts `holdableUpdate`): a part's whole update (a text or reasoning part with
 * its whole text, any other part in full), or a text delta that continues the text this instance
 * holds and whose frame carried the part's whole text. A reader resumed in a new instance holds no
 * text, so it sends each part's first update whole: what a crash takes of the tail comes back,
 * within the part's whole state, under a later id (./log.ts skips TAIL_MAX_DELTAS seqs when it
 * opens on a running turn). A run of part updates with nothing else between them is one row.
 *
 * Storing the tail (`toStore`, written by the log's store inside the caller's transaction, before
 * any row of its own: ./log.ts) costs one row written, whatever the number of updates: when the
 * log's newest row is this execution's chunk (./log-chunks.ts) and the updates follow it, they
 * join it (one UPDATE, the row moving to the seq of its last update); otherwise a new chunk row
 * holds them. Each update keeps its own seq in the chunk: a reader resuming anywhere in it gets
 * exactly the updates after its cursor. Pure: this module decides the write, ./log.ts runs it.
 */
import { type ChunkEncoding, type ChunkOwner, chunkText, extendChunk, type HeldUpdate, updateRow } from "./log-chunks";
import type { EventRow } from "./records";

/** At most this many updates are published and not stored; a new instance skips as many seqs. */
export const TAIL_MAX_DELTAS = 64;
/** At most this many bytes of updates are held; a larger update is stored as it comes. */
export const TAIL_MAX_BYTES = 32 * 1024;
/**
 * A chunk row grows in place up to about this many bytes; past it, the next updates start a chunk
 * of their own. Either is one row written; a grow rewrites the whole row, so a larger bound costs a
 * long turn's commits more bytes rewritten each (at 256 KiB, 5% of a 10,000-word burst's isolate time).
 */
const ROW_GROWS_TO = 64 * 1024;

/**
 * An update to hold: its owner, a delta (with the part less its text, as a delta's event carries
 * it) or a part's whole update (the part as upstream sent it), its upstream id, when it came.
 */
export type UpdateToHold = { turnId: string; executionId: string; upstreamId: string; now: number } & (
  | { kind: "delta"; part: Record<string, unknown>; delta: string }
  | { kind: "whole"; part: Record<string, unknown> }
);

/** The bytes an update holds, about: a delta's text, a whole update's JSON. */
export function updateBytes(
  input: { kind: "delta"; delta: string } | { kind: "whole"; part: Record<string, unknown> },
): number {
  return input.kind === "delta" ? input.delta.length : JSON.stringify(input.part).length;
}

interface Tail {
  owner: ChunkOwner;
  updates: HeldUpdate[];
  bytes: number;
  /** The upstream id of its last update (numeric: the run's cursor once it is stored). */
  upstreamId: string;
  /** Written in the transaction under way: stored once it commits, held again if it rolls back. */
  writing: boolean;
}

/** The log's newest row, when it is a chunk this instance wrote (so a tail that follows it can grow it). */
export interface NewestChunk {
  seq: number;
  owner: ChunkOwner;
  /** Its updates as encoded so far: growing it encodes only the new ones. */
  encoding: ChunkEncoding;
  bytes: number;
}

/**
 * The row write that stores the held updates: the log's newest row (at `rowSeq`) grown in place to
 * `row`, or `row` inserted as a chunk row of its own; `newest` is the log's newest row after it.
 */
export type TailWrite = {
  kind: "grow" | "insert";
  rowSeq: number;
  row: { seq: number; owner: ChunkOwner; upstreamId: string; envelope: string };
  newest: NewestChunk;
};

const sameOwner = (a: ChunkOwner, b: ChunkOwner): boolean => a.turnId === b.turnId && a.executionId === b.executionId;

export class HeldTail {
  private tail: Tail | null = null;
  /** The log's newest row, when it is a chunk this instance wrote (null: unknown, or not a chunk). */
  private newest: NewestChunk | null = null;
  /** What `newest` was before the transaction under way (restored if it rolls back). */
  private newestBefore: NewestChunk | null | undefined;

  /**
   * Holds an update under `seq` and answers its row; null when the tail cannot take it (another
   * execution's, full, or being written): the caller commits (which stores the tail) and holds it
   * then.
   */
  hold(input: UpdateToHold, seq: number): EventRow | null {
    const owner: ChunkOwner = { turnId: input.turnId, executionId: input.executionId };
    const size = updateBytes(input);
    const tail = this.tail;
    if (
      tail &&
      (tail.writing ||
        !sameOwner(tail.owner, owner) ||
        tail.updates.length >= TAIL_MAX_DELTAS ||
        tail.bytes + size > TAIL_MAX_BYTES)
    )
      return null;
    const held: HeldUpdate =
      input.kind === "delta"
        ? { seq, atMs: input.now, part: input.part, delta: input.delta }
        : { seq, atMs: input.now, whole: input.part };
    if (tail) {
      tail.updates.push(held);
      tail.bytes += size;
      tail.upstreamId = input.upstreamId;
    } else {
      this.tail = { owner, updates: [held], bytes: size, upstreamId: input.upstreamId, writing: false };
    }
    return updateRow(owner, held);
  }

  /** Whether updates are held. */
  holds(): boolean {
    return this.tail !== null;
  }

  /** The held updates' last seq, if any. */
  lastSeq(): number | undefined {
    return this.tail?.updates.at(-1)?.seq;
  }

  /** The held updates' first seq, if any. */
  firstSeq(): number | undefined {
    return this.tail?.updates[0]?.seq;
  }

  /** The turn whose updates are held, if any. */
  turnId(): string | undefined {
    return this.tail?.owner.turnId;
  }

  /** The upstream id of the last update held of this execution (the run's cursor past them). */
  upstreamIdOf(executionId: string): string | undefined {
    return this.tail?.owner.executionId === executionId ? this.tail.upstreamId : undefined;
  }

  /** The held updates as the log's rows (none while they are being written: storage has them then). */
  rows(): EventRow[] {
    const tail = this.tail;
    if (!tail || tail.writing) return [];
    return tail.updates.map((held) => updateRow(tail.owner, held));
  }

  /** The log appended a row of its own (./log.ts appendEvent): its newest row is not a chunk. */
  appended(): void {
    this.remember();
    this.newest = null;
  }

  /**
   * The one row write that stores the held updates, for the caller to run inside its transaction
   * and then report (`stored`); null when none are held, or they are being written.
   */
  toStore(): TailWrite | null {
    const tail = this.tail;
    if (!tail || tail.writing) return null;
    this.remember();
    const first = tail.updates[0]!;
    const last = tail.updates.at(-1)!;
    const newest = this.newest;
    if (
      newest &&
      sameOwner(newest.owner, tail.owner) &&
      newest.seq + 1 === first.seq &&
      newest.bytes + tail.bytes <= ROW_GROWS_TO
    ) {
      const encoding = extendChunk(newest.encoding, tail.updates);
      return {
        kind: "grow",
        rowSeq: newest.seq,
        row: {
          seq: last.seq,
          owner: tail.owner,
          upstreamId: tail.upstreamId,
          envelope: chunkText(tail.owner, encoding),
        },
        newest: { ...newest, seq: last.seq, encoding, bytes: newest.bytes + tail.bytes },
      };
    }
    const encoding = extendChunk(null, tail.updates);
    return {
      kind: "insert",
      rowSeq: last.seq,
      row: {
        seq: last.seq,
        owner: tail.owner,
        upstreamId: tail.upstreamId,
        envelope: chunkText(tail.owner, encoding),
      },
      newest: { seq: last.seq, owner: tail.owner, encoding, bytes: tail.bytes },
    };
  }

  /** The caller wrote `write` (from `toStore`) in the transaction under way. */
  stored(write: TailWrite): void {
    this.newest = write.newest;
    if (this.tail) this.tail.writing = true;
  }

  /** The transaction committed: what it wrote of the tail is stored. */
  committed(): void {
    this.newestBefore = undefined;
    if (this.tail?.writing) this.tail = null;
  }

  /** The transaction rolled back: the tail is held again, and the newest row is what it was. */
  rolledBack(): void {
    if (this.tail) this.tail.writing = false;
    if (this.newestBefore !== undefined) this.newest = this.newestBefore;
    this.newestBefore = undefined;
  }

  /** Keeps what `newest` was when the transaction under way began (once per transaction). */
  private remember(): void {
    if (this.newestBefore === undefined) this.newestBefore = this.newest;
  }
}
