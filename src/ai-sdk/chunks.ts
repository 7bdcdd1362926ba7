/**
 * One turn of a conversation as the AI SDK's UI message stream protocol (the "Stream Protocols"
 * page of the `ai` package; chunk shapes as its `uiMessageChunkSchema`). Pure: the conversation
 * log's events in, protocol chunks out. The same mapping serves the live stream, a resumed
 * stream, a continuation after an answer and the `/v1/chat/:id/messages` rebuild (./message.ts),
 * so every view of a turn is the same message. docs/ai-sdk.md#use-it-from-the-ai-sdk has the table.
 *
 * - The turn is one assistant message, id `assistantMessageId(turnId)`; steps come from the
 *   agent's `step-start` parts.
 * - Text and reasoning parts stream as `*-start` / `*-delta` / `*-end` under the part's id; the
 *   agent's tool calls are dynamic tools the provider executed (input, then output or error).
 * - An ask is a tool call of its own, id the interaction id: a permission or a plan is a tool
 *   approval (`tool-approval-request`, answered by `addToolApprovalResponse`); a question is a
 *   client-side tool whose output is the answer (`addToolOutput`). How the ask ended closes that
 *   tool call: an approval response and the output, or its denial, or an error when it expired.
 *   Never what was answered: a question's output says only that it was answered.
 * - What the turn waits for is the message's metadata `waitingFor` (the `turnView` names:
 *   `awaiting_permission`, …), set with the ask's chunks and back to null with its end.
 * - Usage, the turn's id and how it ended are the message's metadata; warnings, budget stops and
 *   child tasks (`data-subagent`, id the `childId`, replaced by each update) are `data-*` parts;
 *   the conversation's status changes are transient `data-status` chunks.
 * - The turn's end: `finish` (completed), `error` (failed), `abort` (cancelled).
 */

import { applyPartUpdate } from "../../public/wire/part-text.js";
import { waitingStateOf } from "../../public/wire/waiting.js";
import type { EventEnvelope } from "../schemas/api";

export type UiChunk = { type: string } & Record<string, unknown>;

/** The one assistant message a turn is, in every view (a continuation must keep it). */
export function assistantMessageId(turnId: string): string {
  return `${turnId}:answer`;
}

/** The turn an assistant message id names, or null when it names none. */
export function turnOfAssistantMessage(messageId: string): string | null {
  return messageId.endsWith(":answer") && messageId.length > ":answer".length
    ? messageId.slice(0, -":answer".length)
    : null;
}

/** Tool names of the asks: a permission or a plan is approved, a question answered by its output. */
export const ASK_TOOL = { permission: "permission", plan: "plan", question: "question" } as const;
const APPROVAL_KINDS = new Set(["permission", "plan"]);

interface Ask {
  kind: string;
}

interface OpenText {
  /** The id the chunks use (the part id, or a fresh one when a part's text was replaced). */
  chunkId: string;
  text: string;
  kind: "text" | "reasoning";
}

/** What one event turned into. */
export interface MappedEvent {
  chunks: UiChunk[];
  /** An ask the turn now waits on (its tool call was just sent). */
  asked?: string;
  /** The turn ended with this event: nothing follows. */
  ended?: boolean;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/**
 * The turn's chunks, event by event. Holds what the protocol needs to stay well-formed: which
 * text parts are open and what of them was sent, which tool calls exist, whether a step is open.
 */
export class TurnChunks {
  private stepOpen = false;
  private readonly open = new Map<string, OpenText>();
  /** Text already sent per part id, across re-openings. */
  private readonly sent = new Map<string, string>();
  private readonly tools = new Map<string, { input: boolean; output: boolean }>();
  private readonly asks = new Map<string, Ask>();
  private readonly files = new Set<string>();
  private replaced = 0;
  private over = false;

  constructor(readonly turnId: string) {}

  /** The first chunk of every response about this turn. */
  start(): UiChunk {
    return { type: "start", messageId: assistantMessageId(this.turnId), messageMetadata: { turnId: this.turnId } };
  }

  get ended(): boolean {
    return this.over;
  }

