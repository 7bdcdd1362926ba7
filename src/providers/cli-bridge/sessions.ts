/**
 * Which bridge session a conversation's turn runs in. Pure.
 *
 * A CLI Bridge owns one session id per session API: an id first used by a one-shot run (the
 * legacy session API) is refused by `POST /v1/sessions` with 409 `session_identity_conflict`, and
 * the reverse (docs/cli-bridge-wire.md, "Restarts, shutdowns and session identity"). And another model route is another
 * environment (seeds/003_84635c82d6e641c4.txt): a retained session runs the model it was opened with. So each transport
 * and model route of a conversation has a session family of its own,
 *
 *   `<conversation session id>:<r|o><12 hex of the route's digest>`   (retained | one-shot)
 *
 * and a family's session that ended (stopped, closed, lost across a bridge restart, a one-shot Pi
 * session closed after its run) is followed by the next generation, `…:g2`, `…:g3`. The ids use
 * only letters, digits and `:`, which every bridge id accepts.
 */
import { canonicalDigest } from "../../lib/digest";

export type Transport = "retained" | "one-shot";

/** The `X-Run-Provider` of a one-shot Pi run (transcript 41): its session is closed after the run, so the next turn runs in the next generation. */
export const PI_ONE_SHOT_PROVIDER = "pi";

/** The provider's name, and the `provider` coordinate of a retained run's control ref where the bridge names none. */
export const CLI_BRIDGE_PROVIDER_NAME = "cli-bridge";

const GENERATION = ":g";

/** The family of a conversation's sessions on one transport and model route. */
export async function sessionFamily(sessionId: string, transport: Transport, model: string): Promise<string> {
  const digest = await canonicalDigest({ transport, model });
  return `${sessionId}:${transport === "retained" ? "r" : "o"}${digest.slice("sha256:".length, "sha256:".length + 12)}`;
}

/** The family's session of generation `n` (1 is the family id itself). */
export function sessionOf(family: string, generation: number): string {
  return generation <= 1 ? family : `${family}${GENERATION}${generation}`;
}

/** The generation of a bridge session id in `family`; null when it is not one of the family's. */
export function generationIn(bridgeSessionId: string, family: string): number | null {
  if (bridgeSessionId === family) return 1;
  if (!bridgeSessionId.startsWith(`${family}${GENERATION}`)) return null;
  const n = bridgeSessionId.slice(family.length + GENERATION.length);
  return /^[1-9]\d{0,8}$/.test(n) ? Number(n) : null;
}

/** Whether a bridge session id is one of this conversation's (any family, any generation). */
export function isConversationSession(bridgeSessionId: string, sessionId: string): boolean {
  return bridgeSessionId.startsWith(`${sessionId}:`);
}

/** A bridge session id this gateway gave the conversation, in any naming it used. */
export function isOurs(bridgeSessionId: string, sessionId: string): boolean {
  // Before per-route families: the conversation's id itself, then `~g<N>` generations.
  return (
    isConversationSession(bridgeSessionId, sessionId) ||
    bridgeSessionId === sessionId ||
    bridgeSessionId.startsWith(`${sessionId}~g`)
  );
}
