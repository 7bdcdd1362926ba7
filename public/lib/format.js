// @ts-check
/** Words and numbers as the page shows them. Pure. */

/** @param {number | null | undefined} n */
export const formatTokens = (n) => (n === null || n === undefined ? "unknown" : n.toLocaleString("en-US"));

/** @param {number | null | undefined} n */
const formatCost = (n) => (n === null || n === undefined ? "unknown" : `$${n.toFixed(4)}`);

/** @typedef {import("./conversation.js").Provenance} Provenance */

/** From weakest to strongest: an estimate is surely not a measurement; an unknown provenance may be either. */
const STRENGTH = { estimated: 0, unknown: 1, measured: 2 };
/** How a figure that is not a measurement is described. */
const NOT_MEASURED = { estimated: "estimated", unknown: "unverified" };

/**
 * The weakest of some figures' provenances; null when none is known.
 * @param {Array<Provenance | null | undefined>} kinds
 * @returns {Provenance | null}
 */
function weakestProvenance(kinds) {
  /** @type {Provenance | null} */
  let out = null;
  for (const kind of kinds) if (kind && (out === null || STRENGTH[kind] < STRENGTH[out])) out = kind;
  return out;
}

/**
 * "in 1,980 · out 80 · $0.0021", saying "unknown" where unknown and "at least" for a floor. An
 * estimated figure reads "≈1,980", and a note says which figures are estimated or unverified (of
 * unknown provenance): no figure reads as a measurement unless it is one. Request counts follow,
 * where the provider reported them. Nothing known (no reading, or one without a figure) is "unknown".
 * @param {import("./conversation.js").UsageView | null} usage
 * @param {{ floor?: boolean }} [options]
 */
export function usageText(usage, { floor = false } = {}) {
  const known =
    usage &&
    (usage.inputTokens !== null ||
      usage.outputTokens !== null ||
      usage.cost !== null ||
      typeof usage.modelRequests === "number");
  if (!usage || !known) return "unknown";
  const p = usage.provenance ?? {};
  // A view without provenance (an older server) claims nothing: its figures are unverified.
  const of = (/** @type {Provenance | null | undefined} */ kind, /** @type {number | null} */ value) =>
    value === null ? null : (kind ?? "unknown");
  const input = of(p.inputTokens, usage.inputTokens);
  const output = of(p.outputTokens, usage.outputTokens);
  const cost = of(p.cost, usage.cost);
  const approx = (/** @type {Provenance | null} */ kind) => (kind === "estimated" ? "≈" : "");
  const parts = [
    `in ${approx(input)}${formatTokens(usage.inputTokens)}`,
    `out ${approx(output)}${formatTokens(usage.outputTokens)}`,
    `${approx(cost)}${formatCost(usage.cost)}`,
  ];
  const requests = usage.modelRequests;
  if (typeof requests === "number")
    parts.push(`${requests.toLocaleString("en-US")} model request${requests === 1 ? "" : "s"}`);
  const notes = [];
  const tokens = weakestProvenance([input, output]);
  if (tokens && tokens !== "measured") notes.push(`tokens ${NOT_MEASURED[tokens]}`);
  if (cost && cost !== "measured") notes.push(`cost ${NOT_MEASURED[cost]}`);
  return `${floor ? "at least " : ""}${parts.join(" · ")}${notes.length ? ` (${notes.join(", ")})` : ""}`;
}

/**
 * The model a turn asked for and the one that served it, as the provider reported it: "served by
 * gpt-5.4", "codex/default · served by gpt-5.4", "codex/default · served model not reported".
 * Never inferred from the request; empty when neither is known.
 * @param {string | null} model
 * @param {string[] | null | undefined} servedModels
 */
export function modelText(model, servedModels) {
  const served = servedModels && servedModels.length > 0 ? `served by ${servedModels.join(", ")}` : null;
  if (model === null) return served ?? "";
  return `${model} · ${served ?? "served model not reported"}`;
}

/**
 * A time of day, with the date when it is not today.
 * @param {string} iso
 * @param {Date} [now]
 */
export function timeText(iso, now = new Date()) {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return "";
  const time = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return at.toDateString() === now.toDateString()
    ? time
    : `${at.toLocaleDateString([], { month: "short", day: "numeric" })}, ${time}`;
}

/** @type {Record<import("./conversation.js").TurnStatus, string>} */
export const STATUS_LABEL = {
  sending: "sending",
  unsent: "not sent",
  pending: "starting",
  running: "working",
  completed: "done",
  failed: "failed",
  cancelled: "cancelled",
};

/**
 * What a waiting turn waits for, in words ("Waiting for you: permission"), by the server's state.
 * @param {string} waitingFor  awaiting_question, awaiting_permission, awaiting_plan_decision, awaiting_interaction
 */
export function waitingText(waitingFor) {
  const kind =
    { awaiting_question: "question", awaiting_permission: "permission", awaiting_plan_decision: "plan decision" }[
      waitingFor
    ] ?? "an answer";
  return `Waiting for you: ${kind}`;
}

/** @param {string | null} reason */
export const cancelReasonText = (reason) => (reason === "budget_exceeded" ? "token budget reached" : (reason ?? ""));

/**
 * How an ask ended, in words. `choice` is what this browser answered, when it did.
 * @param {import("./conversation.js").Ask} ask
 */
export function askOutcomeText(ask) {
  switch (ask.status) {
    case "answered":
      if (ask.choice) return ask.choice;
      // Another tab or device answered: the server says how (outcome), never what.
      return ask.outcome === "declined"
        ? "Declined."
        : ask.outcome === "cancelled"
          ? "Dismissed."
          : "Answered (in another tab or on another device).";
    case "expired":
      return "Expired: no answer came in time.";
    case "cancelled":
      return `No longer needed${ask.reason ? ` (${ask.reason})` : ""}.`;
    default:
      return "";
  }
}

/** Why an answer was not taken, in words, by acknowledgement status. */
/** @type {Record<string, string>} */
export const ACK_PROBLEM = {
  already_resolved_different: "Already answered differently (perhaps in another tab).",
  expired: "This request expired.",
  cancelled: "The agent no longer waits for this.",
  unknown_interaction: "The agent no longer knows this request.",
  unknown_run: "The run is gone.",
  binding_mismatch: "This request belongs to another run.",
  invalid_response: "The answer was not accepted.",
  transport_failure: "Could not confirm the answer was delivered; try again.",
};

/** How many characters of a message name its buttons for a screen reader ("Copy answer to “…”"). */
const SNIPPET_CHARS = 40;

/**
 * A message as a button's name quotes it: one line, at most 40 characters (the 40th an ellipsis
 * when cut), in quotes: “Fix the failing test”.
 * @param {string} text
 */
export function quoted(text) {
  const line = text.replace(/\s+/g, " ").trim();
  const chars = [...line];
  return `“${
    chars.length > SNIPPET_CHARS
      ? `${chars
          .slice(0, SNIPPET_CHARS - 1)
          .join("")
          .trimEnd()}…`
      : line
  }”`;
}
