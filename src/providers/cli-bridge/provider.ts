/**
 * The CLI Bridge provider (agent-provider-cli-bridge) over a CLI Bridge server's HTTP API
 * (docs/cli-bridge-wire.md): the adapter that implements the seam's AgentProvider by composing one
 * module per job. Where each behaviour lives:
 *
 * - environment.ts: the bridge's one environment, and each model route's capability document
 *   (claims.ts reads it into claims, and whether the route runs retained native sessions);
 * - dispatch.ts: a turn dispatched as a one-shot run or a retained session's turn, in which bridge
 *   session (sessions.ts names them), and the exact control ref it answers;
 * - events.ts: the run's events after a cursor, read again from the start where a reader joins
 *   mid-run (chunks.ts, envelopes.ts and usage.ts map what the stream carries);
 * - result.ts: the run's snapshot, the confirmation of its end, its result (ends.ts reads a
 *   snapshot as an end);
 * - control.ts: cancel a run, answer an interaction;
 * - session-end.ts: when a bridge session is closed (after a one-shot Pi run, idle, on delete);
 * - capacity.ts: "the bridge is at capacity" read from its refusals; host-paths.ts: its host's
 *   file paths taken out of what users see;
 * - wire-errors.ts: the bridge's error codes as provider error codes; routes.ts the route table.
 */
import type { AgentCatalog } from "../../schemas/agents";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import type { Claims } from "../claims";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type {
  AgentProvider,
  AnswerDelivery,
  CancelOutcome,
  DispatchInput,
  DispatchReceipt,
  EnsureEnvironmentInput,
  EnsureEnvironmentResult,
  EnvironmentObservation,
  EnvironmentRecord,
  EventsOptions,
  InteractionCommand,
  ProviderEvent,
  ProviderResult,
} from "../provider";
import { capacityOf } from "./capacity";
import { readCatalog } from "./catalog";
import { bridgeClaims } from "./claims";
import { answerInteraction, cancelRun } from "./control";
import { dispatchTurn, type TurnDefaults } from "./dispatch";
import {
  CapabilityDocuments,
  ensureEnvironment,
  modelFor,
  observeEnvironment,
  refuseEnvironmentControl,
} from "./environment";
import { readEvents } from "./events";
import { readResult } from "./result";
import { SessionCloser } from "./session-end";
import { CLI_BRIDGE_PROVIDER_NAME } from "./sessions";

export interface CliBridgeProviderOptions extends TurnDefaults {
  transport: HttpTransport;
  /** `CAPABILITIES_RECHECK_MS`: how old a route's document must be before a missing claim reads it again. */
  capabilityRecheckMs?: number;
  /** `CLI_BRIDGE_SESSION_IDLE_MS`: how long a retained session (it holds a process slot) may idle before it is closed. */
  sessionIdleMs?: number;
}

export class CliBridgeProvider implements AgentProvider {
  readonly name = CLI_BRIDGE_PROVIDER_NAME;
  private readonly documents: CapabilityDocuments;
  private readonly closer: SessionCloser;

  constructor(private readonly options: CliBridgeProviderOptions) {
    this.documents = new CapabilityDocuments(options.transport, options.capabilityRecheckMs);
    this.closer = new SessionCloser(options.transport);
  }

  private get http(): HttpTransport {
    return this.options.transport;
  }

  ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
    return ensureEnvironment(input);
  }

  catalog(): Promise<AgentCatalog> {
    return readCatalog(this.http, this.documents, this.options.model);
  }

  async claimsFor(_environment: EnvironmentRecord, model?: string, options?: { recheck?: boolean }): Promise<Claims> {
    try {
      return bridgeClaims(await this.documents.read(modelFor(this.options.model, model), options?.recheck));
    } catch (err) {
      throw (await capacityOf(this.http, err)) ?? err;
    }
  }

  dispatch(input: DispatchInput): Promise<DispatchReceipt> {
    return dispatchTurn(this.http, this.options, this.documents, input);
  }

  events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    return readEvents(this.http, this.closer, ref, options);
  }

  result(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    return readResult(this.http, this.closer, ref);
  }

  cancel(
    ref: AgentExactRunControlRef,
    request: { operationId?: string; reason?: string } = {},
  ): Promise<CancelOutcome> {
    return cancelRun(this.http, ref, request);
  }

  respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    return answerInteraction(this.http, ref, command);
  }

  /** docs/cli-bridge-wire.md has no route that copies a session (its claims say no fork, so the session never asks). */
  async fork(): Promise<{ sessionId: string }> {
    throw new ProviderError("capability_denied", "a CLI Bridge cannot fork an agent session", {
      details: { missing: ["session.fork"] },
    });
  }

  deleteSession({
    lastRun,
  }: {
    environmentId: string;
    sessionId: string;
    lastRun?: AgentExactRunControlRef;
  }): Promise<void> {
    return this.closer.endSession(lastRun);
  }

  /** A retained session holds a bridge process slot while open, idle or not; a one-shot run's none between runs. */
  idleReleaseMs(ref: AgentExactRunControlRef): number | undefined {
    return ref.provider === CLI_BRIDGE_PROVIDER_NAME ? this.options.sessionIdleMs : undefined;
  }

  releaseSession(ref: AgentExactRunControlRef): Promise<boolean> {
    return this.closer.close(ref);
  }

  async observe(environment: EnvironmentRecord | null): Promise<EnvironmentObservation> {
    return observeEnvironment(environment);
  }

  readonly environmentControl = { stop: false, delete: false };

  async stopEnvironment(): Promise<void> {
    refuseEnvironmentControl("stop");
  }

  async deleteEnvironment(): Promise<void> {
    refuseEnvironmentControl("delete");
  }
}
