/**
 * The held tail (docs/sse-protocol.md §12): text deltas published to viewers before they are
 * stored, and how the next commit stores them in one row write.
 *
 * An update is held only when it is of a text or reasoning part and its upstream frame carried the
 * part's whole text (./ingest.ts `holdableUpdate`): a delta that continues the text this instance
 * holds, or the part's whole update (its first in this instance, or one that does not continue).
 * Upstream can send those frames again, and a reader resumed in a new instance, holding no text,
 * sends each part's first update whole, so what a crash takes of the tail comes back, within the
 * part's whole text, under a later id (SessionStore skips TAIL_MAX_DELTAS seqs when it opens on a
 * running turn). A part streamed without interruption is then one row for its whole life.
 *
 * Storing the tail (`flush`, inside the caller's transaction, before any row of its own) costs one
 * row written, whatever the number of updates: when the log's newest row is this part's chunk
 * (./log-chunks.ts) and the deltas follow it, they join it (one UPDATE, the row moving to the seq
 * of its last delta); otherwise a new chunk row holds them. Each update keeps its own seq in the
 * chunk: a reader resuming anywhere in it gets exactly the updates after its cursor.
 */
import { CHUNK_TYPE, deltaRow, encodeChunk, wholeRow, type DeltaOwner, type EventRow, type HeldDelta, type HeldWhole } from "./log-chunks";

/** At most this many updates are published and not stored; a new instance skips as many seqs. */
export const TAIL_MAX_DELTAS = 64;
/** At most this many bytes of delta text are held; a larger delta is stored as it comes. */
export const TAIL_MAX_BYTES = 32 * 1024;
/** A chunk row grows in place up to about this many bytes of text; past it, the next deltas start a chunk of their own. */
const ROW_GROWS_TO = 256 * 1024;

/**
 * An update to hold: its owner, a delta (with the part less its text, as a delta's event carries
 * it) or the part's whole update (the part as upstream sent it, text included), its upstream id,
 * when it came.
 */
export type UpdateToHold = { turnId: string; executionId: string; upstreamId: string; now: number } & (
  | { kind: "delta"; part: Record<string, unknown>; delta: string }
  | { kind: "whole"; part: Record<string, unknown> }
);

/** A part less its text: what the deltas after its whole update carry. */
function lessText(part: Record<string, unknown>): Record<string, unknown> {
  const { text: _text, ...rest } = part;
  return rest;
}

interface Tail {
  owner: DeltaOwner;
  ownerKey: string;
  /** The part's whole update it starts with, if it does. */
  whole: HeldWhole | null;
  deltas: HeldDelta[];
  bytes: number;
  upstreamId: string;
  /** Written in the transaction under way: stored once it commits, held again if it rolls back. */
  writing: boolean;
}

/** The log's newest row, when it is a chunk this instance wrote (so a tail that follows it can grow it). */
interface NewestChunk {
  seq: number;
  ownerKey: string;
  owner: DeltaOwner;
  whole: HeldWhole | null;
  deltas: HeldDelta[];
  bytes: number;
}

