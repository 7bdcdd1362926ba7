/**
 * A CLI Bridge route's capability document (`GET /v1/capabilities?model=`) as the project's claims,
 * and whether the route supports retained native sessions (agent-provider-cli-bridge: retained control only where
 * the running bridge proves the complete contract; native interactions only where it proves them).
 * Pure. Only `true` is a claim.
 */
import { type Claims, NO_CLAIMS } from "../claims";

type Doc = Record<string, unknown>;

function group(doc: Doc, name: string): Doc | null {
  const g = doc[name];
  return typeof g === "object" && g !== null && !Array.isArray(g) ? (g as Doc) : null;
}

const flag = (doc: Doc, name: string, key: string) => group(doc, name)?.[key] === true;

/** Retained control with every flag, and the streaming and session claims it requires. */
function retainedControl(doc: Doc): boolean {
  return (
    ["exactRunIdentity", "resultIdentity", "eventIdentity", "cancellationIdempotency"].every((k) =>
      flag(doc, "retainedControl", k),
    ) &&
    flag(doc, "streaming", "replay") &&
    flag(doc, "streaming", "detach") &&
    flag(doc, "streaming", "turnIdempotency") &&
    flag(doc, "sessions", "continue")
  );
}

/** The route continues a retained native session (`/v1/sessions` and `/turns`), rather than one-shot runs. */
export function supportsRetainedSessions(doc: Doc | null): boolean {
  return (
    doc !== null &&
    retainedControl(doc) &&
    flag(doc, "nativeContinuation", "atomicBoundary") &&
    flag(doc, "nativeContinuation", "requestIdempotency")
  );
}

export function bridgeClaims(doc: Doc | null): Claims {
  if (!doc) return NO_CLAIMS;
  const detach = flag(doc, "streaming", "detach") && flag(doc, "streaming", "turnIdempotency");
  const retained = supportsRetainedSessions(doc);
  // Interactions are native to retained sessions only: a one-shot run never carries a posture.
  const interactions =
    retained && flag(doc, "interactions", "responseIdempotency") && flag(doc, "interactions", "replay");
  const kinds = group(doc, "interactions")?.kinds;
  return {
    detach,
    replay: flag(doc, "streaming", "replay"),
    cancelRun: retainedControl(doc),
    interactions,
    interactionKinds:
      interactions && Array.isArray(kinds) ? kinds.filter((k): k is string => typeof k === "string") : [],
    // docs/cli-bridge-wire.md has no route that copies a session: an edit of an earlier message is refused.
    fork: false,
  };
}
