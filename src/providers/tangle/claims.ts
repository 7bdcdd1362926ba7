/**
 * The Tangle Sandbox capability document as the project's claims (agent-provider-tangle, "Two capability
 * documents"). Pure. A flag counts only when it is `true`: a missing flag is unknown, and unknown
 * is never a claim. No document (a failed read) claims nothing.
 */
import { type Claims, NO_CLAIMS } from "../claims";

/** Interaction kinds with a portable meaning, offered when the deployment records answers. */
const OFFERED_INTERACTION_KINDS = ["question", "permission", "plan"];

function flag(doc: Record<string, unknown>, group: string, name: string): boolean {
  const g = doc[group];
  return typeof g === "object" && g !== null && (g as Record<string, unknown>)[name] === true;
}

export function claimsOf(doc: Record<string, unknown> | null): Claims {
  if (!doc) return NO_CLAIMS;
  const runControlRef = flag(doc, "dispatch", "runControlRef");
  const executionIdOnAdmission = flag(doc, "dispatch", "executionIdOnAdmission");
  const eventReplay = flag(doc, "runs", "eventReplay");
  const detach = runControlRef && executionIdOnAdmission;
  const interactions = flag(doc, "interactions", "responseDedupe");
  return {
    detach,
    replay: eventReplay,
    cancelRun:
      detach &&
      eventReplay &&
      flag(doc, "runs", "executionScopedStatus") &&
      flag(doc, "cancel", "canonicalRunCancellation") &&
      flag(doc, "cancel", "digestBound") &&
      flag(doc, "cancel", "idempotent"),
    interactions,
    interactionKinds: interactions ? OFFERED_INTERACTION_KINDS : [],
    // The Sandbox sessions guide documents fork on every session [sdk]; no capability flag is known
    // to gate it, so it is claimed with detached dispatch, and a deployment whose fork route proves
    // missing (404, 501) is remembered as without it (docs/api.md#branches).
    fork: detach,
    // agent-provider-tangle: the deployment fact holds only with all six flags.
    interactiveAgent: ["start", "status", "attach", "control", "sendPrompt", "stop"].every((name) =>
      flag(doc, "interactiveAgent", name),
    ),
  };
}
