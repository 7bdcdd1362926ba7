/**
 * What an environment's capability document lets the gateway offer (seed 000, "Two capability
 * documents"). Pure. A flag counts only when it is `true`: a missing flag is unknown, and unknown
 * is never a claim. No document (a failed read) claims nothing.
 */

export interface Claims {
  /** streaming.detach and streaming.turnIdempotency: detached, idempotent dispatch. */
  detach: boolean;
  /** streaming.replay: exact replay of one execution from a cursor. */
  replay: boolean;
  /** session.cancelRun: exact, digest-bound, idempotent cancellation. */
  cancelRun: boolean;
  /** interactions: answering asks, which needs the deployment to record answers. */
  interactions: boolean;
}

export type Claim = keyof Claims;

/** Interaction kinds with a portable meaning, offered when interactions are claimed. */
export const SUPPORTED_INTERACTION_KINDS = ["question", "permission", "plan"] as const;

function flag(doc: Record<string, unknown>, group: string, name: string): boolean {
  const g = doc[group];
  return typeof g === "object" && g !== null && (g as Record<string, unknown>)[name] === true;
}

export function claimsOf(doc: Record<string, unknown> | null): Claims {
  if (!doc) return { detach: false, replay: false, cancelRun: false, interactions: false };
  const runControlRef = flag(doc, "dispatch", "runControlRef");
  const executionIdOnAdmission = flag(doc, "dispatch", "executionIdOnAdmission");
  const eventReplay = flag(doc, "runs", "eventReplay");
  const detach = runControlRef && executionIdOnAdmission;
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
    interactions: flag(doc, "interactions", "responseDedupe"),
  };
}

/** The requested interaction kinds this environment cannot offer (every key counts, false ones too). */
export function unsupportedKinds(requested: Record<string, boolean>, claims: Claims): string[] {
  return Object.keys(requested).filter((kind) => !claims.interactions || !(SUPPORTED_INTERACTION_KINDS as readonly string[]).includes(kind));
}
