/**
 * The session's event log: the `events` and `upstream_seen` tables, the held tail (./held-tail.ts)
 * and what the ingest path reads per frame, held in memory.
 *
 * What a frame needs is read from storage once per instance and kept in step with every write
 * made here: the last seq, and each running execution's upstream cursor and the opaque upstream
 * ids it has seen. So a frame costs at most one statement (its event's INSERT); the cursor and the
 * seen ids are written once per commit (`settleAdmissions`). A transaction that rolls back drops
 * what is held (`discardHeld`), which is read again from storage on next use.
 *
 * The held tail (docs/sse-protocol.md §12): part updates published before they are stored, at
 * most TAIL_MAX_DELTAS of one part, written in one row write by the next commit (from
 * `appendEvent` and `settleAdmissions`, so the log's order is the order viewers saw). Every read of
 * the log expands chunk rows (./log-chunks.ts) and adds the tail after what is stored. A new
 * instance that finds a turn running does not know what tail the old one published: its seqs start
 * TAIL_MAX_DELTAS past the stored ones (`lastSeq`), so no id a viewer may hold is given again.
 */
import { EventEnvelopeSchema } from "../../schemas/api";
import { HeldTail, TAIL_MAX_DELTAS, type UpdateToHold } from "./held-tail";
import { CHUNK_TYPE, type ChunkReads, chunkEvents, compactRows, expandRows, firstSeqOf } from "./log-chunks";
import type { MetaStore } from "./meta";
import type { EventEnvelope, EventRow, NewEvent } from "./records";
import type { TurnStore } from "./turns";

/** Upstream ids that are whole numbers come in order: a repeat is one at or below the cursor. */
const NUMERIC_ID = /^\d{1,15}$/;

/** Whether an upstream id is a whole number (ids that come in order: the cursor is the newest stored row's). */
export function isNumericUpstreamId(id: string): boolean {
  return NUMERIC_ID.test(id);
}

/** A running execution's upstream cursor and seen ids, as held in memory (see the header). */
interface HeldCursor {
  turnId: string;
  /** The last upstream id admitted (exclusive cursor). */
  cursor: string | undefined;
  /** Opaque (non-numeric) ids seen, and child tasks' updates applied, read from storage on first need. */
  seen: Set<string> | undefined;
  /** Opaque ids (and child updates) admitted and not yet written, and whether the turn's cursor is to be written. */
  unsaved: string[];
  cursorDirty: boolean;
}

export class LogStore {
  /** Deltas published and not stored yet (see the header). */
  private readonly tail = new HeldTail();
  /** The seqs this instance may not give again (a predecessor's tail): set on the first read of the last seq. */
  private seqFloor: number | undefined;
  /** How many seqs past the stored ones a predecessor may have published unstored (a turn ran when this store opened). */
  private readonly inheritedTail: number;
  /** This instance's floor, to store before it publishes an update it holds (a successor then skips past it too). */
  private floorToStore: number | undefined;
  /** The log's last seq, once read (appends advance it). */
  private heldLastSeq: number | undefined;
  /** Per execution: its upstream cursor and seen ids. */
  private readonly heldCursors = new Map<string, HeldCursor>();

  constructor(
    private readonly sql: Pick<SqlStorage, "exec">,
    private readonly meta: MetaStore,
    /** The turns' stored cursors and lost markers, which admissions read and write. */
    private readonly turns: Pick<TurnStore, "anyRunning" | "storedCursor" | "storeCursor" | "clearLost">,
  ) {
    // A turn running when this store opens may have had deltas published by the instance before
    // and never stored: their seqs are not given again.
    this.inheritedTail = turns.anyRunning() ? TAIL_MAX_DELTAS : 0;
  }

  /** Forgets what is held in memory (the last seq, cursors): a transaction rolled back, so storage is the truth again. */
  discardHeld(): void {
    // The tail was published: it is held again, to be written by the next commit.
    this.tail.rolledBack();
    this.heldLastSeq = undefined;
    this.heldCursors.clear();
  }

  // ---- upstream de-duplication

  /**
   * The run's cursor: held in memory once read; from storage, the upstream id of its newest logged
   * event (numeric ids, which upstream sends in order), else the one stored on the turn.
   */
  cursorOf(turnId: string, executionId: string): string | undefined {
    return this.heldCursor(turnId, executionId).cursor;
  }

