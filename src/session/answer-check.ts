/**
 * Answers to interactions, checked against the exact outstanding request (docs/contracts.md,
 * "Interactions": validateInteractionResponse). Pure. Every problem names its field. What an
 * approval's decision means, and which grants a permission's scopes allow, is the table the chat
 * page reads too (public/wire/grants.js).
 */
import { allowedDecisions, decisionField, decisionOf } from "../../public/wire/grants.js";
import { forbiddenPaths, isForbiddenName } from "../lib/forbidden-names";
import type { InteractionField, InteractionRequest } from "../schemas/contracts";

export type Outcome = "accepted" | "declined" | "cancelled";

function optionValues(field: Extract<InteractionField, { type: "select" }>): string[] {
  return field.options.map((o) => (typeof o === "string" ? o : o.value));
}

function checkField(field: InteractionField, value: unknown, request: InteractionRequest): string | null {
  const name = field.name;
  switch (field.type) {
    case "text":
    case "secret": {
      if (typeof value !== "string") return `${name}: must be text`;
      const max = field.type === "text" ? (field as { maxLength?: number }).maxLength : undefined;
      if (max !== undefined && value.length > max) return `${name}: must be at most ${max} characters`;
      return null;
    }
    case "number": {
      const f = field as { min?: number; max?: number; integer?: boolean };
      if (typeof value !== "number" || !Number.isFinite(value)) return `${name}: must be a number`;
      if (f.integer && !Number.isInteger(value)) return `${name}: must be a whole number`;
      if (f.min !== undefined && value < f.min) return `${name}: must be at least ${f.min}`;
      if (f.max !== undefined && value > f.max) return `${name}: must be at most ${f.max}`;
      return null;
    }
    case "boolean":
      return typeof value === "boolean" ? null : `${name}: must be true or false`;
    case "select": {
      const f = field as Extract<InteractionField, { type: "select" }>;
      // An approval's decision: only what the table knows its scopes allow (public/wire/grants.js).
      const options = field === decisionField(request) ? allowedDecisions(request) : optionValues(f);
      const chosen = f.multi ? value : [value];
      if (!Array.isArray(chosen) || chosen.some((v) => typeof v !== "string"))
        return `${name}: must be ${f.multi ? "a list of choices" : "one of the choices"}`;
      const unknown = (chosen as string[]).filter((v) => !options.includes(v));
      if (unknown.length && !(f.allowCustom && request.kind !== "permission"))
        return `${name}: ${unknown.join(", ")} is not one of ${options.join(", ")}`;
      return null;
    }
    default:
      return `${name}: has a field type this gateway cannot check`;
  }
}

/**
 * Whether an answer grants a permission or approves a plan: the decision, not the answer's
 * values (never its feedback or scope), so other views can show an approval as granted or
 * denied. Undefined for other kinds of ask.
 */
export function approvalOf(
  request: InteractionRequest,
  outcome: Outcome,
  data: Record<string, unknown> | undefined,
): boolean | undefined {
  if (request.kind !== "permission" && request.kind !== "plan") return undefined;
  if (outcome !== "accepted") return false;
  const field = decisionField(request);
  const decision = field && data ? data[field.name] : undefined;
  // A decision the table does not know (a plan's own option) is not claimed either way.
  if (typeof decision === "string") return decisionOf(request, decision)?.allows;
  return true;
}

/** Problems with an answer, each naming its field; empty when the answer fits the request. */
export function answerProblems(
  request: InteractionRequest,
  outcome: Outcome,
  data: Record<string, unknown> | undefined,
): string[] {
  const problems: string[] = [];
  const allowed = request.allowedOutcomes ?? ["accepted", "declined", "cancelled"];
  if (!allowed.includes(outcome)) problems.push(`outcome: ${outcome} is not allowed here (${allowed.join(", ")})`);
  if (outcome !== "accepted") {
    if (data !== undefined && Object.keys(data).length > 0) problems.push("data: only an accepted answer carries data");
    return problems;
  }
  const values = data ?? {};
  const forbidden = forbiddenPaths(values, "");
  const fields = new Map(request.answerSpec.fields.map((f) => [f.name, f]));
  for (const key of Object.keys(values)) {
    if (!fields.has(key) && !isForbiddenName(key)) problems.push(`${key}: is not a field of this request`);
  }
  problems.push(...forbidden.map((p) => `${p}: is a forbidden field name`));
  for (const field of request.answerSpec.fields) {
    const value = Object.hasOwn(values, field.name) ? values[field.name] : undefined;
    if (value === undefined || value === null) {
      if (field.required) problems.push(`${field.name}: is required`);
      continue;
    }
    const problem = checkField(field, value, request);
    if (problem) problems.push(problem);
  }
  return problems;
}
