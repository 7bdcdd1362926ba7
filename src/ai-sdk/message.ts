/**
 * The conversation as the AI SDK's `UIMessage[]` (for `useChat({ messages })` after a reload):
 * each turn a user message (id: the turn id) and an assistant message folded from the very
 * chunks its stream carries (./chunks.ts), so what a client streamed and what it reloads are the
 * same message. Pure. The fold follows the SDK's own (`processUIMessageStream` in the `ai`
 * package) for the chunks the gateway sends; test/ai-sdk checks it against the SDK's reader.
 */
import type { z } from "zod";
import type { EventEnvelope, TranscriptPartSchema, TurnStatus, UsageView } from "../schemas/api";
import { frameChunk, TurnChunks, TurnResponse, type UiChunk } from "./chunks";

/**
 * A turn as its messages are made from: what its record says and its log's events (the session
 * hands its transcript's turns, src/session/transcript.ts). When the log was trimmed into the
 * turn, its kept `parts` stand in for its events.
 */
export interface ChatTurn {
  turn: {
    turnId: string;
    executionId: string;
    request: { message: string };
    status: z.infer<typeof TurnStatus>;
    error: { code: string; message: string } | null;
    cancelReason: string | null;
    usage: UsageView | null;
    parts: z.infer<typeof TranscriptPartSchema>[] | null;
    updatedAt: number;
  };
  events: EventEnvelope[];
}

type Obj = Record<string, unknown>;

export interface UiPart extends Obj {
  type: string;
}

export interface UiMessage {
  id: string;
  role: "user" | "assistant";
  metadata?: Obj;
  parts: UiPart[];
}

const isPlain = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** The SDK's metadata merge: objects merge key by key, anything else replaces; undefined is skipped. */
function mergeMetadata(base: Obj | undefined, next: Obj): Obj {
  if (!base) return next;
  const out: Obj = { ...base };
  for (const [key, value] of Object.entries(next)) {
    if (value === undefined) continue;
    out[key] = isPlain(value) && isPlain(out[key]) ? mergeMetadata(out[key] as Obj, value) : value;
  }
  return out;
}

/** Drops undefined values, as JSON would. */
function defined(part: Obj): UiPart {
  return Object.fromEntries(Object.entries(part).filter(([, v]) => v !== undefined)) as UiPart;
}

/** Folds one turn's chunks into its assistant message. */
export class MessageFold {
  readonly message: UiMessage;
  private readonly openTexts = new Map<string, UiPart>();

  constructor(id: string) {
    this.message = { id, role: "assistant", parts: [] };
  }

  private tool(toolCallId: string): UiPart | undefined {
    return this.message.parts.find((p) => p.type === "dynamic-tool" && p.toolCallId === toolCallId);
  }

  private currentStep(): UiPart[] {
    const parts = this.message.parts;
    let i = parts.length;
    while (i > 0 && parts[i - 1]!.type !== "step-start") i--;
    return parts.slice(i);
  }

  apply(chunk: UiChunk): void {
    const parts = this.message.parts;
    switch (chunk.type) {
      case "start":
        if (typeof chunk.messageId === "string") this.message.id = chunk.messageId;
        if (isPlain(chunk.messageMetadata))
          this.message.metadata = mergeMetadata(this.message.metadata, chunk.messageMetadata);
        return;
      case "finish":
      case "message-metadata":
        if (isPlain(chunk.messageMetadata))
          this.message.metadata = mergeMetadata(this.message.metadata, chunk.messageMetadata);
        return;
      case "start-step":
        parts.push({ type: "step-start" });
        return;
      case "text-start":
      case "reasoning-start": {
        const kind = chunk.type === "text-start" ? "text" : "reasoning";
        const part: UiPart =
          kind === "text"
            ? { type: "text", text: "", state: "streaming" }
            : { type: "reasoning", id: chunk.id, text: "", state: "streaming" };
        this.openTexts.set(`${kind}:${String(chunk.id)}`, part);
        parts.push(part);
        return;
      }
      case "text-delta":
      case "reasoning-delta": {
        const part = this.openTexts.get(`${chunk.type === "text-delta" ? "text" : "reasoning"}:${String(chunk.id)}`);
        if (part) part.text = String(part.text) + String(chunk.delta);
        return;
      }
      case "text-end":
      case "reasoning-end": {
        const key = `${chunk.type === "text-end" ? "text" : "reasoning"}:${String(chunk.id)}`;
        const part = this.openTexts.get(key);
        if (part) part.state = "done";
        this.openTexts.delete(key);
        return;
      }
      case "file":
        parts.push({ type: "file", mediaType: chunk.mediaType, url: chunk.url });
        return;
      case "tool-input-start":
      case "tool-input-available": {
        const state = chunk.type === "tool-input-start" ? "input-streaming" : "input-available";
        const existing = this.currentStep().find((p) => p.type === "dynamic-tool" && p.toolCallId === chunk.toolCallId);
        if (existing) {
          existing.state = state;
          existing.toolName = chunk.toolName;
          existing.input = chunk.input;
          delete existing.output;
          delete existing.errorText;
          if (chunk.title !== undefined) existing.title = chunk.title;
          existing.providerExecuted = chunk.providerExecuted ?? existing.providerExecuted;
          for (const key of Object.keys(existing)) if (existing[key] === undefined) delete existing[key];
        } else {
          parts.push(
            defined({
              type: "dynamic-tool",
              toolName: chunk.toolName,
              toolCallId: chunk.toolCallId,
              state,
              input: chunk.input,
              providerExecuted: chunk.providerExecuted,
              title: chunk.title,
            }),
          );
        }
        return;
      }
      case "tool-approval-request": {
        const part = this.tool(String(chunk.toolCallId));
        if (part) Object.assign(part, { state: "approval-requested", approval: { id: chunk.approvalId } });
        return;
      }
      case "tool-approval-response": {
        const part = this.message.parts.find(
          (p) => p.type === "dynamic-tool" && isPlain(p.approval) && p.approval.id === chunk.approvalId,
        );
        if (part)
          part.approval = {
            ...(part.approval as Obj),
            id: chunk.approvalId,
            approved: chunk.approved,
            ...(chunk.reason != null ? { reason: chunk.reason } : {}),
          };
        if (part) part.state = "approval-responded";
        return;
      }
      case "tool-output-denied": {
        const part = this.tool(String(chunk.toolCallId));
        if (part) part.state = "output-denied";
        return;
      }
      case "tool-output-available":
      case "tool-output-error": {
        const part = this.tool(String(chunk.toolCallId));
        if (!part) return;
        part.state = chunk.type === "tool-output-available" ? "output-available" : "output-error";
        if (chunk.type === "tool-output-available") {
          part.output = chunk.output;
          delete part.errorText;
        } else {
          part.errorText = chunk.errorText;
          delete part.output;
        }
        if (chunk.providerExecuted !== undefined) part.providerExecuted = chunk.providerExecuted;
        return;
      }
      default:
        if (chunk.type.startsWith("data-") && chunk.transient !== true) {
          const existing =
            chunk.id !== undefined ? parts.find((p) => p.type === chunk.type && p.id === chunk.id) : undefined;
          if (existing) existing.data = chunk.data;
          else parts.push(defined({ type: chunk.type, id: chunk.id, data: chunk.data }));
        }
    }
  }
}

