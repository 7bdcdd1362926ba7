/**
 * What an environment lets the gateway offer, in the project's own terms. Each provider turns its
 * own capability document into these claims (`AgentProvider.claims`); the session reads only
 * claims. A claim the document does not prove is false: unknown is never a claim.
 *
 * Also when a document is read again (docs/api.md#capabilities): a document can change under a
 * running environment (a deployment gains or loses a flag), so claims read once are not kept for
 * good. One rule for every provider's document, whoever keeps it.
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
  /** Forking an agent session at a run (a branch of the conversation continues from there). Absent in claims stored before it was read: unknown (read again at the next turn), never a claim. */
  fork: z.boolean().optional(),
  /** The agent's own terminal UI with exact control (interactive mode): the document's `interactiveAgent` group, every flag. Absent: not read, never a claim. */
  interactiveAgent: z.boolean().optional(),
});
export type Claims = z.infer<typeof ClaimsSchema>;

export const NO_CLAIMS: Claims = {
  detach: false,
  replay: false,
  cancelRun: false,
  interactions: false,
  interactionKinds: [],
  fork: false,
  interactiveAgent: false,
};

/** The requested interaction kinds this environment cannot offer (every key counts, false ones too). */
export function unsupportedKinds(requested: Record<string, boolean>, claims: Claims): string[] {
  return Object.keys(requested).filter((kind) => !claims.interactions || !claims.interactionKinds.includes(kind));
}

/** What a turn needs that the claims lack: the claims it cannot run without, and the requested interaction kinds not offered. */
export function turnShortfall(
  claims: Claims,
  requested: Record<string, boolean> | undefined,
): { missing: string[]; unsupported: string[] } {
  const missing = [!claims.detach && "streaming.detach", !claims.replay && "streaming.replay"].filter(
    (m): m is string => m !== false,
  );
  return { missing, unsupported: requested ? unsupportedKinds(requested, claims) : [] };
}

/** How long a capability document is trusted: `maxAgeMs` at most; `recheckMs` once a claim it lacks was asked for. */
export interface CapabilityReadBounds {
  maxAgeMs: number;
  recheckMs: number;
}

/**
 * Whether a document read at `readAtMs` is read again now. Always once it is older than
 * `maxAgeMs`; sooner when something it does not claim was asked for (`claimMissing`), but only
 * once it is `recheckMs` old, so a refusal repeated, or a document that keeps changing, costs at
 * most one read per `recheckMs`.
 */
export function capabilityReadDue(
  readAtMs: number,
  nowMs: number,
  bounds: CapabilityReadBounds,
  claimMissing: boolean,
): boolean {
  const age = nowMs - readAtMs;
  // Written as "not younger than" so that an unknown age (NaN) reads again.
  return !(age < bounds.maxAgeMs) || (claimMissing && !(age < bounds.recheckMs));
}
