/**
 * The session's asks: recorded as the agent makes them, ended when the run stops waiting, and
 * answered once whatever the retries and however many devices answer at once (one answer at a
 * time per ask). The answer itself is never stored: a keyed hash tells the same answer from
 * another. What upstream made of an answer comes from the provider as an acknowledgement status.
 * Whenever the asks open on a turn change what it waits for, `turn.waiting` says so (./turn-waiting.ts).
 */
import { hmacKey } from "../auth/ids";
import { Refusal } from "../errors";
import { canonicalDigest, canonicalJson, stripUndefined, toHex } from "../lib/digest";
import type { AgentProvider } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { InteractionAcknowledgement, InteractionRequest } from "../schemas/contracts";
import { answerProblems, approvalOf, type Outcome } from "./answer-check";
import type { Appender, EventLog } from "./event-log";
import { priorOperation } from "./operations";
import type { InteractionRecord, InteractionStatus, SessionContext } from "./store/records";
import type { SessionStore } from "./store/store";
import { sameWaiting, type Waiting, waitingOf } from "./turn-waiting";

export interface AnswerCommand {
  operationId: string;
  outcome: Outcome;
  data?: Record<string, unknown>;
  /** Forbidden names the raw answer held (found before anything copied it): the answer is refused. */
  forbidden?: string[];
}

export interface InteractionDeskDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => AgentProvider;
  /** The server secret the answer hashes are keyed with. */
  secret: () => string;
  /** An answer changed what the running turn waits for (after its commit): the conversation list follows. */
  waitingChanged: () => void;
}

/**
 * A keyed hash of an answer: tells the same answer from another without storing it. An answer is
 * its outcome and its data: the same outcome with other data is another answer
 * (`already_resolved_different`; test/interactions.test.ts "the same outcome with other data").
 */