  /** The execution's seen ids (and child updates), read from storage once. */
  private seenOf(executionId: string, held: HeldCursor): Set<string> {
    held.seen ??= new Set(
      this.sql
        .exec<{ upstream_id: string }>("SELECT upstream_id FROM upstream_seen WHERE execution_id = ?", executionId)
        .toArray()
        .map((r) => r.upstream_id),
    );
    return held.seen;
  }

  private heldCursor(turnId: string, executionId: string): HeldCursor {
    let held = this.heldCursors.get(executionId);
    if (held) return held;
    const logged = this.sql
      .exec<{ upstream_id: string }>(
        "SELECT upstream_id FROM events WHERE execution_id = ? AND upstream_id IS NOT NULL ORDER BY seq DESC LIMIT 1",
        executionId,
      )
      .toArray()[0]?.upstream_id;
    const cursor = logged !== undefined && NUMERIC_ID.test(logged) ? logged : this.turns.storedCursor(turnId);
    // Deltas held and not stored were admitted: the cursor is past them.
    const tail = this.tail.upstreamIdOf(executionId);
    const ahead =
      tail !== undefined && (cursor === undefined || (NUMERIC_ID.test(cursor) && Number(tail) > Number(cursor)));
    held = { turnId, cursor: ahead ? tail : cursor, seen: undefined, unsaved: [], cursorDirty: false };
    this.heldCursors.set(executionId, held);
    return held;
  }

  /**
   * The one de-duplication rule: whether an upstream frame is new (true) or a repeat (false: an
   * inclusive replay, a repeated frame), so each counts once. Numeric ids come in order: one at or
   * below the cursor is a repeat, and the cursor is the newest logged event's id, so a frame costs
   * one row (the caller logs it under its upstream id). Other ids are remembered one by one, the
   * newest being the turn's cursor. A new frame is progress: the reader is no longer lost.
   *
   * Decided in memory (the cursor and the seen ids are held); what it must write, the opaque ids
   * and the turn's cursor, is written by `settleAdmissions` once per commit, in the same
   * transaction.
   */
  admitUpstream(turnId: string, executionId: string, upstreamId: string): boolean {
    const held = this.heldCursor(turnId, executionId);
    if (NUMERIC_ID.test(upstreamId)) {
      if (held.cursor !== undefined && NUMERIC_ID.test(held.cursor) && Number(upstreamId) <= Number(held.cursor))
        return false;
      held.cursor = upstreamId;
      this.turns.clearLost(turnId);
      return true;
    }
    const seen = this.seenOf(executionId, held);
    if (seen.has(upstreamId)) return false;
    seen.add(upstreamId);
    held.unsaved.push(upstreamId);
    held.cursor = upstreamId;
    held.cursorDirty = true;
    this.turns.clearLost(turnId);
    return true;
  }

  /**
   * The one rule for child tasks' updates (docs/contracts.md `child-task`): whether the update a
   * `sourceEventId` names is new (true) or a copy (false), whatever frame carried it (a copy comes
   * in a frame of its own, under an upstream id of its own). Remembered with the execution's seen
   * ids, under a key no upstream id can be (an SSE id never holds a line break), written by
   * `settleAdmissions` in the commit that applies the update: a copy after a restart is dropped too.
   */
  admitChildUpdate(turnId: string, executionId: string, sourceEventId: string): boolean {
    const held = this.heldCursor(turnId, executionId);
    const seen = this.seenOf(executionId, held);
    const key = `\nchild-task:${sourceEventId}`;
    if (seen.has(key)) return false;
    seen.add(key);
    held.unsaved.push(key);
    return true;
  }

  /** Writes what admissions left to write (opaque ids seen, the turn's cursor): once per commit, inside its transaction. */
  settleAdmissions(): void {
    // The tail first: a cursor written past deltas not stored would skip them after a crash.
    this.storeTail();
    for (const [executionId, held] of this.heldCursors) {
      if (held.unsaved.length > 0) {
        const ids = held.unsaved;
        held.unsaved = [];
        this.sql.exec(
          "INSERT OR IGNORE INTO upstream_seen (execution_id, upstream_id) SELECT ?, value FROM json_each(?)",
          executionId,
          JSON.stringify(ids),
        );
      }
      if (held.cursorDirty && held.cursor !== undefined) {
        held.cursorDirty = false;
        this.turns.storeCursor(held.turnId, held.cursor);
      }
    }
  }

