// @ts-check
/**
 * Answering the agent's asks (the cards of views/ask.js). One operation id per ask until its
 * answer is taken or refused, so a retry is the same command; the acknowledgement's status says
 * what happened, and a refused answer's problems go back to the card's fields. What this browser
 * answered is kept in words (never a secret value), and an answer given in another tab shows here.
 */
import { ApiError } from "../lib/api.js";
import { ACK_PROBLEM } from "../lib/format.js";
import { choiceStore } from "../lib/storage.js";
import { problemsByField } from "../views/ask.js";

/**
 * @param {{ api: import("../lib/api.js").Api, store: import("../lib/store.js").Store }} deps
 */
export function createAsks({ api, store }) {
  /** @type {Map<string, string>} */
  const operationIds = new Map();

  /** @type {import("../views/ask.js").AnswerHandler} */
  async function answer(ask, outcome, data, choice) {
    const cid = store.conv.cid;
    const operationId = operationIds.get(ask.id) ?? crypto.randomUUID();
    operationIds.set(ask.id, operationId);
    let ack;
    try {
      ack = await api.answer(cid, ask.id, { operationId, outcome, ...(data ? { data } : {}) });
    } catch (err) {
      return {
        ok: false,
        message:
          err instanceof ApiError && err.status === 0
            ? (ACK_PROBLEM.transport_failure ?? "")
            : err instanceof Error
              ? err.message
              : String(err),
      };
    }
    if (ack.status === "accepted" || ack.status === "already_resolved_same") {
      operationIds.delete(ask.id);
      choiceStore.save(ask.id, choice);
      if (cid === store.conv.cid) store.dispatch({ type: "answered", interactionId: ask.id, outcome, choice });
      return { ok: true };
    }
    if (ack.status === "invalid_response") {
      // Nothing was recorded: a corrected answer is a new command.
      operationIds.delete(ask.id);
      const { fields, rest } = problemsByField(ack.message ?? "", ask.request.answerSpec?.fields ?? []);
      return {
        ok: false,
        message: rest.length
          ? `${ACK_PROBLEM.invalid_response} ${rest.join("; ")}`
          : (ACK_PROBLEM.invalid_response ?? ""),
        fields,
      };
    }
    return { ok: false, message: ACK_PROBLEM[ack.status] ?? ack.message ?? ack.status };
  }

  return {
    answer,
    /**
     * Another tab answered an ask of the open conversation: it shows as answered here, with that
     * tab's words.
     * @param {string} interactionId
     * @param {string} choice
     */
    answeredElsewhere(interactionId, choice) {
      const ask = store.conv.asks[interactionId];
      if (ask) store.dispatch({ type: "answered", interactionId, outcome: ask.outcome ?? "accepted", choice });
    },
  };
}
