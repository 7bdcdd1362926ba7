// @ts-check
/**
 * The answers an approval ask takes and what each one means: the one table that the server's
 * answer check (src/session/answer-check.ts, which imports this module) and the chat
 * page's cards (public/views/ask.js) both read, so the page never offers what the server refuses.
 *
 * An approval ask (a permission or a plan) is answered in its own form: its `answerSpec` names
 * the field that carries the decision and its options; this table says what each option means.
 * - Permission grants (docs/contracts.md, "Interactions"): `allow_once`, `allow_session`,
 *   `allow_always`, `deny`, each allowed only when the request's `responseScopes` include its
 *   scope, in the contract's vocabulary (`interaction`, `session`, `persistent`) or the older one
 *   (`once`, `session`, `always`). An omitted scope list permits a one-time answer only (the
 *   agent-interface contract: session and persistent grants must be explicit).
 * - The Sandbox SDK's own permission answer, `{ response: "allow" }` (its sessions guide, "When the
 *   agent waits for a person"): `allow` names no scope, so it is a one-time grant; `deny` refuses.
 * - Plan decisions: `approve`, `reject` (with feedback for a revised plan).
 * A decision value the table does not know is never offered for a permission (its scope is
 * unknown) and is refused by the server.
 */

/**
 * @typedef {object} Decision
 * @property {boolean} allows         whether it grants the permission or approves the plan
 * @property {string[] | null} scopes the response scopes that permit it (null: always permitted)
 * @property {string} label           the button that gives it
 * @property {string} chosen          what the card says once it was given here
 */

/** @type {Readonly<Record<string, Decision>>} */
const GRANTS = Object.freeze({
  allow_once: { allows: true, scopes: ["interaction", "once"], label: "Allow once", chosen: "Allowed once" },
  allow: { allows: true, scopes: ["interaction", "once"], label: "Allow once", chosen: "Allowed once" },
  allow_session: {
    allows: true,
    scopes: ["session"],
    label: "Allow for this session",
    chosen: "Allowed for this session",
  },
  allow_always: { allows: true, scopes: ["persistent", "always"], label: "Always allow", chosen: "Always allowed" },
  deny: { allows: false, scopes: null, label: "Deny", chosen: "Denied" },
});

/** @type {Readonly<Record<string, Decision>>} */
const PLAN_DECISIONS = Object.freeze({
  approve: { allows: true, scopes: null, label: "Approve", chosen: "Approved" },
  reject: { allows: false, scopes: null, label: "Reject with feedback", chosen: "Rejected" },
});

/** The scopes an omitted `responseScopes` stands for: a one-time answer only. */
const ONE_TIME = Object.freeze(["interaction"]);

/**
 * What an approval ask's answer looks like, as far as this module reads it.
 * @typedef {{ name: string, type?: string, required?: boolean, multi?: boolean, options?: ReadonlyArray<string | { value: string, label?: string }> }} SpecField
 * @typedef {{ kind: string, responseScopes?: readonly string[], answerSpec?: { fields: readonly SpecField[] } }} ApprovalRequest
 */

/** @param {string} kind */
const tableOf = (kind) => (kind === "permission" ? GRANTS : kind === "plan" ? PLAN_DECISIONS : null);

/** @param {SpecField} field */
const optionValues = (field) => (field.options ?? []).map((o) => (typeof o === "string" ? o : o.value));

/**
 * The field of an approval ask that carries its decision: its first single-choice `select` with an
 * option the table knows (a required one first). Null for other kinds, or when there is none (the
 * ask is then answered as a form).
 * @param {ApprovalRequest} request
 * @returns {SpecField | null}
 */
export function decisionField(request) {
  const table = tableOf(request.kind);
  if (!table) return null;
  const candidates = (request.answerSpec?.fields ?? []).filter(
    (f) => f.type === "select" && !f.multi && optionValues(f).some((v) => Object.hasOwn(table, v)),
  );
  return candidates.find((f) => f.required) ?? candidates[0] ?? null;
}

/**
 * Whether the request's scopes permit this grant (a plan decision is always permitted).
 * @param {ApprovalRequest} request
 * @param {string} value
 */
function permitted(request, value) {
  const table = tableOf(request.kind);
  if (!table || !Object.hasOwn(table, value)) return request.kind === "plan";
  const scopes = /** @type {Decision} */ (table[value]).scopes;
  if (scopes === null) return true;
  const given = request.responseScopes ?? ONE_TIME;
  return scopes.some((s) => given.includes(s));
}

/**
 * The decisions the request allows, in its field's order: for a permission, only the grants the
 * table knows and its scopes permit; for a plan, every option of its decision field.
 * @param {ApprovalRequest} request
 * @returns {string[]}
 */
export function allowedDecisions(request) {
  const field = decisionField(request);
  return field ? optionValues(field).filter((v) => permitted(request, v)) : [];
}

/**
 * What a decision means for this request: the table's entry, or null when the table does not know it.
 * @param {ApprovalRequest} request
 * @param {string} value
 * @returns {Decision | null}
 */
export function decisionOf(request, value) {
  const table = tableOf(request.kind);
  return table && Object.hasOwn(table, value) ? /** @type {Decision} */ (table[value]) : null;
}

/**
 * The answer data of a plain yes or no, in the request's own form: a yes is a one-time grant (or
 * the plan's approval), a no the refusal. Null when the request allows no such decision.
 * @param {ApprovalRequest} request
 * @param {boolean} approved
 * @returns {Record<string, string> | null}
 */
export function yesOrNo(request, approved) {
  const field = decisionField(request);
  if (!field) return null;
  const value = allowedDecisions(request).find((v) => {
    const decision = decisionOf(request, v);
    if (!decision || decision.allows !== approved) return false;
    // A yes is given once: never a session or persistent grant the person did not choose.
    return !approved || request.kind !== "permission" || (decision.scopes ?? []).includes("interaction");
  });
  return value === undefined ? null : { [field.name]: value };
}
