/**
 * The transcript rebuilt from the event log: for a client that lost its state (a reset stream, a
 * new device, a reload). Pure: turns, their events and their asks in, messages out.
 *
 * An ask is a part of its turn, placed where the agent asked it: what was asked (the request) and
 * how it ended (status, outcome, reason). Never what was answered: the session never stores an
 * answer's values, and the transcript has nothing that could carry them. A warning the turn's
 * events carried is a part too, where it came (`agent_memory_reset` is the only sign that the
 * agent started without the earlier conversation: a reload must not lose it). A child task the
 * agent started (a subagent) is a part too, where its first update came, holding its latest
 * update: one part per `childId`, nested by its `parentChildId` (copies of an update never reach
 * the log: the session applies each `sourceEventId` once). What the turn really changed in the
 * workspace is a part (`changes`, from its `workspace.changes` event), and so is each undo or redo
 * of those changes (`restore`), where they came (../session/workspace.ts).
 */

import { applyPartUpdate } from "../../public/wire/part-text.js";
import type { TranscriptMessage } from "../schemas/api";
import type { EventEnvelope, InteractionRecord, TranscriptPart, TurnRecord } from "./store/records";
import type { SessionStore } from "./store/store";

type InteractionPart = Extract<TranscriptPart, { type: "interaction" }>;

const VISIBLE_PARTS = new Set(["text", "reasoning", "tool", "file", "subtask"]);

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

export interface TranscriptTurn {
  turn: TurnRecord;
  events: EventEnvelope[];
  /** The turn's asks as the session recorded them (whatever their status). */
  interactions: InteractionRecord[];
}

function interactionPart(ask: InteractionRecord, reason: string | undefined): InteractionPart {
  return {
    id: ask.interactionId,
    type: "interaction",
    request: ask.request,
    status: ask.status,
    ...(ask.outcome === "accepted" || ask.outcome === "declined" || ask.outcome === "cancelled"
      ? { outcome: ask.outcome }
      : {}),
    ...(reason ? { reason } : {}),
    askedAt: new Date(ask.createdAt).toISOString(),
    ...(ask.resolvedAt !== null ? { resolvedAt: new Date(ask.resolvedAt).toISOString() } : {}),
  };
}

/** One turn's message parts from its events and asks (kept on the turn when the log is trimmed into it). */
export function turnParts({ events, interactions }: Omit<TranscriptTurn, "turn">): TranscriptPart[] {
  // Keyed by kind and id, in first-seen order: a part and an ask never collide.
  const parts = new Map<string, TranscriptPart>();
  const asks = new Map(interactions.map((ask) => [ask.interactionId, ask]));
  const reasons = new Map<string, string>();
  for (const event of events) {
    if (event.type === "message.part.updated") {
      const part = event.data.part as TranscriptPart | undefined;
      if (!part || !VISIBLE_PARTS.has(part.type)) continue;
      const key = `part:${part.id}`;
      const previous = parts.get(key) as (TranscriptPart & { text?: string }) | undefined;
      // A delta appends to the text so far; a part with its text replaces it (public/wire/part-text.js).
      const text = applyPartUpdate(previous?.text, {
        part: part as Record<string, unknown>,
        ...(typeof event.data.delta === "string" ? { delta: event.data.delta } : {}),
      });
      parts.set(key, { ...(previous ?? {}), ...part, ...(text !== undefined ? { text } : {}) } as TranscriptPart);
    } else if (event.type === "interaction.requested") {
      const id = (event.data.interaction as { id?: unknown } | undefined)?.id;
      const ask = typeof id === "string" ? asks.get(id) : undefined;
      // A placeholder keeps the ask where it was asked; the stored record fills it in below.
      if (ask) parts.set(`ask:${ask.interactionId}`, interactionPart(ask, undefined));
    } else if (
      event.type === "interaction.resolved" &&
      typeof event.data.interactionId === "string" &&
      typeof event.data.reason === "string"
    ) {
      reasons.set(event.data.interactionId, event.data.reason);
    } else if (event.type === "child-task" && typeof event.data.childId === "string") {
      const { sourceEventId: _, ...task } = event.data;
      parts.set(`subagent:${event.data.childId}`, {
        ...task,
        id: event.data.childId,
        type: "subagent",
      } as TranscriptPart);
    } else if (event.type === "workspace.changes") {
      const { turnId: _, ...changes } = event.data;
      const id = `changes:${event.seq}`;
      parts.set(id, { ...changes, id, type: "changes" } as TranscriptPart);
    } else if (event.type === "workspace.restored") {
      const id = `restore:${event.seq}`;
      parts.set(id, {
        id,
        type: "restore",
        direction: event.data.direction === "redo" ? "redo" : "undo",
        operationId: str(event.data.operationId) ?? "",
        restoredAt: str(event.data.restoredAt) ?? "",
      });
    } else if (event.type === "warning") {
      const id = `warning:${event.seq}`;
      parts.set(id, {
        id,
        type: "warning",
        code: str(event.data.code) ?? "warning",
        message: str(event.data.message) ?? "",
      });
    }
  }
  // The stored record is authoritative; an ask whose events were trimmed still shows, at the end.
  for (const ask of asks.values())
    parts.set(`ask:${ask.interactionId}`, interactionPart(ask, reasons.get(ask.interactionId)));
  return [...parts.values()];
}

/** A message's text: its text parts joined by a blank line (what a turn's result is, when the agent's answer is its message). */
export function messageText(parts: readonly TranscriptPart[]): string {
  return parts.flatMap((p) => (p.type === "text" && p.text ? [p.text] : [])).join("\n\n");
}

/**
 * The turn with its result's text, read back from its parts when they hold it (`answerInParts`,
 * ./turn-end.ts compactTurn): the parts kept on the turn when the log was trimmed into it, else its
 * events in the log.
 */
export function withAnswer(store: Pick<SessionStore, "eventsOfTurn">, turn: TurnRecord): TurnRecord {
  if (!turn.answerInParts || turn.resultText !== null) return turn;
  const parts = turn.parts ?? turnParts({ events: store.eventsOfTurn(turn.turnId), interactions: [] });
  return { ...turn, resultText: messageText(parts) };
}

export function buildTranscript(turns: TranscriptTurn[]): TranscriptMessage[] {
  const messages: TranscriptMessage[] = [];
  for (const { turn, events, interactions } of turns) {
    messages.push({
      role: "user",
      turnId: turn.turnId,
      text: turn.request.message,
      at: new Date(turn.createdAt).toISOString(),
    });
    // A turn the log was trimmed into kept its parts when it was trimmed.
    const partList = turn.parts ? [...turn.parts] : turnParts({ events, interactions });
    const streamedText = messageText(partList);
    // Events of old turns may have been trimmed from the log: the stored result still stands.
    const text = turn.resultText ?? streamedText;
    if (!partList.some((p) => VISIBLE_PARTS.has(p.type)) && text)
      partList.push({ id: `${turn.executionId}:result`, type: "text", text });
    messages.push({
      role: "assistant",
      turnId: turn.turnId,
      executionId: turn.executionId,
      status: turn.status,
      parts: partList,
      text,
      ...(turn.error ? { error: turn.error } : {}),
      ...(turn.status === "cancelled" && turn.cancelReason ? { cancelReason: turn.cancelReason } : {}),
      at: new Date(turn.completedAt ?? turn.updatedAt).toISOString(),
    });
  }
  return messages;
}
