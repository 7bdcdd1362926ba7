// @ts-check
/**
 * The one pure function that changes the conversation the page shows:
 * `reduce(state, action) → state`. No DOM, no fetch, no clock: the caller passes times in. The
 * conversation's shape and its edits are ./conversation.js; a stream event is applied by
 * ./reducer-events.js, a load (the transcript, on a reload, a switch or a reset stream) by
 * ./reducer-load.js; the page's own actions are here.
 *
 * Rules:
 * - A turn this tab is sending is "sending" until the server accepts it; a send that did not reach
 *   the server is "unsent" and keeps its text and turn id, so a retry is the same turn.
 * - The usage total and the budget follow the stream (`usage.updated` carries both); /usage gives
 *   them when a conversation is loaded, and the budget once a turn ended without a usage report.
 * - A conversation deleted elsewhere takes no action but a load.
 */
import { resolveAsk, TITLE_CHARS, withTurn } from "./conversation.js";
import { applyEvent } from "./reducer-events.js";
import { load } from "./reducer-load.js";

/** @typedef {import("./conversation.js").ConversationState} ConversationState */
/** @typedef {import("./conversation.js").TurnStatus} TurnStatus */
/** @typedef {import("./conversation.js").ErrorInfo} ErrorInfo */
/** @typedef {import("./conversation.js").UsageView} UsageView */
/** @typedef {import("./conversation.js").Budget} Budget */
/**
 * @typedef {import("./reducer-load.js").LoadedAction} LoadedAction
 * @typedef {{ type: "event", event: import("./reducer-events.js").StreamEvent }} EventAction
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
