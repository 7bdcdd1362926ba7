/**
 * Each text delta stored and sent once. Upstream (OpenCode's wire) repeats the whole text of a
 * part on every delta, so an answer streamed as one part costs bytes quadratic in its length. The
 * session keeps the text of each streaming part in memory while its turn runs and, when an update
 * is exactly the text so far plus its delta, stores and sends only the delta. Readers rebuild the
 * text by the public rule, ../../public/wire/part-text.js (docs/sse-protocol.md, "Rebuilding a
 * part's text").
 */
import { type PartUpdate, STREAMED_TYPES } from "../../public/wire/part-text.js";

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
export function compactPart(
  part: Record<string, unknown>,
  delta: string | undefined,
  known: string | undefined,
): CompactedPart {
  const whole: PartUpdate = { part, ...(delta !== undefined ? { delta } : {}) };
  if (typeof part.id !== "string" || typeof part.type !== "string" || !STREAMED_TYPES.has(part.type))
    return { data: whole, text: undefined };
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