  forgetSeen(executionId: string): void {
    this.sql.exec("DELETE FROM upstream_seen WHERE execution_id = ?", executionId);
    this.heldCursors.delete(executionId);
  }

  /**
   * Drops what memory holds of an execution's cursor and seen ids (its reader stopped: the turn
   * ended, was cancelled or failed here, or the object shuts down), storage untouched. Safe between
   * commits, since every commit writes what it admitted (`settleAdmissions`): a reader started
   * again reads it back from storage once.
   */
  releaseHeld(executionId: string): void {
    this.heldCursors.delete(executionId);
  }

  // ---- appending and reading

  /** Appends one event and answers it with its seq; the caller publishes it after the transaction. */
  appendEvent(input: NewEvent): EventRow {
    // What viewers saw before this event is stored before it.
    this.storeTail();
    const at = new Date(input.now).toISOString();
    // Appends are synchronous in a single-threaded object: the next seq is held, not read per append.
    const seq = this.lastSeq() + 1;
    const envelope: EventEnvelope = {
      seq,
      turnId: input.turnId,
      executionId: input.executionId,
      type: input.type,
      data: input.data,
      ...(input.usage ? { usage: input.usage } : {}),
      ...(input.usageMode ? { usageMode: input.usageMode } : {}),
      at,
    };
    const text = JSON.stringify(envelope);
    this.sql.exec(
      "INSERT INTO events (seq, turn_id, execution_id, upstream_id, type, envelope) VALUES (?, ?, ?, ?, ?, ?)",
      seq,
      input.turnId,
      input.executionId,
      input.upstreamId ?? null,
      input.type,
      text,
    );
    this.heldLastSeq = seq;
    this.tail.appended();
    return { seq, type: input.type, envelope: text };
  }

  /**
   * At most `limit` events strictly after `afterSeq`: the stored rows (chunk rows expanded), then,
   * once storage has no more, the held tail. Fewer than `limit`: there is nothing more.
   */
  private page(afterSeq: number, limit: number, stored: EventRow[], tailToo: boolean): EventRow[] {
    const events = expandRows(stored).filter((row) => row.seq > afterSeq);
    // Every stored row holds an event after the cursor (its last seq is past it): a full read of rows is a full page.
    if (stored.length < limit && tailToo) events.push(...this.tail.rows().filter((row) => row.seq > afterSeq));
    return events.length > limit ? events.slice(0, limit) : events;
  }

