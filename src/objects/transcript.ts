/**
 * The transcript rebuilt from the event log: for a client that lost its state (a reset stream, a
 * new device). Pure: turns and their events in, messages out.
 */
import type { TranscriptMessage } from "../schemas/api";
import type { EventEnvelope, TurnRecord } from "./session-store";

type TranscriptPart = Extract<TranscriptMessage, { role: "assistant" }>["parts"][number];

const VISIBLE_PARTS = new Set(["text", "reasoning", "tool", "file", "subtask"]);

export function buildTranscript(turns: Array<{ turn: TurnRecord; events: EventEnvelope[] }>): TranscriptMessage[] {
  const messages: TranscriptMessage[] = [];
  for (const { turn, events } of turns) {
    messages.push({ role: "user", turnId: turn.turnId, text: turn.request.message, at: new Date(turn.createdAt).toISOString() });
    const parts = new Map<string, TranscriptPart>();
    for (const event of events) {
      if (event.type !== "message.part.updated") continue;
      const part = event.data.part as TranscriptPart | undefined;
      if (!part || !VISIBLE_PARTS.has(part.type)) continue;
      parts.set(part.id, { ...(parts.get(part.id) ?? {}), ...part });
    }
    const partList = [...parts.values()];
    const streamedText = partList
      .filter((p) => p.type === "text" && p.text)
      .map((p) => p.text)
      .join("\n\n");
    // Events of old turns may have been trimmed from the log: the stored result still stands.
    const text = turn.resultText ?? streamedText;
    if (partList.length === 0 && text) partList.push({ id: `${turn.executionId}:result`, type: "text", text });
    messages.push({
      role: "assistant",
      turnId: turn.turnId,
      executionId: turn.executionId,
      status: turn.status,
      parts: partList,
      text,
      ...(turn.error ? { error: turn.error } : {}),
      at: new Date(turn.completedAt ?? turn.updatedAt).toISOString(),
    });
  }
  return messages;
}
