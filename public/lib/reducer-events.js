// @ts-check
/**
 * One stream event applied to the conversation (`applyEvent`, pure): a turn accepted, a part of
 * what the agent did, a turn's end, usage and budget, asks and what a turn waits for, warnings,
 * the subagents it started.
 * The edits are ./conversation.js's.
 *
 * Rules:
 * - A stream event is applied once: an event whose seq is at or below `lastSeq` is a repeat (a
 *   reconnect, a reload that overlaps the transcript) and changes nothing.
 * - The usage total and the budget follow the stream (`usage.updated` carries both).
 * - An event of a type this page does not know (a provider's, a newer server's) changes nothing
 *   but `lastSeq`.
 */
import {
  endTurn,
  isActive,
  partBlock,
  resolveAsk,
  restoreBlock,
  TITLE_CHARS,
  withAsk,
  withBlock,
  withDelta,
  withSubagent,
  withTurn,
} from "./conversation.js";
import { GATEWAY_EVENT as E } from "./events.js";

/** @typedef {import("./conversation.js").ConversationState} ConversationState */
/** @typedef {import("./wire").StreamEvent} StreamEvent */

/**
 * @param {ConversationState} state
 * @param {StreamEvent} e
 * @returns {ConversationState}
 */
export function applyEvent(state, e) {
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
    case E.childTask:
      return turnId ? withTurn(state, turnId, (turn) => withSubagent(turn, data)) : state;
    case E.warning: {
      if (!turnId) return state;
      const text = `${data.message ?? data.code ?? "warning"}`;
      return withTurn(state, turnId, (turn) =>
        withBlock(turn, { key: `warning:${e.seq}`, kind: "warning", id: String(e.seq), text }),
      );
    }
    case E.workspaceChanges:
      return turnId ? withTurn(state, turnId, (turn) => ({ ...turn, workspace: /** @type {any} */ (data) })) : state;
    case E.workspaceRestored:
      return turnId
        ? withTurn(state, turnId, (turn) => withBlock(turn, restoreBlock(`${e.seq}`, data.direction)))
        : state;
    case E.interactiveStarted:
      return { ...state, interactive: { terminalId: String(data.terminalId ?? "") } };
    case E.interactiveReleased:
      return { ...state, interactive: null };
    default:
      return state; // provider events and variants newer than this page: nothing to draw
  }
}
