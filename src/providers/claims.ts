/**
 * What an environment lets the gateway offer, in the project's own terms. Each provider turns its
 * own capability document into these claims (`AgentProvider.claims`); the session reads only
 * claims. A claim the document does not prove is false: unknown is never a claim.
 */
import { z } from "zod";

export const ClaimsSchema = z.strictObject({
  /** Detached, idempotent dispatch under the caller's execution id. */
  detach: z.boolean(),
  /** Exact replay of one run from a cursor. */
  replay: z.boolean(),
  /** Exact, digest-bound, idempotent cancellation. */
  cancelRun: z.boolean(),
  /** Answering asks (the deployment records answers, so a repeat cannot answer twice). */
  interactions: z.boolean(),
  /** The interaction kinds a turn may request. */
  interactionKinds: z.array(z.string()),
});
export type Claims = z.infer<typeof ClaimsSchema>;

export const NO_CLAIMS: Claims = { detach: false, replay: false, cancelRun: false, interactions: false, interactionKinds: [] };

/** The requested interaction kinds this environment cannot offer (every key counts, false ones too). */
export function unsupportedKinds(requested: Record<string, boolean>, claims: Claims): string[] {
  return Object.keys(requested).filter((kind) => !claims.interactions || !claims.interactionKinds.includes(kind));
}