export class HeldTail {
  private tail: Tail | null = null;
  /** The log's newest row, when it is a chunk this instance wrote (null: unknown, or not a chunk). */
  private newest: NewestChunk | null = null;
  /** What `newest` was before the transaction under way (restored if it rolls back). */
  private newestBefore: NewestChunk | null | undefined;

  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  /**
   * Holds an update under `seq` and answers its row; null when the tail cannot take it (another
   * part, full, being written, or a whole update after others): the caller commits (which stores
   * the tail) and holds it then.
   */
  hold(input: UpdateToHold, seq: number): EventRow | null {
    const owner: DeltaOwner = { turnId: input.turnId, executionId: input.executionId, part: input.kind === "delta" ? input.part : lessText(input.part) };
    const ownerKey = JSON.stringify(owner);
    const size = input.kind === "delta" ? input.delta.length : String(input.part.text ?? "").length;
    const tail = this.tail;
    const held = tail ? tail.deltas.length + (tail.whole ? 1 : 0) : 0;
    if (tail && (tail.writing || input.kind === "whole" || tail.ownerKey !== ownerKey || held >= TAIL_MAX_DELTAS || tail.bytes + size > TAIL_MAX_BYTES)) return null;
    let row: EventRow;
    if (input.kind === "whole") {
      const whole: HeldWhole = { seq, part: input.part, atMs: input.now };
      this.tail = { owner, ownerKey, whole, deltas: [], bytes: size, upstreamId: input.upstreamId, writing: false };
      row = wholeRow(owner, whole);
    } else {
      const held: HeldDelta = { seq, delta: input.delta, atMs: input.now };
      if (tail) {
        tail.deltas.push(held);
        tail.bytes += size;
        tail.upstreamId = input.upstreamId;
      } else {
        this.tail = { owner, ownerKey, whole: null, deltas: [held], bytes: size, upstreamId: input.upstreamId, writing: false };
      }
      row = deltaRow(owner, held);
    }
    return row;
  }

  /** Whether deltas are held. */
  holds(): boolean {
    return this.tail !== null;
  }

  /** The held updates' last seq, if any. */
  lastSeq(): number | undefined {
    return this.tail ? (this.tail.deltas.at(-1) ?? this.tail.whole)?.seq : undefined;
  }

  /** The held updates' first seq, if any. */
  firstSeq(): number | undefined {
    return this.tail ? (this.tail.whole ?? this.tail.deltas[0])?.seq : undefined;
  }

  /** The turn whose deltas are held, if any. */
  turnId(): string | undefined {
    return this.tail?.owner.turnId;
  }

  /** The upstream id of the last delta held of this execution (the run's cursor past them). */
  upstreamIdOf(executionId: string): string | undefined {
    return this.tail?.owner.executionId === executionId ? this.tail.upstreamId : undefined;
  }

  /** The held deltas as the log's rows (none while they are being written: storage has them then). */
  rows(): EventRow[] {
    const tail = this.tail;
    if (!tail || tail.writing) return [];
    return [...(tail.whole ? [wholeRow(tail.owner, tail.whole)] : []), ...tail.deltas.map((held) => deltaRow(tail.owner, held))];
  }

  /** The log appended a row of its own (SessionStore.appendEvent): its newest row is not a chunk. */
  appended(): void {
    this.remember();
    this.newest = null;
  }

  /** Writes the held deltas in one row write, inside the caller's transaction (nothing when none are held). */
  flush(): void {
    const tail = this.tail;
    if (!tail || tail.writing) return;
    this.remember();
    const last = (tail.deltas.at(-1) ?? tail.whole)!;
    const newest = this.newest;
    if (newest && !tail.whole && newest.ownerKey === tail.ownerKey && newest.seq + 1 === tail.deltas[0]!.seq && newest.bytes + tail.bytes <= ROW_GROWS_TO) {
      const deltas = [...newest.deltas, ...tail.deltas];
      this.sql.exec("UPDATE events SET seq = ?, upstream_id = ?, envelope = ? WHERE seq = ?", last.seq, tail.upstreamId, encodeChunk(tail.owner, newest.whole, deltas), newest.seq);
      this.newest = { ...newest, seq: last.seq, deltas, bytes: newest.bytes + tail.bytes };
    } else {
      this.sql.exec(
        "INSERT INTO events (seq, turn_id, execution_id, upstream_id, type, envelope) VALUES (?, ?, ?, ?, ?, ?)",
        last.seq,
        tail.owner.turnId,
        tail.owner.executionId,
        tail.upstreamId,
        CHUNK_TYPE,
        encodeChunk(tail.owner, tail.whole, tail.deltas),
      );
      this.newest = { seq: last.seq, ownerKey: tail.ownerKey, owner: tail.owner, whole: tail.whole, deltas: [...tail.deltas], bytes: tail.bytes };
    }
    tail.writing = true;
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
