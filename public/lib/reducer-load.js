// @ts-check
/**
 * The conversation rebuilt from its transcript (`load`, pure): a reload, a switch, a stream reset.
 * The transcript from /messages holds the text up to its lastEventId, and the stream continues from
 * there (./reducer-events.js). Added to it: the asks still waiting and what the running turn waits
 * for (the summary), this browser's unsent messages (still "unsent", with their text and turn id,
 * unless they reached the server after all) and the answers it gave (in words). The edits are
 * ./conversation.js's.
 */
import {
  emptyConversation,
  endTurn,
  isActive,
  partBlock,
  restoreBlock,
  TITLE_CHARS,
  withAsk,
  withBlock,
  withSubagent,
  withTurn,
} from "./conversation.js";

/** @typedef {import("./conversation.js").ConversationState} ConversationState */
/** @typedef {import("./conversation.js").Turn} Turn */
/** @typedef {import("./conversation.js").ErrorInfo} ErrorInfo */
/** @typedef {import("./conversation.js").AskRequest} AskRequest */
/** @typedef {import("./wire").Transcript} Transcript */
/**
 * A message this browser sent that has not reached the server (lib/storage.js keeps it), with the agent fields it
 * was sent with (a retry is the same turn). @typedef {{ turnId: string, message: string, at: string, error: ErrorInfo, agent?: import("./agents.js").TurnAgentFields }} UnsentTurn
 */
/**
 * `branches` and `queue`: the conversation's branches and queued turns, read with the transcript
 * (controllers/branches.js and controllers/queued.js keep them; the state does not).
 * @typedef {{ type: "loaded", transcript: Transcript, outstanding?: Array<AskRequest & { turnId: string }>, waiting?: { turnId: string, waitingFor: string | null } | null, title?: string | null, unsent?: UnsentTurn[], choices?: Record<string, string>, branches?: import("./wire").Branches, queue?: import("./wire").ConversationSummary["queue"], agent?: import("./wire").ConversationAgent, interactive?: { terminalId: string } | null }} LoadedAction
 */

/**
 * The conversation rebuilt from its transcript (a reload, a switch, a reset stream), with this
 * browser's unsent messages and the answers it gave.
 * @param {string} cid
 * @param {LoadedAction} action
 * @returns {ConversationState}
 */
export function load(cid, action) {
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
      if (part.type === "changes") {
        state = withTurn(state, m.turnId, (turn) => ({ ...turn, workspace: part }));
        continue;
      }
      if (part.type === "restore") {
        const block = restoreBlock(part.id.slice("restore:".length), part.direction);
        state = withTurn(state, m.turnId, (turn) => withBlock(turn, block));
        continue;
      }
      if (part.type === "subagent") {
        state = withTurn(state, m.turnId, (turn) => withSubagent(turn, part));
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
  return {
    ...state,
    lastSeq: action.transcript.lastEventId,
    title,
    agent: action.agent ?? null,
    interactive: action.interactive ?? null,
  };
}
