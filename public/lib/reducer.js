// @ts-check
/**
 * One conversation as the page shows it, and the one pure function that changes it:
 * `reduce(state, action) → state`. No DOM, no fetch, no clock: the caller passes times in.
 *
 * Rules:
 * - A stream event is applied once: an event whose seq is at or below `lastSeq` is a repeat (a
 *   reconnect, a reload that overlaps the transcript) and changes nothing.
 * - A part update with `part.text` carries the part's whole text and replaces it; one without text
 *   and with `delta` appends the delta to the text held for that part: the rule the server sends
 *   each text delta once by (../wire/part-text.js; docs/sse-protocol.md, "Rebuilding a part's
 *   text"). The transcript from /messages holds the text up to its lastEventId, and the stream
 *   continues from there.
 * - State is never mutated. A turn, block or ask that did not change keeps its identity, which is
 *   how the views know what to redraw.
 * - A turn this tab is sending is "sending" until the server accepts it; a send that did not reach
 *   the server is "unsent" and keeps its text and turn id, so a retry is the same turn.
 * - The usage total and the budget follow the stream (`usage.updated` carries both); /usage gives
 *   them when a conversation is loaded, and the budget once a turn ended without a usage report.
 */
import { applyPartUpdate } from "../wire/part-text.js";
import { GATEWAY_EVENT as E } from "./events.js";

// What the server sends is typed by its schemas (wire.d.ts); what is the page's own (turns,
// blocks, asks as shown, actions) is typed here.
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
 * @typedef {TextBlock | ToolBlock | FileBlock | AskBlock | WarningBlock} Block
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
 */
/** @typedef {import("./wire").StreamEvent} StreamEvent */
/** @typedef {import("./wire").Transcript} Transcript */
/** @typedef {{ turnId: string, message: string, at: string, error: ErrorInfo }} UnsentTurn */
/**
 * @typedef {{ type: "loaded", transcript: Transcript, outstanding?: Array<AskRequest & { turnId: string }>, waiting?: { turnId: string, waitingFor: string | null } | null, title?: string | null, unsent?: UnsentTurn[], choices?: Record<string, string> }} LoadedAction
 * @typedef {{ type: "event", event: StreamEvent }} EventAction
 * @typedef {{ type: "send", turnId: string, message: string, at: string }} SendAction
 * @typedef {{ type: "sendFailed", turnId: string, error: ErrorInfo }} SendFailedAction
 * @typedef {{ type: "sendRefused", turnId: string }} SendRefusedAction
 * @typedef {{ type: "sent", turnId: string, status: TurnStatus }} SentAction
 * @typedef {{ type: "answered", interactionId: string, outcome: string, choice: string }} AnsweredAction
 * @typedef {{ type: "usage", total: ConversationState["usageTotal"], budget: Budget | null, turns: Array<{ turnId: string, model?: string, usage: UsageView }> }} UsageAction
 * @typedef {{ type: "budget", budget: Budget | null }} BudgetAction  the budget read once a turn ended without a usage report
 * @typedef {{ type: "deleted" }} DeletedAction
 * @typedef {LoadedAction | EventAction | SendAction | SendFailedAction | SendRefusedAction | SentAction | AnsweredAction | UsageAction | BudgetAction | DeletedAction} Action
 */

