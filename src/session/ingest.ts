/**
 * Ingesting one provider event, as a pure step: the turn's state and the event in; what to show,
 * what to store and what the turn becomes, out. The upstream reader applies the step in one
 * transaction (./upstream-reader.ts). Duplicates are dropped before this step, by upstream id
 * (SessionStore.admitUpstream), and copies of a child task's update by its sourceEventId
 * (SessionStore.admitChildUpdate).
 */

import { STREAMED_TYPES } from "../../public/wire/part-text.js";
import type { ProviderEvent, RunError, ShownEvent, TerminalStatus } from "../providers/provider";
import type { TokenUsage } from "../schemas/common";
import type { InteractionRequest } from "../schemas/contracts";
import { type ExecutionUsageState, foldReceipt, foldUsage, toTokenUsage } from "../usage/usage-fold";
import { compactPart } from "./part-deltas";
import { TAIL_MAX_BYTES, updateBytes } from "./store/held-tail";
import { isNumericUpstreamId } from "./store/log";
import type { InteractionStatus, TurnStatus } from "./store/records";

export interface IngestState {
  status: TurnStatus;
  /** The execution's usage fold so far. */
  usage: ExecutionUsageState;
  /** The status of an ask this session knows, or null. */
  askStatus(interactionId: string): InteractionStatus | null;
  /** Someone asked to stop the run (the user, or a budget). */
  cancelRequested?: boolean;
  /** The text the session holds for a streaming part (undefined: none). */
  partText?(partId: string): string | undefined;
}

export interface IngestStep {
  /** The event to append for viewers (with the running total attached as cumulative usage), if any. */
  shown: (ShownEvent & { usage?: TokenUsage }) | null;
  /** A new ask to record and announce. */
  askRequested: InteractionRequest | null;
  /** An outstanding ask that ended without an answer. */
  askEnded: { interactionId: string; status: "expired" | "cancelled"; reason?: string } | null;
  /**
   * The run's stream failed here (docs/contracts.md, the usage fold: a step with an invalid count
   * is a stream error): the turn ends failed with this error, and nothing after it is taken.
   */
  streamError: { code: string; message: string } | null;
  /** The new usage fold, when it changed. */
  usage: ExecutionUsageState | null;
  /** The turn ends here. */
  finish: { status: TerminalStatus; text?: string; error?: RunError } | null;
  /** A streaming part's text after this event, to hold for the next delta. */
  partText: { partId: string; text: string } | null;
}

const nothing: IngestStep = {
  shown: null,
  askRequested: null,
  askEnded: null,
  streamError: null,
  usage: null,
  finish: null,
  partText: null,
};