  push(event: EventEnvelope): MappedEvent {
    if (this.over || event.turnId !== this.turnId) return { chunks: [] };
    const data = event.data;
    switch (event.type) {
      case "message.part.updated":
        return { chunks: isObj(data.part) ? this.part(data.part, str(data.delta)) : [] };
      case "interaction.requested":
        return isObj(data.interaction) ? this.ask(data.interaction) : { chunks: [] };
      case "interaction.resolved":
        return { chunks: this.resolved(data) };
      case "usage.updated":
        return {
          chunks: isObj(data.usage) ? [{ type: "message-metadata", messageMetadata: { usage: data.usage } }] : [],
        };
      case "warning":
        return {
          chunks: [
            {
              type: "data-warning",
              id: `warning-${event.seq}`,
              data: { code: str(data.code) ?? "warning", message: str(data.message) ?? "" },
            },
          ],
        };
      case "child-task": {
        // One part per child task, its id the childId: each update replaces it (the SDK's data part reconciliation).
        const { sourceEventId: _, ...task } = data;
        return { chunks: str(task.childId) ? [{ type: "data-subagent", id: task.childId, data: task }] : [] };
      }
      case "budget.exceeded":
        return {
          chunks: [
            { type: "data-budget-exceeded", id: `budget-${event.seq}`, data: isObj(data.budget) ? data.budget : {} },
          ],
        };
      case "status":
        return {
          chunks:
            typeof data.status === "string"
              ? [{ type: "data-status", data: { status: data.status }, transient: true }]
              : [],
        };
      case "turn.completed":
        return this.end([{ type: "finish", finishReason: "stop", messageMetadata: this.outcome(data) }]);
      case "turn.failed": {
        const error = isObj(data.error) ? data.error : {};
        const code = str(error.code) ?? "agent_failed";
        const message = str(error.message) ?? "the run failed";
        // The SDK's chat stops at an error chunk: the metadata goes first.
        return this.end([
          { type: "message-metadata", messageMetadata: this.outcome(data) },
          { type: "error", errorText: `${code}: ${message}` },
        ]);
      }
      case "turn.cancelled":
        return this.end([
          { type: "message-metadata", messageMetadata: this.outcome(data) },
          { type: "abort", ...(str(data.reason) ? { reason: str(data.reason) } : {}) },
        ]);
      default:
        // turn.accepted, the agent's own status, raw and result frames: the native stream has them.
        return { chunks: [] };
    }
  }

  private outcome(data: Obj): Obj {
    return {
      status: str(data.status) ?? null,
      usage: isObj(data.usage) ? data.usage : null,
      ...(isObj(data.error) ? { error: data.error } : {}),
      ...(str(data.reason) ? { cancelReason: str(data.reason) } : {}),
    };
  }

  private end(last: UiChunk[]): MappedEvent {
    this.over = true;
    return { chunks: [...this.closeStep(), ...last], ended: true };
  }

  private openStep(): UiChunk[] {
    if (this.stepOpen) return [];
    this.stepOpen = true;
    return [{ type: "start-step" }];
  }

  /** Ends the open text and reasoning parts, then the step. */
  private closeStep(): UiChunk[] {
    const out = this.closeTexts();
    if (this.stepOpen) out.push({ type: "finish-step" });
    this.stepOpen = false;
    return out;
  }

  private closeTexts(): UiChunk[] {
    const out: UiChunk[] = [];
    for (const open of this.open.values()) out.push({ type: `${open.kind}-end`, id: open.chunkId });
    this.open.clear();
    return out;
  }

  private part(part: Obj, delta: string | undefined): UiChunk[] {
    const id = str(part.id);
    const type = str(part.type);
    if (!id || !type) return [];
    switch (type) {
      case "step-start":
        return [...this.closeStep(), ...this.openStep()];
      case "text":
      case "reasoning":
        return this.text(id, type, part, delta);
      case "tool":
        return this.tool(id, part);
      case "file": {
        const url = str(part.url);
        const mediaType = str(part.mime) ?? str(part.mediaType);
        if (!url || !mediaType || this.files.has(id)) return [];
        this.files.add(id);
        return [...this.openStep(), { type: "file", url, mediaType }];
      }
      default:
        // Other parts (subtasks, patches, …) as data, replaced by id as they change.
        return [...this.openStep(), { type: "data-part", id, data: part }];
    }
  }

