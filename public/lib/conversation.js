// @ts-check
/**
 * One conversation as the page shows it: its shape (turns, the blocks of what the agent did, asks,
 * the title, usage and budget), the empty one, the turn that is active, and the pure edits every
 * step of the reducer makes of it (./reducer.js; a stream event: ./reducer-events.js; a load:
 * ./reducer-load.js). No DOM, no fetch, no clock.
 *
 * Rules:
 * - State is never mutated. A turn, block or ask that did not change keeps its identity, which is
 *   how the views know what to redraw.
 * - A part update with `part.text` carries the part's whole text and replaces it; one without text
 *   and with `delta` appends the delta to the text held for that part: the rule the server sends
 *   each text delta once by (../wire/part-text.js; docs/sse-protocol.md, "Rebuilding a part's
 *   text").
 * - An ask this browser answered stays answered: a later "cancelled" (the run ended) is not news.
 */
import { applyPartUpdate } from "../wire/part-text.js";

// What the server sends is typed by its schemas (wire.d.ts); what is the page's own (turns,
// blocks, asks as shown) is typed here, its actions in ./reducer.js.
/** @typedef {import("./wire").TurnStatus | "sending" | "unsent"} TurnStatus  the server's, and the two of a message not yet accepted */
/** @typedef {{ code?: string, message: string }} ErrorInfo */
/**
 * Where a figure comes from: measured, an estimate, or reported without saying which (null: the
 * figure is unknown). A figure is never shown as measured unless it says so.
 * @typedef {import("./wire").Provenance} Provenance
 */
/**
 * Token usage as the API reports it: null is unknown, never zero. `servedModels` are the models
 * the provider reported serving the turn (null: not reported); `modelRequests` likewise.
 * @typedef {import("./wire").UsageReading} UsageView
 */
/** @typedef {import("./wire").BudgetReading} Budget */
/** @typedef {import("./wire").InteractionField} AskField */
/** What the agent asked. @typedef {import("./wire").InteractionRequest} AskRequest */
/** @typedef {import("./wire").TranscriptInteractionPart["status"]} AskStatus */
/**
 * @typedef {object} Ask
 * @property {string} id
 * @property {string} turnId
 * @property {AskRequest} request
 * @property {AskStatus} status
 * @property {string | null} outcome   accepted, declined or cancelled: how, never what
 * @property {string | null} reason    why it ended unanswered
 * @property {string | null} choice    what this browser answered, in words (never a secret value)
 */
/**
 * @typedef {{ key: string, kind: "text" | "reasoning", id: string, text: string }} TextBlock
 * @typedef {{ key: string, kind: "tool", id: string, tool: string, status: string, input?: unknown, output?: unknown, error?: unknown, metadata?: unknown }} ToolBlock
 * @typedef {{ key: string, kind: "file", id: string, label: string }} FileBlock
 * @typedef {{ key: string, kind: "ask", id: string }} AskBlock
 * @typedef {{ key: string, kind: "warning", id: string, text: string }} WarningBlock
 * @typedef {{ key: "subagents", kind: "subagents", id: "subagents", tasks: Subagent[] }} SubagentsBlock  the turn's child tasks, where the first one came
 * @typedef {TextBlock | ToolBlock | FileBlock | AskBlock | WarningBlock | SubagentsBlock} Block
 */
/**
 * A child task the agent started (a subagent), as its latest update says (a `child-task` event,
 * or a `subagent` part of the transcript). What the provider did not report is null: unknown.
 * @typedef {object} Subagent
 * @property {string} childId
 * @property {string | null} parentChildId  the child task that started it (null: the agent did)
 * @property {"running" | "completed" | "failed" | "cancelled"} status
 * @property {string | null} title
 * @property {string | null} runner
 * @property {string | null} model
 * @property {Record<string, number> | null} usage  only the counters reported
 * @property {string | null} terminalReason
 * @property {string | null} startedAt
 * @property {string | null} endedAt
 */
/**
 * @typedef {object} Turn
 * @property {string} turnId
 * @property {string} userText
 * @property {string | null} sentAt      ISO time the message was sent
 * @property {TurnStatus} status
 * @property {string | null} waitingFor  what the running turn waits for, as the server says (`turn.waiting`, the summary): `awaiting_permission`, …; null when nothing
 * @property {Block[]} blocks            what the agent did, in the order it happened
 * @property {ErrorInfo | null} error    why the turn failed
 * @property {string | null} cancelReason
 * @property {UsageView | null} usage
 * @property {string | null} model       the model route the turn asked for (null: the provider's default); what served it is usage.servedModels
 * @property {string | null} endedAt     ISO time the turn ended
 * @property {ErrorInfo | null} sendError why the message has not reached the server
 * @property {import("./wire").TurnChanges} [workspace]  what it really changed in the workspace (its `changes` part)
 */