export function ingestStep(state: IngestState, event: ProviderEvent): IngestStep {
  const live = state.status === "running";
  switch (event.kind) {
    case "part": {
      // Each text delta once: the part's whole text only when it does not continue what is held.
      const compacted = compactPart(event.part, event.delta, state.partText?.(event.part.id));
      return {
        ...nothing,
        shown: { type: "message.part.updated", data: { ...compacted.data } },
        partText: compacted.text !== undefined ? { partId: event.part.id, text: compacted.text } : null,
      };
    }
    case "passthrough":
      return { ...nothing, shown: event.shown };
    case "private":
      return nothing;
    case "child-task":
      // Copies (the same sourceEventId) were dropped before this step (SessionStore.admitChildUpdate).
      return { ...nothing, shown: { type: "child-task", data: { ...event.task } } };
    case "warning":
      return {
        ...nothing,
        shown: {
          type: "warning",
          data: {
            code: event.code,
            message: event.message,
            ...(event.upstreamId !== undefined ? { upstreamEventId: event.upstreamId } : {}),
          },
        },
      };
    case "interaction.requested": {
      const known = state.askStatus(event.request.id) !== null;
      return { ...nothing, shown: event.shown ?? null, askRequested: known ? null : event.request };
    }
    case "interaction.ended": {
      const outstanding = state.askStatus(event.interactionId) === "outstanding";
      return {
        ...nothing,
        shown: event.shown ?? null,
        askEnded: outstanding
          ? { interactionId: event.interactionId, status: event.why, ...(event.reason ? { reason: event.reason } : {}) }
          : null,
      };
    }
    case "usage": {
      const folded = foldUsage(state.usage, event.usage);
      const attach = folded.running ? toTokenUsage(folded.running) : null;
      const shown = event.shown ? { ...event.shown, ...(attach ? { usage: attach } : {}) } : null;
      const streamError =
        event.usage.problem !== undefined && live
          ? {
              code: "usage_invalid",
              message: `the agent service reported an invalid usage count (${event.usage.problem}): the run's stream failed, and the run was stopped`,
            }
          : null;
      return { ...nothing, shown, streamError, usage: folded.changed ? folded.state : null };
    }
    case "terminal": {
      // A second terminal frame (`done` after `result`) repeats what viewers already have.
      if (!live) return nothing;
      const last = event.usage ? foldUsage(state.usage, event.usage) : null;
      const folded = last?.changed ? last.state : state.usage;
      const receipt = event.receipt && folded.receipt === null ? event.receipt : undefined;
      const final = receipt ? foldReceipt(folded, receipt, event.receiptProvenance) : folded;
      const attach = receipt ? toTokenUsage(receipt) : last?.running ? toTokenUsage(last.running) : null;
      const shown = event.shown ? { ...event.shown, ...(attach ? { usage: attach } : {}) } : null;
      return {
        ...nothing,
        shown,
        usage: final !== state.usage ? final : null,
        // A terminal frame that does not say how the run ended, after a stop was asked for: cancelled.
        finish: {
          status: event.assumed && state.cancelRequested ? "cancelled" : event.status,
          ...(event.text !== undefined ? { text: event.text } : {}),
          ...(event.error ? { error: event.error } : {}),
        },
      };
    }
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
}

/**
 * A part's update the store may hold (published at once, stored with a later commit:
 * ./store/held-tail.ts), as its event's data; null for any other event. Only an update upstream can send
 * again (its upstream id is a number: the run's cursor is then the newest stored row's id) and
 * whose event replaces what a reader holds, of a running turn:
 * - a text or reasoning part's update whose frame carried the part's whole text: held as the delta
 *   when it continues the text the session holds (not empty), else as the part's whole update
 *   (`data: { part }`, its text in it);
 * - any other part's update without a delta: its whole update (the part in full).
 * A reader resumed in a new instance holds no text, so its first update of each part is whole,
 * never a delta again: what a crash takes of the tail comes back within the part's whole state.
 */
export function holdableUpdate(
  event: ProviderEvent,
  status: TurnStatus | null,
  known: string | undefined,
):
  | { kind: "delta"; part: Record<string, unknown>; delta: string }
  | { kind: "whole"; part: Record<string, unknown> }
  | null {
  if (status !== "running" || event.kind !== "part") return null;
  if (event.upstreamId === undefined || !isNumericUpstreamId(event.upstreamId)) return null;
  if (!STREAMED_TYPES.has(event.part.type)) {
    if (event.delta !== undefined) return null;
    const whole = { kind: "whole" as const, part: event.part };
    return updateBytes(whole) <= TAIL_MAX_BYTES ? whole : null;
  }
  const text = event.part.text;
  if (typeof text !== "string" || text.length > TAIL_MAX_BYTES) return null;
  if (known !== undefined && known !== "" && event.delta !== undefined) {
    const compacted = compactPart(event.part, event.delta, known);
    if (compacted.data.delta !== undefined && !("text" in compacted.data.part))
      return { kind: "delta", part: compacted.data.part, delta: compacted.data.delta };
  }
  const whole = { kind: "whole" as const, part: event.part };
  return updateBytes(whole) <= TAIL_MAX_BYTES ? whole : null;
}

/**
 * An estimate of an event's size in memory, in bytes (the ingest queue's byte bound): the length
 * of its strings plus a few bytes per value, found by a walk that never copies a string (cheaper
 * than serializing it). An estimate, not a measurement: V8 may hold a character in one byte or two.
 */
export function eventBytes(event: ProviderEvent): number {
  let bytes = 0;
  const stack: unknown[] = [event];
  while (stack.length > 0) {
    const value = stack.pop();
    bytes += 8;
    if (typeof value === "string") bytes += value.length;
    else if (Array.isArray(value)) for (const inner of value) stack.push(inner);
    else if (value !== null && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) {
        bytes += key.length;
        stack.push(inner);
      }
    }
  }
  return bytes;
}