async function answerKey(
  secret: string,
  interactionId: string,
  outcome: string,
  data: Record<string, unknown> | undefined,
): Promise<string> {
  const key = await hmacKey(secret);
  const message = canonicalJson(stripUndefined({ kind: "interaction-answer/v1", interactionId, outcome, data }));
  return toHex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

export class InteractionDesk {
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: InteractionDeskDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  private waiting(turnId: string): Waiting | null {
    return waitingOf(this.store.outstandingOfTurn(turnId));
  }

  /** Appends `turn.waiting` when the turn's open asks changed what it waits for since `before`; answers whether they did. */
  private announceWaiting(
    log: Appender,
    turnId: string,
    executionId: string,
    before: Waiting | null,
    now: number,
  ): boolean {
    const after = this.waiting(turnId);
    if (sameWaiting(before, after)) return false;
    log.append({
      turnId,
      executionId,
      type: "turn.waiting",
      data: { turnId, waitingFor: after?.waitingFor ?? null, interactionId: after?.interactionId ?? null },
      now,
    });
    return true;
  }

  /** Records a new ask and announces it; the caller holds the transaction. Answers whether what the turn waits for changed. */
  recordAsk(log: Appender, turnId: string, executionId: string, request: InteractionRequest, now: number): boolean {
    const before = this.waiting(turnId);
    if (!this.store.addInteraction({ interactionId: request.id, turnId, executionId, request, now })) return false;
    log.append({ turnId, executionId, type: "interaction.requested", data: { turnId, interaction: request }, now });
    return this.announceWaiting(log, turnId, executionId, before, now);
  }

  /** An outstanding ask ended without an answer; the caller holds the transaction. Answers whether what the turn waits for changed. */
  endAsk(log: Appender, interactionId: string, status: "expired" | "cancelled", now: number, reason?: string): boolean {
    const ask = this.store.interaction(interactionId);
    if (ask?.status !== "outstanding") return false;
    const before = this.waiting(ask.turnId);
    this.store.resolveInteraction(interactionId, { status, now });
    this.announce(log, ask, status, now, reason);
    return this.announceWaiting(log, ask.turnId, ask.executionId, before, now);
  }

  /** The run ended: nobody waits for its asks' answers any more. The caller holds the transaction. */
  closeAsksOfTurn(log: Appender, turnId: string, now: number): void {
    const open = this.store.outstandingOfTurn(turnId);
    const before = waitingOf(open);
    for (const ask of open) {
      this.store.resolveInteraction(ask.interactionId, { status: "cancelled", now });
      this.announce(log, ask, "cancelled", now, "the run ended");
    }
    if (open[0]) this.announceWaiting(log, turnId, open[0].executionId, before, now);
  }

  private announce(
    log: Appender,
    ask: InteractionRecord,
    status: InteractionStatus,
    now: number,
    reason?: string,
    outcome?: string,
    approved?: boolean,
  ): void {
    log.append({
      turnId: ask.turnId,
      executionId: ask.executionId,
      type: "interaction.resolved",
      // Never the answer itself: another device learns that it was answered, and how (for a
      // permission or a plan, whether it was granted), not what.
      data: {
        turnId: ask.turnId,
        interactionId: ask.interactionId,
        status,
        ...(outcome ? { outcome } : {}),
        ...(approved !== undefined ? { approved } : {}),
        ...(reason ? { reason } : {}),
      },
      now,
    });
  }

  /**
   * Answers one ask, once: a second device waits for the first, then sees it resolved. An
   * environment that does not claim interactions records no answers, so none is taken.
   */
  async answer(
    context: SessionContext,
    interactionId: string,
    command: AnswerCommand,
  ): Promise<InteractionAcknowledgement> {
    if (!this.store.getMeta("claims")?.interactions) {
      throw new Refusal(
        "capability_denied",
        "this agent environment does not claim interactions (it does not record answers)",
        { missing: ["interactions"] },
      );
    }
    const previous = this.queues.get(interactionId) ?? Promise.resolve();
    const run = previous.then(() => this.answerOnce(context, interactionId, command));
    const queued = run.catch(() => undefined);
    this.queues.set(interactionId, queued);
    try {
      return await run;
    } finally {
      if (this.queues.get(interactionId) === queued) this.queues.delete(interactionId);
    }
  }

  private async answerOnce(
    context: SessionContext,
    interactionId: string,
    command: AnswerCommand,
  ): Promise<InteractionAcknowledgement> {
    const store = this.store;
    const ask = store.interaction(interactionId);
    const turn = ask ? store.turn(ask.turnId) : null;
    const binding = {
      runId: ask?.executionId ?? "unknown",
      provider: turn?.controlRef?.provider ?? this.deps.provider().name,
      environmentId: turn?.controlRef?.environmentId ?? store.getMeta("environmentId") ?? "unknown",
      sessionId: context.sessionId,
      executionId: ask?.executionId ?? "unknown",
      interactionId,
    };
    const commandDigest = await canonicalDigest({
      operationId: command.operationId,
      binding,
      outcome: command.outcome,
    });
    const answerHmac = await answerKey(this.deps.secret(), interactionId, command.outcome, command.data);
    const ack = (
      status: InteractionAcknowledgement["status"],
      extra: { message?: string; retryable?: boolean } = {},
    ): InteractionAcknowledgement => ({
      operationId: command.operationId,
      binding,
      commandDigest,
      status,
      ...extra,
    });

    // Refused before anything is recorded or sent upstream.
    if (command.forbidden?.length)
      return ack("invalid_response", {
        message: command.forbidden.map((p) => `${p}: is a forbidden field name`).join("; "),
      });
    const prior = priorOperation(store.operation(command.operationId), "answer", answerHmac);
    if (prior.kind === "replay") return prior.ack;
    if (prior.kind === "conflict")
      return ack("already_resolved_different", { message: "this operationId was used for a different command" });
    if (!ask || !turn?.controlRef)
      return ack("unknown_interaction", { message: `no interaction ${interactionId} in this conversation` });
    const ref = turn.controlRef;
    const b = ask.request.binding;
    if (
      b &&
      (b.sessionId !== ref.sessionId ||
        b.executionId !== ref.executionId ||
        b.environmentId !== ref.environmentId ||
        b.provider !== ref.provider)
    ) {
      return ack("binding_mismatch", { message: "the interaction is bound to another run, environment or session" });
    }
    if (ask.status === "expired") return ack("expired", { message: "the interaction expired before it was answered" });
    if (ask.status === "cancelled") return ack("cancelled", { message: "the run no longer waits for this answer" });
    if (ask.status === "answered") {
      return ask.answerHmac === answerHmac
        ? ack("already_resolved_same")
        : ack("already_resolved_different", {
            message: `a different answer was recorded (operation ${ask.operationId ?? "unknown"})`,
          });
    }
    const problems = answerProblems(ask.request, command.outcome, command.data);
    if (problems.length > 0) return ack("invalid_response", { message: problems.join("; ") });

    const delivery = await this.deps
      .provider()
      .respondToInteraction(ref, {
        operationId: command.operationId,
        binding,
        commandDigest,
        request: ask.request,
        outcome: command.outcome,
        ...(command.data ? { data: command.data } : {}),
      })
      .catch((err: unknown) => {
        // A refusal of the operation itself (the deployment takes no answers): not an acknowledgement.
        throw providerRefusal(err);
      });
    // Upstream already holding this very answer while it is outstanding here means an earlier,
    // unconfirmed delivery of it landed: for this operation, that is acceptance.
    const status = delivery.status === "already_resolved_same" ? "accepted" : delivery.status;
    const result = ack(status, {
      ...(delivery.message !== undefined ? { message: delivery.message } : {}),
      ...(delivery.retryable !== undefined ? { retryable: delivery.retryable } : {}),
    });
    // Unconfirmed delivery is not recorded: the same operation retries it (the deployment records
    // answers, so a repeat cannot answer twice). A refused answer is not recorded either.
    if (status === "transport_failure") return result;
    let waitingChanged = false;
    this.deps.log.commit((log) => {
      const now = Date.now();
      if (status === "accepted") {
        const before = this.waiting(ask.turnId);
        store.resolveInteraction(interactionId, {
          status: "answered",
          outcome: command.outcome,
          answerHmac,
          operationId: command.operationId,
          now,
        });
        this.announce(
          log,
          ask,
          "answered",
          now,
          undefined,
          command.outcome,
          approvalOf(ask.request, command.outcome, command.data),
        );
        waitingChanged = this.announceWaiting(log, ask.turnId, ask.executionId, before, now);
      }
      if (status !== "invalid_response")
        store.putOperation(command.operationId, { kind: "answer", requestDigest: answerHmac, ack: result }, now);
    });
    if (waitingChanged) this.deps.waitingChanged();
    return result;
  }
}