/**
 * @typedef {object} ConversationState
 * @property {string} cid
 * @property {number} lastSeq            the last stream event applied
 * @property {string[]} order            turn ids, oldest first
 * @property {Record<string, Turn>} turns
 * @property {Record<string, Ask>} asks
 * @property {string | null} title
 * @property {import("./wire").TotalReading | null} usageTotal
 * @property {Budget | null} budget
 * @property {{ scope?: string, tokens?: number, provenance?: Provenance } | null} budgetExceeded
 * @property {boolean} deleted           deleted elsewhere: nothing more can happen here
 * @property {import("./wire").ConversationAgent | null} agent  the agent it runs, as its summary said when loaded (null: not told, or a new conversation)
 * @property {{ terminalId: string } | null} interactive  the agent's own terminal UI drives it (interactive mode): no turn meanwhile
 */

const CONTENT_PARTS = new Set(["text", "reasoning", "tool", "file", "subtask"]);
const ACTIVE = new Set(["sending", "pending", "running"]);
/** A title taken from a message: its first characters. */
export const TITLE_CHARS = 80;

/**
 * @param {string} cid
 * @returns {ConversationState}
 */
export function emptyConversation(cid) {
  return {
    cid,
    lastSeq: 0,
    order: [],
    turns: {},
    asks: {},
    title: null,
    usageTotal: null,
    budget: null,
    budgetExceeded: null,
    deleted: false,
    agent: null,
    interactive: null,
  };
}

/**
 * @param {string} turnId
 * @returns {Turn}
 */
function newTurn(turnId) {
  return {
    turnId,
    userText: "",
    sentAt: null,
    status: "running",
    waitingFor: null,
    blocks: [],
    error: null,
    cancelReason: null,
    usage: null,
    model: null,
    endedAt: null,
    sendError: null,
  };
}

/** @param {TurnStatus} status */
export const isActive = (status) => ACTIVE.has(status);

/**
 * The turn that is being sent or run, if any (turns run one at a time).
 * @param {ConversationState} state
 * @returns {Turn | null}
 */
export function activeTurn(state) {
  for (let i = state.order.length - 1; i >= 0; i--) {
    const turn = state.turns[/** @type {string} */ (state.order[i])];
    if (turn && isActive(turn.status)) return turn;
  }
  return null;
}

/**
 * @param {ConversationState} state
 * @param {string} turnId
 * @param {(turn: Turn) => Turn} change
 * @returns {ConversationState}
 */
export function withTurn(state, turnId, change) {
  const existing = state.turns[turnId];
  const turn = change(existing ?? newTurn(turnId));
  if (turn === existing) return state;
  return {
    ...state,
    turns: { ...state.turns, [turnId]: turn },
    order: existing ? state.order : [...state.order, turnId],
  };
}

/**
 * An undo or a redo of a turn's file changes (a `restore` part, a `workspace.restored` event), a line of the
 * turn; its id says which (the workspace panel reads the latest).
 * @param {string} seq  the event's @param {unknown} direction @returns {FileBlock}
 */
export const restoreBlock = (seq, direction) =>
  direction === "redo"
    ? { key: `restore:${seq}`, kind: "file", id: "redo", label: "Redone: this turn's file changes" }
    : { key: `restore:${seq}`, kind: "file", id: "undo", label: "Undone: this turn's file changes" };

/**
 * Replaces the block with the same key, or appends it.
 * @param {Turn} turn
 * @param {Block} block
 * @returns {Turn}
 */
export function withBlock(turn, block) {
  const index = turn.blocks.findIndex((b) => b.key === block.key);
  if (index === -1) return { ...turn, blocks: [...turn.blocks, block] };
  if (sameBlock(/** @type {Block} */ (turn.blocks[index]), block)) return turn;
  const blocks = turn.blocks.slice();
  blocks[index] = block;
  return { ...turn, blocks };
}

/**
 * A text or reasoning block after its update, by the rule the server sends it by
 * (../wire/part-text.js): a part with its text replaces the text held, a delta appends to it.
 * @param {Turn} turn
 * @param {Block} block
 * @param {Record<string, any>} data the event's data: `{ part, delta? }`
 * @returns {Block}
 */
export function withDelta(turn, block, data) {
  if (block.kind !== "text" && block.kind !== "reasoning") return block;
  const held = turn.blocks.find((b) => b.key === block.key);
  const text = held && (held.kind === "text" || held.kind === "reasoning") ? held.text : undefined;
  return {
    ...block,
    text:
      applyPartUpdate(text, { part: data.part, ...(typeof data.delta === "string" ? { delta: data.delta } : {}) }) ??
      "",
  };
}

/**
 * @param {Block} a
 * @param {Block} b
 */
