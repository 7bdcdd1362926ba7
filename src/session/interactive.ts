/**
 * Interactive mode (issue 41; seeds 000 and 004: "open the session in interactive mode"): the
 * conversation's agent session driven from the agent's own terminal UI. Starting it needs the
 * environment's `interactiveAgent` claim and a conversation at rest (no turn running or waiting); the
 * TUI is started (or found) upstream and control claimed under compare-and-swap, so input from a
 * stale claim is refused there. While it is held no turn is sent (409 `session_interactive`), and the
 * conversation's streams say so (`interactive.started`, `interactive.released`). The terminal itself is
 * the Worker's and src/terminal/'s; this room holds only the claim.
 */
import { Refusal } from "../errors";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import { agentSessionOf } from "./branches";
import type { EventLog } from "./event-log";
import type { SessionContext } from "./store/records";
import type { SessionStore } from "./store/store";

export interface InteractiveClaim {
  terminalId: string;
  environmentId: string;
  agentSessionId: string;
  connectionId: string;
  generation: number;
  startedAt: number;
}

export interface InteractiveDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => AgentProvider;
  /** The environment the active branch runs in, brought up. */
  environment: (context: SessionContext, branch: number) => Promise<EnvironmentRecord>;
  agentSessionId: (context: SessionContext) => string;
}

/** Turns a provider failure into a refusal (or rethrows what is not one). */
function refused(err: unknown): never {
  throw providerRefusal(err);
}

export class InteractiveControl {
  /** A start under way (its upstream calls): a turn meanwhile is refused, a second start waits for it. */
  private starting: Promise<InteractiveClaim> | null = null;

  constructor(private readonly deps: InteractiveDeps) {}

  held(): InteractiveClaim | null {
    return this.deps.store().getMeta("interactive") ?? null;
  }

  /**
   * Gives the session back to the chat when the terminal UI that held it has ended upstream (its
   * `/exit`, a stop): asked of the sandbox only while a claim is held. Unknown stays held.
   */
  async settle(): Promise<void> {
    const claim = this.held();
    const interactive = this.deps.provider().interactive;
    if (!claim || !interactive) return;
    const status = await interactive.status(claim.environmentId, claim.agentSessionId).catch(() => undefined);
    if (status === undefined || status?.status === "running") return;
    if (this.held()?.startedAt === claim.startedAt) await this.release("exited");
  }

  /** Refuses a turn while the terminal UI drives the session, or is being started. */
  refuseTurn(): void {
    const claim = this.held();
    if (this.starting && !claim)
      throw new Refusal("session_interactive", "the agent's own terminal UI is being opened for this conversation");
    if (claim)
      throw new Refusal(
        "session_interactive",
        "the agent's own terminal UI has this conversation now: give it back to the chat (DELETE /v1/conversations/:cid/interactive) to send a message",
        { terminalId: claim.terminalId, generation: claim.generation },
      );
  }

  /** Starts (or finds) the TUI and claims control; the same claim again when it is held already. */
  async start(
    context: SessionContext,
    terminalId: string,
    geometry: { cols: number; rows: number },
  ): Promise<InteractiveClaim> {
    if (this.starting) return this.starting;
    await this.settle();
    const existing = this.held();
    if (existing) return existing;
    const store = this.deps.store();
    if (store.activeTurn() || store.waitingTurns().length > 0)
      throw new Refusal(
        "session_busy",
        "a turn is running or waiting: interactive mode starts once the conversation is at rest",
      );
    this.starting = this.startOnce(context, terminalId, geometry).finally(() => {
      this.starting = null;
    });
    return this.starting;
  }

  private async startOnce(
    context: SessionContext,
    terminalId: string,
    geometry: { cols: number; rows: number },
  ): Promise<InteractiveClaim> {
    const store = this.deps.store();
    const provider = this.deps.provider();
    const interactive = provider.interactive;
    const branch = store.getMeta("activeBranch") ?? 0;
    const environment = await this.deps.environment(context, branch);
    const claims = await provider.claimsFor(environment).catch(refused);
    if (!interactive || claims.interactiveAgent !== true)
      throw new Refusal("capability_denied", "this environment offers no interactive agent (its own terminal UI)", {
        missing: ["interactiveAgent"],
      });
    const agentSessionId = agentSessionOf(store, this.deps.agentSessionId(context), branch);
    const { environmentId } = environment;
    const started = await interactive
      .start(environmentId, agentSessionId, { ...geometry, idempotencyKey: `interactive-${terminalId}` })
      .catch(refused);
    let claimed = await interactive
      .claim(environmentId, agentSessionId, {
        operationId: crypto.randomUUID(),
        holderId: context.sessionId,
        expectedGeneration: 0,
      })
      .catch(refused);
    // Held by another (a coordinator that did not release): a greater generation takes it over.
    if (claimed.status === "conflict")
      claimed = await interactive
        .claim(environmentId, agentSessionId, {
          operationId: crypto.randomUUID(),
          holderId: context.sessionId,
          expectedGeneration: claimed.generation,
        })
        .catch(refused);
    if (claimed.status === "conflict")
      throw new Refusal("operation_conflict", "another holder claimed the agent's terminal UI meanwhile: try again", {
        retryable: true,
      });
    const claim: InteractiveClaim = {
      terminalId,
      environmentId,
      agentSessionId,
      connectionId: started.connectionId,
      generation: claimed.generation,
      startedAt: Date.now(),
    };
    this.deps.log.commit((log) => {
      store.setMeta("interactive", claim);
      log.append({
        turnId: null,
        executionId: null,
        type: "interactive.started",
        data: { terminalId, generation: claim.generation },
        now: claim.startedAt,
      });
    });
    return claim;
  }

  /** Gives control back to the chat (the TUI is not stopped); `deleted` stops it too; `exited`: it ended upstream. */
  async release(reason: "released" | "deleted" | "exited"): Promise<InteractiveClaim | null> {
    const claim = this.held();
    if (!claim) return null;
    if (reason === "deleted") {
      const interactive = this.deps.provider().interactive;
      await interactive?.stop(claim.environmentId, claim.agentSessionId, claim.generation).catch(() => undefined);
    }
    const store = this.deps.store();
    this.deps.log.commit((log) => {
      store.setMeta("interactive", null);
      log.append({
        turnId: null,
        executionId: null,
        type: "interactive.released",
        data: { terminalId: claim.terminalId, reason },
        now: Date.now(),
      });
    });
    return claim;
  }
}