const CONTENT_PARTS = new Set(["text", "reasoning", "tool", "file", "subtask"]);
const ACTIVE = new Set(["sending", "pending", "running"]);
const TITLE_CHARS = 80;

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
function withTurn(state, turnId, change) {
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
 * Replaces the block with the same key, or appends it.
 * @param {Turn} turn
 * @param {Block} block
 * @returns {Turn}
 */
function withBlock(turn, block) {
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
function withDelta(turn, block, data) {
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
function partBlock(part) {
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

/**
 * @param {ConversationState} state
 * @param {string} turnId
 * @param {AskRequest} request
 * @param {Partial<Ask>} [fields]
 * @returns {ConversationState}
 */
function withAsk(state, turnId, request, fields = {}) {
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
function resolveAsk(state, interactionId, fields) {
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
function endTurn(turn, end) {
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

/**
 * @param {ConversationState} state
 * @param {StreamEvent} e
 * @returns {ConversationState}
 */
function applyEvent(state, e) {
  if (typeof e?.seq !== "number" || e.seq <= state.lastSeq) return state; // seen already
  state = { ...state, lastSeq: e.seq };
  const data = e.data ?? {};
  const turnId = e.turnId ?? (typeof data.turnId === "string" ? data.turnId : null);
  switch (e.type) {
    case E.turnAccepted: {
      const message = typeof data.message === "string" ? data.message : "";
      state = withTurn(state, /** @type {string} */ (turnId), (turn) => ({
        ...turn,
        userText: turn.userText || message,
        model: typeof data.model === "string" ? data.model : turn.model,
        sentAt: turn.sentAt ?? e.at,
        status: isActive(turn.status) || turn.status === "unsent" ? "running" : turn.status,
        sendError: null,
      }));
      return state.title ? state : { ...state, title: message.slice(0, TITLE_CHARS) };
    }
    case E.partUpdated: {
      const block = partBlock(data.part);
      if (!turnId || !block) return state;
      return withTurn(state, turnId, (turn) => withBlock(turn, withDelta(turn, block, data)));
    }
    case E.turnCompleted:
    case E.turnFailed:
    case E.turnCancelled: {
      if (!turnId) return state;
      const status = e.type === E.turnCompleted ? "completed" : e.type === E.turnFailed ? "failed" : "cancelled";
      return withTurn(state, turnId, (turn) =>
        endTurn(turn, {
          status,
          error: data.error ?? null,
          cancelReason: typeof data.reason === "string" ? data.reason : null,
          resultText: data.result?.text,
          at: e.at,
        }),
      );
    }
    case E.usageUpdated: {
      // The turn's usage, the conversation's total and the budget as they stand (an older server
      // sends no budget: the one read from /usage stays).
      const next = turnId ? withTurn(state, turnId, (turn) => ({ ...turn, usage: data.usage ?? turn.usage })) : state;
      return {
        ...next,
        usageTotal: data.conversation ?? next.usageTotal,
        budget: data.budget === undefined ? next.budget : data.budget,
      };
    }
    case E.budgetExceeded:
      return { ...state, budgetExceeded: data.budget ?? {} };
    case E.interactionRequested:
      return turnId ? withAsk(state, turnId, data.interaction) : state;
    case E.turnWaiting: {
      if (!turnId) return state;
      const waitingFor = typeof data.waitingFor === "string" ? data.waitingFor : null;
      return withTurn(state, turnId, (turn) =>
        turn.waitingFor === waitingFor || !isActive(turn.status) ? turn : { ...turn, waitingFor },
      );
    }
    case E.interactionResolved: {
      const status =
        data.status === "answered" || data.status === "expired" || data.status === "cancelled"
          ? data.status
          : "cancelled";
      return resolveAsk(state, data.interactionId, {
        status,
        outcome: data.outcome ?? null,
        reason: data.reason ?? null,
      });
    }
    case E.warning: {
      if (!turnId) return state;
      const text = `${data.message ?? data.code ?? "warning"}`;
      return withTurn(state, turnId, (turn) =>
        withBlock(turn, { key: `warning:${e.seq}`, kind: "warning", id: String(e.seq), text }),
      );
    }
    default:
      return state; // provider events and variants newer than this page: nothing to draw
  }
}

/**
 * The conversation rebuilt from its transcript (a reload, a switch, a reset stream), with this
 * browser's unsent messages and the answers it gave.
 * @param {string} cid
 * @param {LoadedAction} action
 * @returns {ConversationState}
 */
function load(cid, action) {
  let state = emptyConversation(cid);
  const choices = action.choices ?? {};
  for (const m of action.transcript.messages) {
    if (m.role === "user") {
      state = withTurn(state, m.turnId, (turn) => ({ ...turn, userText: m.text, sentAt: m.at }));
      continue;
    }
    for (const part of m.parts) {
      if (part.type === "warning") {
        // The warning as the stream showed it (its block keyed by the event that carried it).
        const block = {
          key: part.id,
          kind: /** @type {const} */ ("warning"),
          id: part.id.slice("warning:".length),
          text: part.message || part.code,
        };
        state = withTurn(state, m.turnId, (turn) => withBlock(turn, block));
        continue;
      }
      if (part.type === "interaction") {
        const choice = choices[part.id];
        state = withAsk(state, m.turnId, part.request, {
          status: part.status,
          outcome: part.outcome ?? null,
          reason: part.reason ?? null,
          choice: part.status === "answered" && choice ? choice : null,
        });
        continue;
      }
      const block = partBlock(part);
      if (block) state = withTurn(state, m.turnId, (turn) => withBlock(turn, block));
    }
    state = withTurn(state, m.turnId, (turn) =>
      isActive(m.status)
        ? { ...turn, status: m.status }
        : endTurn(turn, {
            status: m.status,
            error: m.error ?? null,
            cancelReason: m.cancelReason ?? null,
            resultText: m.text,
            at: m.at,
          }),
    );
  }
  // Asks still waiting (a server that does not list asks in the transcript lists them here).
  for (const request of action.outstanding ?? []) {
    if (!state.asks[request.id]) state = withAsk(state, request.turnId, request);
  }
  // What the running turn waits for, as the summary says (the stream goes on from there).
  const waiting = action.waiting;
  if (
    waiting?.waitingFor &&
    state.turns[waiting.turnId] &&
    isActive(/** @type {Turn} */ (state.turns[waiting.turnId]).status)
  ) {
    state = withTurn(state, waiting.turnId, (turn) => ({ ...turn, waitingFor: waiting.waitingFor }));
  }
  for (const unsent of action.unsent ?? []) {
    if (state.turns[unsent.turnId]) continue; // it reached the server after all
    state = withTurn(state, unsent.turnId, (turn) => ({
      ...turn,
      userText: unsent.message,
      sentAt: unsent.at,
      status: "unsent",
      sendError: unsent.error,
    }));
  }
  const first = state.order[0];
  const title = action.title ?? (first ? state.turns[first]?.userText.slice(0, TITLE_CHARS) : null) ?? null;
  return { ...state, lastSeq: action.transcript.lastEventId, title };
}

/**
 * @param {ConversationState} state
 * @param {Action} action
 * @returns {ConversationState}
 */
export function reduce(state, action) {
  if (state.deleted && action.type !== "loaded") return state;
  switch (action.type) {
    case "loaded":
      return load(state.cid, action);
    case "event":
      return applyEvent(state, action.event);
    case "send": {
      const next = withTurn(state, action.turnId, (turn) => ({
        ...turn,
        userText: action.message,
        sentAt: action.at,
        status: "sending",
        sendError: null,
      }));
      return next.title ? next : { ...next, title: action.message.slice(0, TITLE_CHARS) };
    }
    case "sendFailed":
      if (!state.turns[action.turnId]) return state; // reloaded meanwhile: the unsent store has it
      return withTurn(state, action.turnId, (turn) =>
        turn.status === "sending" || turn.status === "unsent"
          ? { ...turn, status: "unsent", sendError: action.error }
          : turn,
      );
    case "sendRefused": {
      if (!state.turns[action.turnId]) return state;
      const { [action.turnId]: _removed, ...turns } = state.turns;
      const order = state.order.filter((id) => id !== action.turnId);
      return { ...state, turns, order, title: order.length === 0 ? null : state.title };
    }
    case "sent":
      // The stream may have moved the turn on already; only a turn still being sent takes the answer.
      if (!state.turns[action.turnId]) return state;
      return withTurn(state, action.turnId, (turn) =>
        turn.status === "sending" || turn.status === "unsent"
          ? { ...turn, status: action.status, sendError: null }
          : turn,
      );
    case "answered":
      return resolveAsk(state, action.interactionId, {
        status: "answered",
        outcome: action.outcome,
        choice: action.choice,
      });
    case "usage": {
      let next = { ...state, usageTotal: action.total, budget: action.budget };
      for (const t of action.turns) {
        if (!next.turns[t.turnId]) continue;
        const model = t.model ?? null;
        if (model !== null)
          next = withTurn(next, t.turnId, (turn) => (turn.model === model ? turn : { ...turn, model }));
        if (t.usage.source !== "none" || t.usage.servedModels)
          next = withTurn(next, t.turnId, (turn) => ({ ...turn, usage: t.usage }));
      }
      return next;
    }
    case "budget":
      // Only where none is known: a budget the stream brought meanwhile is newer.
      return state.budget === null && action.budget !== null ? { ...state, budget: action.budget } : state;
    case "deleted":
      return { ...state, deleted: true };
    default:
      return state;
  }
}
