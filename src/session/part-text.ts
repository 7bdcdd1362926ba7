/**
 * Each text delta stored and sent once. Upstream (OpenCode's wire) repeats the whole text of a
 * part on every delta, so an answer streamed as one part costs bytes quadratic in its length. The
 * session keeps the text of each streaming part in memory while its turn runs and, when an update
 * is exactly the text so far plus its delta, stores and sends only the delta.
 *
 * The public rule (docs/sse-protocol.md, "Rebuilding a part's text"): when a
 * `message.part.updated` event's `part` has `text`, that is the part's whole text; when it has none
 * and the data has `delta`, the delta is appended to the text the client holds for that part id.
 * The other fields of `part` replace the client's. A client that joined mid-answer starts from `/messages` (which has
 * the text up to its `lastEventId`) and follows the stream from there.
 */

/** Part types whose text streams as deltas. */
export const STREAMED_TYPES: ReadonlySet<string> = new Set(["text", "reasoning"]);

export interface PartUpdate {
  part: Record<string, unknown>;
  delta?: string;
}

export interface CompactedPart {
  /** What the event carries. */
  data: PartUpdate;
  /** The part's text after this update, to remember for the next one (undefined: not tracked). */
  text: string | undefined;
}

/**
 * The event data for one part update, given the text this session holds for the part (undefined
 * when it holds none: the part's first update, or a reader resumed in a new instance).
 */
export function compactPart(part: Record<string, unknown>, delta: string | undefined, known: string | undefined): CompactedPart {
  const whole: PartUpdate = { part, ...(delta !== undefined ? { delta } : {}) };
  if (typeof part.id !== "string" || typeof part.type !== "string" || !STREAMED_TYPES.has(part.type)) return { data: whole, text: undefined };
  const full = typeof part.text === "string" ? part.text : undefined;
  if (delta === undefined) return { data: { part }, text: full ?? known };
  const base = known ?? "";
  if (full === undefined) return { data: { part, delta }, text: base + delta };
  if (continues(full, base, delta)) {
    const { text: _omitted, ...rest } = part;
    // The upstream's own string, not base + delta: a concatenation is a rope that the next
    // update's comparison would copy whole (a part's text copied once per delta).
    return { data: { part: rest, delta }, text: full };
  }
  // The text does not continue what this session holds (a frame it never saw, an edit upstream):
  // the part goes whole, and replaces what clients hold.
  return { data: { part }, text: full };
}

/** Whether `full` is exactly `base` followed by `delta`, found without building `base + delta`. */
function continues(full: string, base: string, delta: string): boolean {
  return full.length === base.length + delta.length && full.endsWith(delta) && full.startsWith(base);
}

/** A client's side of the rule: the text of a part after an update. */
export function applyPartUpdate(previous: string | undefined, update: PartUpdate): string | undefined {
  if (update.delta !== undefined && typeof update.part.text !== "string") return (previous ?? "") + update.delta;
  return typeof update.part.text === "string" ? update.part.text : previous;
}
