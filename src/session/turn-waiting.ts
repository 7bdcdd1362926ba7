/**
 * What a turn waits for while an ask of the agent is open: the state of its oldest open ask, in
 * the names of ../../public/wire/waiting.js. Pure: the turn's open asks in, its state out.
 */
import { waitingStateOf } from "../../public/wire/waiting.js";
import type { WaitingFor } from "../schemas/api";

export interface Waiting {
  waitingFor: WaitingFor;
  /** The ask that puts the turn in this state. */
  interactionId: string;
}

/**
 * A turn's waiting state: that of its oldest open ask (given oldest first), null when none is
 * open. Several asks may be open at once; the turn waits for the first until it is answered.
 */
export function waitingOf(open: ReadonlyArray<{ interactionId: string; request: { kind: string } }>): Waiting | null {
  const first = open[0];
  return first ? { waitingFor: waitingStateOf(first.request.kind), interactionId: first.interactionId } : null;
}

/** Whether two waiting states are the same (same state, same ask). */
export function sameWaiting(a: Waiting | null, b: Waiting | null): boolean {
  return a?.waitingFor === b?.waitingFor && a?.interactionId === b?.interactionId;
}
