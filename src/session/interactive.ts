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
  constructor(private readonly deps: InteractiveDeps) {}

  held(): InteractiveClaim | null {
    return this.deps.store().getMeta("interactive") ?? null;
  }

  /** Refuses a turn while the terminal UI drives the session. */
  refuseTurn(): void {
    const claim = this.held();
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
    const store = this.deps.store();
    const existing = this.held();
    if (existing) return existing;
    if (store.activeTurn() || store.waitingTurns().length > 0)
      throw new Refusal(
        "session_busy",
        "a turn is running or waiting: interactive mode starts once the conversation is at rest",
      );
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

  /** Gives control back to the chat (the TUI is not stopped); `stop` stops it too (a delete). */
  async release(reason: "released" | "deleted"): Promise<InteractiveClaim | null> {
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