  /** One page of the log strictly after `afterSeq`. */
  eventsAfter(afterSeq: number, limit: number): EventRow[] {
    return this.page(
      afterSeq,
      limit,
      this.sql
        .exec<EventRow>("SELECT seq, type, envelope FROM events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit)
        .toArray(),
      true,
    );
  }

  /** One page of a branch's history strictly after `afterSeq`: the events of `turnIds` (its path) and those of no turn. */
  eventsAfterOf(afterSeq: number, limit: number, turnIds: string[]): EventRow[] {
    const stored = this.sql
      .exec<EventRow>(
        "SELECT seq, type, envelope FROM events WHERE seq > ? AND (turn_id IS NULL OR turn_id IN (SELECT value FROM json_each(?))) ORDER BY seq LIMIT ?",
        afterSeq,
        JSON.stringify(turnIds),
        limit,
      )
      .toArray();
    const held = this.tail.turnId();
    return this.page(afterSeq, limit, stored, held !== undefined && turnIds.includes(held));
  }

  /** The retained events of these types strictly after `afterSeq`, read back validated (the webhook hand-off). */
  eventsOfTypesAfter(afterSeq: number, types: readonly string[], limit: number): EventEnvelope[] {
    return this.sql
      .exec<{ envelope: string }>(
        `SELECT envelope FROM events WHERE seq > ? AND type IN (${types.map(() => "?").join(", ")}) ORDER BY seq LIMIT ?`,
        afterSeq,
        ...types,
        limit,
      )
      .toArray()
      .map((row) => EventEnvelopeSchema.parse(JSON.parse(row.envelope)));
  }

  /**
   * The retained events of one turn (the held ones included), read back validated; the chunks read
   * kept in `reads` when given (a compaction that follows reads them from there).
   */
  eventsOfTurn(turnId: string, reads?: ChunkReads): EventEnvelope[] {
    const stored = this.sql
      .exec<EventRow>("SELECT seq, type, envelope FROM events WHERE turn_id = ? ORDER BY seq", turnId)
      .toArray();
    const held = this.tail.turnId() === turnId ? this.tail.rows() : [];
    const events: EventEnvelope[] = [];
    for (const row of [...stored, ...held]) {
      // A chunk's events are built from its checked text, not written as JSON and read back.
      if (row.type === CHUNK_TYPE) events.push(...chunkEvents(row.envelope, reads));
      else events.push(EventEnvelopeSchema.parse(JSON.parse(row.envelope)));
    }
    return events;
  }

  lastSeq(): number {
    if (this.heldLastSeq === undefined) {
      // Trimming never removes the newest event, so the largest seq is the high-water mark; read once, then held.
      const stored = this.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events").one().seq ?? 0;
      if (this.seqFloor === undefined) {
        // Past the stored seqs and past the floor of any predecessor that stored nothing since.
        this.seqFloor =
          this.inheritedTail > 0 ? Math.max(stored, this.meta.get("seqFloor") ?? 0) + this.inheritedTail : stored;
        if (this.inheritedTail > 0) this.floorToStore = this.seqFloor;
      }
      this.heldLastSeq = Math.max(stored, this.seqFloor, this.tail.lastSeq() ?? 0);
    }
    return this.heldLastSeq;
  }

  // ---- the held tail (./held-tail.ts)

  /**
   * Holds a part's update (published by the caller at once, stored by the next commit) under the
   * next seq, and answers its row; null when the tail cannot take it (another part, full, or being
   * written): the caller commits (which stores the tail) and holds it then.
   */
  holdUpdate(input: UpdateToHold): EventRow | null {
    const seq = this.lastSeq() + 1;
    if (this.floorToStore !== undefined) {
      // Before anything held above the floor reaches a viewer (the output gate holds the send
      // until this write is durable): a successor that finds nothing stored past it skips past it.
      this.meta.set("seqFloor", this.floorToStore);
      this.floorToStore = undefined;
    }
    const row = this.tail.hold(input, seq);
    if (row) this.heldLastSeq = row.seq;
    return row;
  }

  /** Whether deltas are held (published, not stored). */
  holdsTail(): boolean {
    return this.tail.holds();
  }

  /** The transaction that wrote the tail committed: it is stored. */
  tailCommitted(): void {
    this.tail.committed();
  }

  /** Writes the held updates in one row write, inside the caller's transaction (nothing when none are held). */
  private storeTail(): void {
    const write = this.tail.toStore();
    if (!write) return;
    const { row } = write;
    if (write.kind === "grow") {
      this.sql.exec(
        "UPDATE events SET seq = ?, upstream_id = ?, envelope = ? WHERE seq = ?",
        row.seq,
        row.upstreamId,
        row.envelope,
        write.rowSeq,
      );
    } else {
      this.sql.exec(
        "INSERT INTO events (seq, turn_id, execution_id, upstream_id, type, envelope) VALUES (?, ?, ?, ?, ?, ?)",
        row.seq,
        row.owner.turnId,
        row.owner.executionId,
        row.upstreamId,
        CHUNK_TYPE,
        row.envelope,
      );
    }
    this.tail.stored(write);
  }

  // ---- size and trimming

  /** The retained log's size: its events (a chunk row holds several), its rows, and the UTF-8 bytes of their envelopes. */
  logSize(): { events: number; rows: number; bytes: number } {
    return this.sql
      .exec<{ events: number; rows: number; bytes: number }>(
        "SELECT COALESCE(SUM(CASE WHEN type = ? THEN json_array_length(envelope, '$.updates') ELSE 1 END), 0) AS events, COUNT(*) AS rows, COALESCE(SUM(LENGTH(CAST(envelope AS BLOB))), 0) AS bytes FROM events",
        CHUNK_TYPE,
      )
      .one();
  }

  /** The first seq the log holds (a chunk row's first delta), or null when it holds none. */
  firstRetainedSeq(): number | null {
    const row = this.sql.exec<EventRow>("SELECT seq, type, envelope FROM events ORDER BY seq LIMIT 1").toArray()[0];
    return row ? firstSeqOf(row) : (this.tail.firstSeq() ?? null);
  }

  /** The seq at and below which trimming to `maxEvents` removes events (0: nothing). */
  trimCutoff(maxEvents: number): number {
    return Math.max(0, this.lastSeq() - maxEvents);
  }

  /** Removes the events at and below `cutoff`; turn records outlive the log. */
  trimEvents(cutoff: number): number {
    if (cutoff <= 0) return 0;
    const removed = this.sql.exec("DELETE FROM events WHERE seq <= ?", cutoff).rowsWritten;
    if (cutoff > (this.meta.get("trimmedThrough") ?? 0)) this.meta.set("trimmedThrough", cutoff);
    return removed;
  }

  /**
   * The lowest cursor the log holds (docs/sse-protocol.md §4): the seq trimming removed through,
   * else the oldest retained seq minus one. Not MIN(seq) - 1 alone: compaction removes seqs too
   * (§13), and a cursor in a compacted run is held, however old. Nor the trim's cutoff alone: a
   * chunk row holding seqs on both sides of it is kept whole (./held-tail.ts), its events held.
   */
  lowestHeldCursor(): number | null {
    const trimmed = this.meta.get("trimmedThrough");
    const first = this.firstRetainedSeq();
    if (first === null) return null;
    // A chunk row that holds seqs on both sides of a trim's cutoff was kept whole: its events are held.
    return trimmed === null ? first - 1 : Math.min(trimmed, first - 1);
  }

  // ---- compaction (../compaction.ts)

  /**
   * The event stored at exactly `seq` in its own row, as stored: validated, but the stored JSON's
   * own fields and order, not the schema's reading of them (a rewrite keeps them byte for byte).
   */
  storedEvent(seq: number): EventEnvelope | null {
    const text = this.sql
      .exec<{ envelope: string }>("SELECT envelope FROM events WHERE seq = ?", seq)
      .toArray()[0]?.envelope;
    if (text === undefined) return null;
    // A row holding several events (not one event's envelope) is not one stored event: null.
    const raw = JSON.parse(text) as unknown;
    if (!EventEnvelopeSchema.safeParse(raw).success) return null;
    return (raw as EventEnvelope).seq === seq ? (raw as EventEnvelope) : null;
  }

  /** The seqs of the log's events within `fromSeq`..`toSeq` that are not of `turnId` (each ends a compaction run). */
  otherEventSeqs(turnId: string, fromSeq: number, toSeq: number): number[] {
    return this.sql
      .exec<{ seq: number }>(
        "SELECT seq FROM events WHERE seq BETWEEN ? AND ? AND (turn_id IS NULL OR turn_id <> ?) ORDER BY seq",
        fromSeq,
        toSeq,
        turnId,
      )
      .toArray()
      .map((r) => r.seq);
  }

  /**
   * Applies a compaction plan: each run's events become its one event at its last seq. Each row
   * holding an event of a run is rewritten once (./log-chunks.ts `compactRows`: a chunk keeps what
   * is left of it, a row left with nothing goes), and no other row: one row written per row
   * touched. A row keeps its upstream id (the execution's cursor, `cursorOf`, is the newest). The
   * caller holds the transaction; `reads`, the chunks it read already (`eventsOfTurn`).
   */
  applyCompaction(
    runs: readonly { fromSeq: number; toSeq: number; envelope: EventEnvelope }[],
    reads?: ChunkReads,
  ): void {
    if (runs.length === 0) return;
    const from = Math.min(...runs.map((r) => r.fromSeq));
    const to = Math.max(...runs.map((r) => r.toSeq));
    // The rows holding seqs from..to: a row is keyed by its last seq, so up to the first at or past `to`.
    const rows = this.sql
      .exec<EventRow>(
        "SELECT seq, type, envelope FROM events WHERE seq >= ? AND seq <= COALESCE((SELECT MIN(seq) FROM events WHERE seq >= ?), ?) ORDER BY seq",
        from,
        to,
        to,
      )
      .toArray();
    const rewrites = compactRows(
      rows,
      runs.map((run) => ({
        fromSeq: run.fromSeq,
        toSeq: run.toSeq,
        row: { seq: run.toSeq, type: run.envelope.type, envelope: JSON.stringify(run.envelope) },
      })),
      reads,
    );
    for (const rewrite of rewrites) {
      if (rewrite.to)
        this.sql.exec(
          "UPDATE events SET seq = ?, type = ?, envelope = ? WHERE seq = ?",
          rewrite.to.seq,
          rewrite.to.type,
          rewrite.to.envelope,
          rewrite.seq,
        );
      else this.sql.exec("DELETE FROM events WHERE seq = ?", rewrite.seq);
    }
  }
}
