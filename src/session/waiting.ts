/**
 * What a turn waits for while an ask of the agent is open. The Sandbox's sessions document
 * ("When the agent waits for a person") has the turn report a status such as `awaiting_question`
 * or `awaiting_plan_decision`; the gateway keeps its turn `status` (`running`) and reports the
 * waiting state beside it, in the same names. Pure: the turn's open asks in, its state out.
 */
import type { WaitingFor } from "../schemas/api";

const BY_KIND: Record<string, WaitingFor> = {
  question: "awaiting_question",
  permission: "awaiting_permission",
  plan: "awaiting_plan_decision",
};

/** The waiting state an open ask of this kind puts its turn in (a namespaced kind: `awaiting_interaction`). */
export function waitingStateOf(kind: string): WaitingFor {
  return Object.hasOwn(BY_KIND, kind) ? BY_KIND[kind]! : "awaiting_interaction";
}

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