/** Events standing in for a turn whose log was trimmed into: its kept parts and its end. */
function keptEvents(turn: ChatTurn["turn"]): EventEnvelope[] {
  const base = { turnId: turn.turnId, executionId: turn.executionId, at: new Date(turn.updatedAt).toISOString() };
  const events: EventEnvelope[] = [];
  let seq = 0;
  for (const part of turn.parts ?? []) {
    if (part.type === "interaction") {
      events.push({ ...base, seq: ++seq, type: "interaction.requested", data: { interaction: part.request } });
      if (part.status !== "outstanding") {
        events.push({
          ...base,
          seq: ++seq,
          type: "interaction.resolved",
          data: {
            interactionId: part.id,
            status: part.status,
            ...(part.outcome ? { outcome: part.outcome } : {}),
            ...(part.reason ? { reason: part.reason } : {}),
          },
        });
      }
    } else if (part.type === "warning") {
      // A warning kept as a part is its event again, under its own seq (its chunk's id is the streamed one).
      const own = Number(part.id.slice("warning:".length));
      events.push({
        ...base,
        seq: Number.isInteger(own) && own > 0 ? own : ++seq,
        type: "warning",
        data: { code: part.code, message: part.message },
      });
    } else if (part.type === "subagent") {
      const { id: _, type: __, ...task } = part;
      events.push({ ...base, seq: ++seq, type: "child-task", data: task });
    } else {
      events.push({ ...base, seq: ++seq, type: "message.part.updated", data: { part } });
    }
  }
  if (turn.status === "completed" || turn.status === "failed" || turn.status === "cancelled") {
    const data = {
      status: turn.status,
      ...(turn.error ? { error: turn.error } : {}),
      ...(turn.status === "cancelled" && turn.cancelReason ? { reason: turn.cancelReason } : {}),
      ...(turn.usage ? { usage: turn.usage } : {}),
    };
    events.push({ ...base, seq: ++seq, type: `turn.${turn.status}`, data });
  }
  return events;
}

const eventsOf = (entry: ChatTurn): EventEnvelope[] => (entry.turn.parts ? keptEvents(entry.turn) : entry.events);

/** Every chunk of a turn, from its first event to its end or to now. */
function turnChunks(entry: ChatTurn): UiChunk[] {
  const mapper = new TurnChunks(entry.turn.turnId);
  const chunks = [mapper.start()];
  for (const event of eventsOf(entry)) chunks.push(...mapper.push(event).chunks);
  return chunks;
}

/** A finished turn's response as SSE text: from its start, or after the asks a client answered. */
export function replayTurn(entry: ChatTurn, continueAfterAsks: string[]): string {
  const response = new TurnResponse(entry.turn.turnId, { continueAfterAsks, pauseAt: () => false });
  let out = response.begin().map(frameChunk).join("");
  for (const event of eventsOf(entry)) out += response.feed(event).map(frameChunk).join("");
  return out;
}

/** The conversation as UI messages: per turn, the user's message and the agent's answer. */
export function uiMessages<T extends ChatTurn>(turns: readonly T[]): UiMessage[] {
  const out: UiMessage[] = [];
  for (const entry of turns) {
    out.push({ id: entry.turn.turnId, role: "user", parts: [{ type: "text", text: entry.turn.request.message }] });
    const chunks = turnChunks(entry);
    const fold = new MessageFold(String(chunks[0]!.messageId));
    for (const chunk of chunks) fold.apply(chunk);
    out.push(fold.message);
  }
  return out;
}