  private text(id: string, kind: "text" | "reasoning", part: Obj, delta: string | undefined): UiChunk[] {
    const before = this.sent.get(id);
    const after = applyPartUpdate(before, { part, ...(delta !== undefined ? { delta } : {}) });
    if (after === undefined || after === before) return [];
    const out = this.openStep();
    let open = this.open.get(id);
    let base = before ?? "";
    if (open && !after.startsWith(base)) {
      // The part's text was replaced, not continued: the old text stays, the new one is its own part.
      out.push({ type: `${kind}-end`, id: open.chunkId });
      this.open.delete(id);
      open = undefined;
      base = "";
    } else if (!open && !after.startsWith(base)) {
      base = "";
    }
    if (!open) {
      open = { chunkId: base === "" && before === undefined ? id : `${id}#${++this.replaced}`, text: base, kind };
      this.open.set(id, open);
      out.push({ type: `${kind}-start`, id: open.chunkId });
    }
    const suffix = after.slice(base.length);
    if (suffix) out.push({ type: `${kind}-delta`, id: open.chunkId, delta: suffix });
    this.sent.set(id, after);
    return out;
  }

  private tool(id: string, part: Obj): UiChunk[] {
    const state = isObj(part.state) ? part.state : {};
    const toolName = str(part.tool) ?? "tool";
    const status = str(state.status);
    const known = this.tools.get(id) ?? { input: false, output: false };
    const out: UiChunk[] = [];
    const common = { toolCallId: id, dynamic: true, providerExecuted: true };
    if (!this.tools.has(id)) {
      out.push(...this.openStep());
      this.tools.set(id, known);
      if (state.input === undefined)
        out.push({
          type: "tool-input-start",
          ...common,
          toolName,
          ...(str(state.title) ? { title: str(state.title) } : {}),
        });
    }
    if (!known.input && state.input !== undefined) {
      known.input = true;
      out.push({
        type: "tool-input-available",
        ...common,
        toolName,
        input: state.input,
        ...(str(state.title) ? { title: str(state.title) } : {}),
      });
    }
    if (!known.output && (status === "completed" || status === "error")) {
      if (!known.input) {
        known.input = true;
        out.push({ type: "tool-input-available", ...common, toolName, input: {} });
      }
      known.output = true;
      out.push(
        status === "completed"
          ? { type: "tool-output-available", ...common, output: state.output ?? null }
          : { type: "tool-output-error", ...common, errorText: str(state.error) ?? "the tool failed" },
      );
    }
    return out;
  }

  private ask(request: Obj): MappedEvent {
    const id = str(request.id);
    const kind = str(request.kind) ?? "question";
    if (!id || this.asks.has(id)) return { chunks: [] };
    this.asks.set(id, { kind });
    const approval = APPROVAL_KINDS.has(kind);
    const toolName = approval ? kind : ASK_TOOL.question;
    const input: Obj = {
      kind,
      title: str(request.title) ?? "",
      ...(str(request.body) ? { body: str(request.body) } : {}),
      ...(request.subject !== undefined ? { subject: request.subject } : {}),
      ...(isObj(request.answerSpec) ? { fields: request.answerSpec.fields } : {}),
      ...(Array.isArray(request.responseScopes) ? { responseScopes: request.responseScopes } : {}),
      ...(Array.isArray(request.allowedOutcomes) ? { allowedOutcomes: request.allowedOutcomes } : {}),
    };
    const out: UiChunk[] = [...this.closeTexts(), ...this.openStep()];
    out.push({
      type: "tool-input-available",
      toolCallId: id,
      toolName,
      input,
      dynamic: true,
      ...(approval ? { providerExecuted: true } : {}),
      ...(str(request.title) ? { title: str(request.title) } : {}),
    });
    if (approval) out.push({ type: "tool-approval-request", approvalId: id, toolCallId: id });
    out.push(this.waitingMetadata());
    // The turn waits here: the step ends, so what follows the answer is a step of its own (the
    // SDK's "complete with tool calls" check looks at the last step only).
    out.push(...this.closeStep());
    return { chunks: out, asked: id };
  }

