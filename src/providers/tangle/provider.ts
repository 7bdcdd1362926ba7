/**
 * The Tangle Sandbox provider (agent-provider-tangle) over the Sandbox HTTP API
 * (docs/sandbox-wire.md): the adapter that implements the seam's AgentProvider by composing one
 * module per job. Where each behaviour lives:
 *
 * - environment.ts: the owner's sandbox created, resumed or replaced, and its capability
 *   document read (claims.ts reads the document into claims);
 * - dispatch.ts: a turn dispatched under the caller's execution id, its admission read, the
 *   exact control ref it answers (backend.ts: the backend object it carries);
 * - events.ts: the run's events replayed after a cursor, then live (frames.ts maps each frame;
 *   plans.ts turns a plan waiting for its decision into an ask);
 * - result.ts: the run's result read after the fact, or its session's state where no result route exists;
 * - control.ts: cancel a run, answer an interaction;
 * - fork.ts: an agent session forked at a run (a branch of the conversation);
 * - session-end.ts: a conversation's session deleted upstream;
 * - catalog.ts: the deployment's backend catalog (GET /v1/agents);
 * - checkpoints.ts: the workspace's checkpoints: taken before each turn, compared, restored, released;
 * - observation.ts: the sandbox and the account as the Sandbox reports them; a user's stop and delete;
 * - workspace-files.ts: the workspace's files: list, stat, read, download, upload;
 * - terminals.ts: the sandbox's terminals: a PTY's socket, its frames, its metadata; interactive.ts the
 *   agent's own terminal UI (started, control claimed, stopped);
 * - wire-errors.ts: the Sandbox's error codes as provider error codes; routes.ts the route table.
 */

import type { AgentCatalog } from "../../schemas/agents";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import type { Claims } from "../claims";
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
  ForkInput,
  InteractionCommand,
  ProviderEvent,
  ProviderResult,
} from "../provider";
import { readCatalog } from "./catalog";
import { TangleCheckpoints } from "./checkpoints";
import { claimsOf } from "./claims";
import { answerInteraction, cancelRun } from "./control";
import { dispatchTurn, TANGLE_PROVIDER_NAME } from "./dispatch";
import { ensureEnvironment } from "./environment";
import { readEvents } from "./events";
import { forkSession } from "./fork";
import { TangleInteractive } from "./interactive";
import { deleteSandbox, observe, stopSandbox } from "./observation";
import { readResult } from "./result";
import { endSession } from "./session-end";
import { TangleTerminals } from "./terminals";
import { TangleWorkspaceFiles } from "./workspace-files";

export interface TangleProviderOptions {
  client: HttpTransport;
  backend: string;
  model?: string;
  /** AGENT_MODEL_CREDENTIAL and its endpoint (./backend.ts BackendDefaults). */
  modelCredential?: { name: string; baseUrl: string };
  git?: { url: string; ref?: string };
  readyTimeoutMs: number;
  /** How long a dispatch stream may go without admitting the run before the run is looked up by its id. */
  admissionTimeoutMs: number;
  readyPollMs: number;
  /** Sent at creation (`SANDBOX_IDLE_TIMEOUT_SECONDS`, `SANDBOX_MAX_LIFETIME_SECONDS`). */
  limits: { idleTimeoutSeconds: number; maxLifetimeSeconds: number };
  /** The workspace's root in the sandbox (`SANDBOX_WORKSPACE_ROOT`); absent: `/home/agent`. */
  workspaceRoot?: string;
}

export class TangleProvider implements AgentProvider {
  readonly name = TANGLE_PROVIDER_NAME;

  readonly checkpoints: TangleCheckpoints;
  readonly workspaceFiles: TangleWorkspaceFiles;
  readonly terminals: TangleTerminals;
  readonly interactive: TangleInteractive;

  constructor(private readonly options: TangleProviderOptions) {
    this.checkpoints = new TangleCheckpoints(options.client);
    this.workspaceFiles = new TangleWorkspaceFiles(options.client, options.workspaceRoot ?? "/home/agent");
    this.terminals = new TangleTerminals(options.client);
    this.interactive = new TangleInteractive(options.client);
  }

  ensureEnvironment(input: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
    return ensureEnvironment(this.options, input);
  }

  catalog(): Promise<AgentCatalog> {
    return readCatalog(this.options.client, this.options);
  }

  /** The record's document decides; `ensureEnvironment` is what reads it again. */
  async claimsFor(environment: EnvironmentRecord): Promise<Claims> {
    return claimsOf(environment.capabilities);
  }

  dispatch(input: DispatchInput): Promise<DispatchReceipt> {
    return dispatchTurn(this.options, input);
  }

  events(ref: AgentExactRunControlRef, options: EventsOptions): AsyncIterable<ProviderEvent> {
    return readEvents(this.options.client, ref, options);
  }

  result(ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
    return readResult(this.options.client, ref);
  }

  cancel(ref: AgentExactRunControlRef): Promise<CancelOutcome> {
    return cancelRun(this.options.client, ref);
  }

  respondToInteraction(ref: AgentExactRunControlRef, command: InteractionCommand): Promise<AnswerDelivery> {
    return answerInteraction(this.options.client, ref, command);
  }

  fork(input: ForkInput): Promise<{ sessionId: string }> {
    return forkSession(this.options.client, input);
  }

  deleteSession({ environmentId, sessionId }: { environmentId: string; sessionId: string }): Promise<void> {
    return endSession(this.options, environmentId, sessionId);
  }

  observe(environment: EnvironmentRecord | null): Promise<EnvironmentObservation> {
    return observe(this.options.client, environment);
  }

  readonly environmentControl = { stop: true, delete: true };

  stopEnvironment(environment: EnvironmentRecord): Promise<void> {
    return stopSandbox(this.options.client, environment.environmentId);
  }

  deleteEnvironment(environment: EnvironmentRecord): Promise<void> {
    return deleteSandbox(this.options.client, environment.environmentId);
  }
}
