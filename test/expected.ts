import { buildScript } from "../src/emulator/script";
import type { EventEnvelope } from "../src/session/store/records";

/**
 * The browser-visible upstream events a scripted run must produce, computed from the emulator's
 * pure script: what an uninterrupted, undisturbed stream delivers, in order.
 */
export function expectedUpstream(message: string, executionId: string): Array<{ type: string; key: string }> {
  return (
    buildScript({ message, executionId, sessionId: "unused", backend: "opencode" })
      // Private frames never reach a browser; `done` after `result` repeats the receipt and is not logged.
      .filter((f) => f.type !== "native.session.observed" && f.type !== "done")
      .map((f) => ({ type: f.type, key: keyOf(f.type, f.data) }))
  );
}

function keyOf(type: string, data: Record<string, unknown>): string {
  if (type === "message.part.updated") {
    const part = data.part as { id: string; text?: string; state?: { status: string } };
    return `${part.id}|${part.text ?? ""}|${part.state?.status ?? ""}`;
  }
  if (type === "raw") return JSON.stringify((data.event as { part: unknown }).part);
  if (type === "status") return String(data.status);
  if (type === "result") return String(data.finalText);
  return "";
}

/**
 * A list of upstream events as a finished turn's log keeps them once its end compacted it
 * (docs/sse-protocol.md §13), for a reader that read part of the turn live and the rest after its
 * end: each run of one text or reasoning part's updates is its last (the part's whole text then),
 * and the agent's result frame no longer repeats the answer. Applied to both sides of a comparison.
 */
export function compacted(events: Array<{ type: string; key: string }>): Array<{ type: string; key: string }> {
  const out: Array<{ type: string; key: string }> = [];
  const streamedPart = (e: { type: string; key: string }) =>
    e.type === "message.part.updated" && e.key.endsWith("|") ? e.key.slice(0, e.key.indexOf("|")) : null;
  for (const e of events) {
    const part = streamedPart(e);
    const previous = out.at(-1);
    if (part !== null && previous && streamedPart(previous) === part) out[out.length - 1] = e;
    else out.push(e.type === "result" ? { type: e.type, key: "" } : e);
  }
  return out;
}

/** Events the gateway adds to the log itself (not upstream frames). */
const GATEWAY_TYPES = ["turn.", "usage.updated", "budget.", "interaction.requested", "interaction.resolved", "warning"];

/**
 * The upstream events (not the gateway's own turn.* events) a reader saw, in the same form. The
 * gateway sends a text delta without the part's text so far; the reader rebuilds that text by the
 * documented rule (docs/sse-protocol.md): a part with `text` has its whole text, one without
 * appends its `delta` to the text held for the part.
 */
export function seenUpstream(events: EventEnvelope[], turnId: string): Array<{ type: string; key: string }> {
  const texts = new Map<string, string>();
  return events
    .filter((e) => e.turnId === turnId && !GATEWAY_TYPES.some((prefix) => e.type.startsWith(prefix)))
    .map((e) => {
      if (e.type !== "message.part.updated") return { type: e.type, key: keyOf(e.type, e.data) };
      const part = e.data.part as { id: string; text?: string };
      const delta = e.data.delta as string | undefined;
      const text =
        typeof part.text === "string"
          ? part.text
          : delta !== undefined
            ? (texts.get(part.id) ?? "") + delta
            : texts.get(part.id);
      if (text !== undefined) texts.set(part.id, text);
      return {
        type: e.type,
        key: keyOf(e.type, { ...e.data, part: { ...part, ...(text !== undefined ? { text } : {}) } }),
      };
    });
}