  /** What the turn waits for now: the oldest ask still open (asks are kept in the order asked), or null. */
  private waitingMetadata(): UiChunk {
    const oldest = this.asks.values().next();
    return {
      type: "message-metadata",
      messageMetadata: { waitingFor: oldest.done ? null : waitingStateOf(oldest.value.kind) },
    };
  }

  private resolved(data: Obj): UiChunk[] {
    const id = str(data.interactionId);
    const ask = id ? this.asks.get(id) : undefined;
    if (!id || !ask) return [];
    this.asks.delete(id);
    const status = str(data.status);
    const outcome = str(data.outcome);
    const reason = str(data.reason);
    const out: UiChunk[] = [];
    if (APPROVAL_KINDS.has(ask.kind)) {
      const approved =
        status === "answered" && (typeof data.approved === "boolean" ? data.approved : outcome === "accepted");
      out.push({
        type: "tool-approval-response",
        approvalId: id,
        approved,
        ...(!approved && status !== "answered" ? { reason: reason ?? status } : {}),
      });
      out.push(
        approved
          ? {
              type: "tool-output-available",
              toolCallId: id,
              dynamic: true,
              providerExecuted: true,
              output: { status: "answered", approved: true },
            }
          : { type: "tool-output-denied", toolCallId: id },
      );
    } else if (status === "answered") {
      out.push({
        type: "tool-output-available",
        toolCallId: id,
        dynamic: true,
        output: { status: "answered", ...(outcome ? { outcome } : {}) },
      });
    } else {
      out.push({
        type: "tool-output-error",
        toolCallId: id,
        dynamic: true,
        errorText: `${status ?? "ended"}${reason ? `: ${reason}` : ""}`,
      });
    }
    out.push(this.waitingMetadata());
    // What the agent does next is a step of its own.
    out.push(...this.openStep());
    return out;
  }
}

export interface ResponseOptions {
  /**
   * A continuation after answers: the client has the turn's chunks up to the asks it answered,
   * so events are only folded until every one of these asks was seen, and sent from the next one.
   */
  continueAfterAsks?: Iterable<string>;
  /** Whether the response ends at this ask (the turn waits on it and nobody has answered). */
  pauseAt(interactionId: string, seq: number): boolean;
}

/** One chunk as the protocol frames it: an SSE `data:` line of JSON. */
export function frameChunk(chunk: UiChunk): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/**
 * One HTTP response about a turn: `start`, then the chunks of the events past `emitAfter`, up
 * to the turn's end or an ask it waits on (then `finish` with `tool-calls`, and the client
 * answers and continues the same message).
 */
export class TurnResponse {
  private readonly turn: TurnChunks;
  private readonly waitingFor: Set<string>;
  private started = false;
  private done = false;

  constructor(
    turnId: string,
    private readonly options: ResponseOptions,
  ) {
    this.turn = new TurnChunks(turnId);
    this.waitingFor = new Set(options.continueAfterAsks ?? []);
  }

  get finished(): boolean {
    return this.done;
  }

  /** The chunks to send first, before any event (a response always begins with `start`). */
  begin(): UiChunk[] {
    if (this.started) return [];
    this.started = true;
    return [this.turn.start()];
  }

  feed(event: EventEnvelope): UiChunk[] {
    if (this.done) return [];
    const mapped = this.turn.push(event);
    if (this.waitingFor.size > 0) {
      if (event.type === "interaction.requested" && mapped.asked !== undefined) this.waitingFor.delete(mapped.asked);
      // Only folded: the client has these chunks. A turn that ends first ends the response.
      if (!mapped.ended) return [];
    }
    const out = [...this.begin(), ...mapped.chunks];
    if (mapped.ended) this.done = true;
    else if (mapped.asked !== undefined && this.options.pauseAt(mapped.asked, event.seq)) {
      this.done = true;
      out.push({ type: "finish", finishReason: "tool-calls" });
    }
    return out;
  }
}