function sameBlock(a, b) {
  // Text blocks grow with every delta: compare their few fields, not a serialization of the text twice.
  if ((a.kind === "text" || a.kind === "reasoning") && (b.kind === "text" || b.kind === "reasoning"))
    return a.kind === b.kind && a.key === b.key && a.id === b.id && a.text === b.text;
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A provider part as a block; null for bookkeeping parts (step-start, step-finish, …).
 * @param {Record<string, any>} part
 * @returns {Block | null}
 */
export function partBlock(part) {
  if (!part || typeof part.id !== "string" || !CONTENT_PARTS.has(part.type)) return null;
  const key = `part:${part.id}`;
  switch (part.type) {
    case "text":
    case "reasoning":
      return { key, kind: part.type, id: part.id, text: typeof part.text === "string" ? part.text : "" };
    case "tool": {
      const state = part.state ?? {};
      /** @type {ToolBlock} */
      const block = {
        key,
        kind: "tool",
        id: part.id,
        tool: typeof part.tool === "string" ? part.tool : "tool",
        status: typeof state.status === "string" ? state.status : "pending",
      };
      if (state.input !== undefined) block.input = state.input;
      if (state.output !== undefined) block.output = state.output;
      if (state.error !== undefined) block.error = state.error;
      // What the tool reported about itself (OpenCode's write: whether the file existed; lib/changes.js reads it).
      if (state.metadata !== undefined) block.metadata = state.metadata;
      return block;
    }
    default:
      return { key, kind: "file", id: part.id, label: `${part.type}: ${part.filename ?? part.description ?? part.id}` };
  }
}

const SUBAGENT_STATUSES = new Set(["running", "completed", "failed", "cancelled"]);
/** @param {unknown} v */
const strOrNull = (v) => (typeof v === "string" && v !== "" ? v : null);

/**
 * A turn after one update of a child task: the task's entry in the turn's subagents block replaced
 * (or added, in the order each first came). An update without a `childId` changes nothing.
 * @param {Turn} turn
 * @param {Record<string, any>} update a `child-task` event's data, or a transcript `subagent` part
 * @returns {Turn}
 */
export function withSubagent(turn, update) {
  const childId = strOrNull(update?.childId);
  if (!childId) return turn;
  const time = update.time ?? {};
  /** @type {Subagent} */
  const task = {
    childId,
    parentChildId: strOrNull(update.parentChildId),
    status: SUBAGENT_STATUSES.has(update.status) ? update.status : "running",
    title: strOrNull(update.title),
    runner: strOrNull(update.runner),
    model: strOrNull(update.model),
    usage: update.usage && typeof update.usage === "object" ? update.usage : null,
    terminalReason: strOrNull(update.terminalReason),
    startedAt: strOrNull(time.started),
    endedAt: strOrNull(time.ended),
  };
  const held = turn.blocks.find((b) => b.kind === "subagents");
  const tasks = held?.kind === "subagents" ? held.tasks.slice() : [];
  const index = tasks.findIndex((t) => t.childId === childId);
  if (index === -1) tasks.push(task);
  else tasks[index] = task;
  return withBlock(turn, { key: "subagents", kind: "subagents", id: "subagents", tasks });
}

/**
 * @param {ConversationState} state
 * @param {string} turnId
 * @param {AskRequest} request
 * @param {Partial<Ask>} [fields]
 * @returns {ConversationState}
 */
export function withAsk(state, turnId, request, fields = {}) {
  if (!request || typeof request.id !== "string") return state;
  const known = state.asks[request.id];
  /** @type {Ask} */
  const ask = {
    id: request.id,
    turnId,
    request,
    status: "outstanding",
    outcome: null,
    reason: null,
    choice: null,
    ...known,
    ...fields,
  };
  const next = withTurn(state, turnId, (turn) =>
    withBlock(turn, { key: `ask:${request.id}`, kind: "ask", id: request.id }),
  );
  if (known && JSON.stringify(known) === JSON.stringify(ask)) return next;
  return { ...next, asks: { ...next.asks, [request.id]: ask } };
}

/**
 * @param {ConversationState} state
 * @param {string} interactionId
 * @param {Partial<Ask>} fields
 * @returns {ConversationState}
 */
export function resolveAsk(state, interactionId, fields) {
  const ask = state.asks[interactionId];
  if (!ask) return state;
  // An answer this browser gave stays answered: a later "cancelled" (the run ended) is not news.
  if (ask.status !== "outstanding" && fields.status !== "answered") return state;
  return { ...state, asks: { ...state.asks, [interactionId]: { ...ask, ...fields } } };
}

/**
 * A turn's end: its status, why, and the result text when no text part streamed.
 * @param {Turn} turn
 * @param {{ status: TurnStatus, error?: ErrorInfo | null, cancelReason?: string | null, resultText?: string, at: string }} end
 * @returns {Turn}
 */
export function endTurn(turn, end) {
  /** @type {Turn} */
  let next = {
    ...turn,
    status: end.status,
    waitingFor: null,
    error: end.status === "failed" ? (end.error ?? { message: "unknown error" }) : null,
    cancelReason: end.cancelReason ?? null,
    endedAt: end.at,
    sendError: null,
  };
  if (end.status === "completed" && end.resultText && !turn.blocks.some((b) => b.kind === "text")) {
    next = withBlock(next, {
      key: `part:${turn.turnId}:result`,
      kind: "text",
      id: `${turn.turnId}:result`,
      text: end.resultText,
    });
  }
  return next;
}
