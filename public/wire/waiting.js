// @ts-check
/**
 * The names of what a turn waits for while an ask of the agent is open. The Sandbox's sessions
 * document ("When the agent waits for a person") has the turn report a status such as
 * `awaiting_question` or `awaiting_plan_decision`; the gateway keeps its turn `status` (`running`)
 * and reports the waiting state beside it, in the same names (the session's `turn.waiting`, the
 * summary, the AI SDK's message metadata). Pure.
 */

/** @typedef {"awaiting_question" | "awaiting_permission" | "awaiting_plan_decision" | "awaiting_interaction"} WaitingFor */

/** @type {Readonly<Record<string, WaitingFor>>} */
const BY_KIND = Object.freeze({
  question: "awaiting_question",
  permission: "awaiting_permission",
  plan: "awaiting_plan_decision",
});

/**
 * The waiting state an open ask of this kind puts its turn in (a namespaced kind: `awaiting_interaction`).
 * @param {string} kind
 * @returns {WaitingFor}
 */
export function waitingStateOf(kind) {
  return Object.hasOwn(BY_KIND, kind) ? /** @type {WaitingFor} */ (BY_KIND[kind]) : "awaiting_interaction";
}
