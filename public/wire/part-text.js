// @ts-check
/**
 * The rule a part's text is rebuilt by (docs/sse-protocol.md, "Rebuilding a part's text"): one
 * module for both sides. The server stores and sends each text delta once
 * (src/session/part-deltas.ts) and rebuilds text with this rule (the transcript, compaction, the AI
 * SDK's stream); the chat page's reducer (public/lib/conversation.js) follows the stream with it.
 *
 * When a `message.part.updated` event's `part` has `text`, that is the part's whole text; when it
 * has none and the data has `delta`, the delta is appended to the text the reader holds for that
 * part id. The other fields of `part` replace the reader's. A reader that joined mid-answer
 * starts from `/messages` (which has the text up to its `lastEventId`) and follows the stream from
 * there. Pure.
 */

/** Part types whose text streams as deltas. @type {ReadonlySet<string>} */
export const STREAMED_TYPES = new Set(["text", "reasoning"]);

/**
 * A part's update as an event carries it: the part (with its whole text, or without it beside a delta).
 * @typedef {{ part: Record<string, unknown>, delta?: string }} PartUpdate
 */

/**
 * A reader's side of the rule: the text of a part after an update (undefined: none known yet).
 * @param {string | undefined} previous  the text held for the part
 * @param {PartUpdate} update
 * @returns {string | undefined}
 */
export function applyPartUpdate(previous, update) {
  if (update.delta !== undefined && typeof update.part.text !== "string") return (previous ?? "") + update.delta;
  return typeof update.part.text === "string" ? update.part.text : previous;
}
