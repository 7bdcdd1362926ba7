/**
 * Turn-end compaction of the event log (docs/sse-protocol.md §13): what a finished turn keeps is
 * the size of its answer, not of its stream. Pure: a finished turn's events in seq order in, the
 * replacements to make out; the store applies them (`SessionStore.applyCompaction`: one DELETE by
 * seq range and one INSERT each) in one commit after the turn's end (./turn-end.ts).
 *
 * - Each maximal run of the turn's text or reasoning part updates of one part id, with no other
 *   event of the conversation's log between them, becomes ONE event: the part's state at the
 *   run's end (its fields, later ones winning, and its whole `text`), at the run's last seq and
 *   `at`. A reader whose cursor is inside the run gets that snapshot first (its seq is past the
 *   cursor) and its `part.text` replaces what the reader held (§1.6): it holds exactly what a
 *   reader of the whole stream holds. A run of one event is left as it is.
 * - The answer is not repeated: the turn's terminal event's `result`, and the relayed upstream
 *   `result` frame's `finalText`, go when they are exactly the message's text (its text parts joined
 *   by a blank line, the transcript's rule), which the log then holds once, in the parts. The turn
 *   record keeps the result (`GET …/turns/{id}`).
 *
 * Idempotent: a compacted turn's runs are each one event and no event holds a copy of the answer,
 * so planning it again answers nothing.
 */
import { applyPartUpdate, STREAMED_TYPES } from "../../public/wire/part-text.js";
import type { EventEnvelope } from "./store/records";
import { messageText, turnParts } from "./transcript";

/** One replacement: the events at seqs `fromSeq`..`toSeq` (inclusive) become `envelope`, stored at `toSeq`. */
export interface CompactionRun {
  fromSeq: number;
  toSeq: number;
  envelope: EventEnvelope;
}

const PART_UPDATED = "message.part.updated";
const TERMINAL = new Set(["turn.completed", "turn.failed", "turn.cancelled"]);
/** Types of the events that may repeat the answer: the turn's end and the relayed upstream `result`. */
const REPEATS_ANSWER = new Set([...TERMINAL, "result"]);

/**
 * Whether an event of this type may be rewritten less its copy of the answer: the planner then
 * needs it exactly as stored (every field byte for byte, not as a schema reads it back), since
 * all but the copy is kept.
 */
export function mayRepeatAnswer(type: string): boolean {
  return REPEATS_ANSWER.has(type);
}

type Obj = Record<string, unknown>;
const isObj = (value: unknown): value is Obj => typeof value === "object" && value !== null && !Array.isArray(value);

/** The part id of a text or reasoning update that compaction may fold: nothing but `part` and `delta`, no usage. */
function streamedPartId(event: EventEnvelope): string | null {
  if (event.type !== PART_UPDATED || event.usage !== undefined || event.usageMode !== undefined) return null;
  const { part, delta, ...rest } = event.data;
  if (
    Object.keys(rest).length > 0 ||
    !isObj(part) ||
    typeof part.id !== "string" ||
    typeof part.type !== "string" ||
    !STREAMED_TYPES.has(part.type)
  )
    return null;
  if (delta !== undefined && typeof delta !== "string") return null;
  return part.id;
}

/**
 * The replacements that compact one finished turn. `events` are the turn's events in seq order;
 * `others` the seqs of the conversation's other events (of other turns, or of none) within the
 * turn's span, each of which ends a run.
 */
export function planCompaction(events: readonly EventEnvelope[], others: Iterable<number> = []): CompactionRun[] {
  const breaks = [...others].sort((a, b) => a - b);
  let nextBreak = 0;
  const texts = new Map<string, string | undefined>();
  const runs: CompactionRun[] = [];
  let run: { partId: string; first: EventEnvelope; last: EventEnvelope; count: number; part: Obj } | null = null;
  const close = (): void => {
    if (run && run.count > 1) {
      const text = texts.get(run.partId);
      const { text: _stale, ...part } = run.part;
      const { last } = run;
      runs.push({
        fromSeq: run.first.seq,
        toSeq: last.seq,
        envelope: {
          seq: last.seq,
          turnId: last.turnId,
          executionId: last.executionId,
          type: PART_UPDATED,
          data: { part: text !== undefined ? { ...part, text } : part },
          at: last.at,
        },
      });
    }
    run = null;
  };
  for (const event of events) {
    // Another event of the log between the previous one of the turn and this one ends the run.
    let broken = false;
    while (nextBreak < breaks.length && breaks[nextBreak]! < event.seq) {
      broken = true;
      nextBreak++;
    }
    if (broken) close();
    const partId = streamedPartId(event);
    if (partId === null) {
      close();
      continue;
    }
    const part = event.data.part as Obj;
    const delta = event.data.delta as string | undefined;
    texts.set(partId, applyPartUpdate(texts.get(partId), { part, ...(delta !== undefined ? { delta } : {}) }));
    if (
      run &&
      run.partId === partId &&
      run.last.turnId === event.turnId &&
      run.last.executionId === event.executionId
    ) {
      run.last = event;
      run.count++;
      run.part = { ...run.part, ...part };
    } else {
      close();
      run = { partId, first: event, last: event, count: 1, part: { ...part } };
    }
  }
  close();
  const copies = withoutAnswerCopies(applyRuns(events, runs));
  return [...runs, ...copies.map((envelope) => ({ fromSeq: envelope.seq, toSeq: envelope.seq, envelope }))];
}

/** The events once `runs` are applied (in seq order): what the log holds of the turn after them. */
export function applyRuns(events: readonly EventEnvelope[], runs: readonly CompactionRun[]): EventEnvelope[] {
  const out: EventEnvelope[] = [];
  let i = 0;
  const sorted = [...runs].sort((a, b) => a.fromSeq - b.fromSeq);
  for (const event of events) {
    while (i < sorted.length && sorted[i]!.toSeq < event.seq) i++;
    const run = sorted[i];
    if (run && event.seq >= run.fromSeq && event.seq <= run.toSeq) {
      if (event.seq === run.toSeq) out.push(run.envelope);
      continue;
    }
    out.push(event);
  }
  return out;
}

/**
 * The events that repeat the answer, without it, when it is exactly the message's text in the parts
 * (its text parts joined by a blank line): the turn's terminal event's `result` (`{ text }`), and
 * the relayed upstream `result` frame's `finalText` (Tangle's wire: the same text, which the
 * terminal event's result is read from).
 */
function withoutAnswerCopies(events: readonly EventEnvelope[]): EventEnvelope[] {
  const streamed = messageText(turnParts({ events: [...events], interactions: [] }));
  if (streamed === "") return [];
  const out: EventEnvelope[] = [];
  for (const event of events) {
    if (TERMINAL.has(event.type) && isObj(event.data.result)) {
      const result = event.data.result;
      if (Object.keys(result).length !== 1 || result.text !== streamed) continue;
      const { result: _answer, ...data } = event.data;
      out.push({ ...event, data });
    } else if (event.type === "result" && event.data.finalText === streamed) {
      const { finalText: _answer, ...data } = event.data;
      out.push({ ...event, data });
    }
  }
  return out;
}
