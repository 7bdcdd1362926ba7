/**
 * A branch's agent session forked, once, before the branch's first dispatch (./dispatch.ts): the
 * agent session of the branch forked from is copied up to the fork point into the branch's own
 * (./branches.ts names it). Refused before any upstream call where the environment is known not to
 * fork (its stored claims, or a fork route that proved missing: `forkKnownUnavailable`), or claims
 * no fork. Where the session to copy is gone (its sandbox replaced since that turn ran, or upstream
 * no longer holds it), nothing is copied: the branch starts afresh and the turn says so
 * (`FORK_SOURCE_GONE`; docs/api.md#branches).
 */
import { Refusal } from "../errors";
import { ProviderError } from "../providers/errors";
import type { AgentProvider } from "../providers/provider";
import type { AbandonedRuns } from "./abandoned-runs";
import type { EventLog } from "./event-log";
import type { SessionContext, StoredBranch, TurnRequest } from "./store/records";
import type { SessionStore } from "./store/store";
import { type ClaimedEnvironment, claimedEnvironment, type TurnClaimsDeps } from "./turn-claims";

/** An edit of an earlier message where the environment cannot fork (docs/api.md#branches). */
export function forkRefusal(): Refusal {
  return new Refusal(
    "capability_denied",
    "this agent environment cannot fork an agent session (session.fork), which a turn after an earlier message needs; continue the latest message, or send the first one again",
    { missing: ["session.fork"] },
  );
}

/** The agent session a branch would fork is gone with its sandbox: the branch starts afresh, and says so (docs/api.md#branches). */
export const FORK_SOURCE_GONE = {
  code: "agent_memory_reset",
  message:
    "the agent session this message was answered in is gone (its sandbox was replaced, or no longer holds it); this turn starts a new agent session, without the earlier conversation in its memory",
};

/** What the conversation's environment is known not to do, before any call: its stored claims say no fork, or its fork route proved missing. */
export function forkKnownUnavailable(store: SessionStore): boolean {
  return (
    store.getMeta("claims")?.fork === false ||
    store.getMeta("forkUnavailable")?.environmentId === store.getMeta("environmentId")
  );
}

export interface BranchForkDeps extends TurnClaimsDeps {
  store: () => SessionStore;
  log: EventLog;
  provider: () => Pick<AgentProvider, "claimsFor" | "fork">;
  /** Runs an earlier turn left going upstream: settled in a recovered environment (./abandoned-runs.ts). */
  abandoned: Pick<AbandonedRuns, "settle">;
}

/**
 * Copies the agent session of the branch forked from, up to the fork point, into the branch's
 * own session; refused before any upstream call where the environment claims no fork (or its
 * fork route proved missing). Recorded once made, so no retry forks twice. A fork that finds
 * the environment stopped or gone resumes or replaces it first, once, as a dispatch does. Where
 * the session to copy is gone (its sandbox replaced since that turn ran, or upstream no longer
 * holds it), nothing is copied: the branch starts afresh (`afresh`), and the turn says so.
 */
export async function forkBranch(
  deps: BranchForkDeps,
  context: SessionContext,
  request: TurnRequest,
  claimed: ClaimedEnvironment,
  branch: StoredBranch,
  /** The environment whose agent sessions `claimed`'s holds too (a workspace fork holds its seed's, as they were then). */
  sessionsFrom?: string,
): Promise<ClaimedEnvironment & { afresh?: true }> {
  let { environment, claims } = claimed;
  const at = branch.at === null ? null : deps.store().turn(branch.at);
  if (!at?.controlRef)
    throw new Refusal("turn_not_ready", `turn ${branch.at} has not run yet; a branch after it waits for it`, {
      retryable: true,
    });
  for (let recovered = false; ; recovered = true) {
    const unavailable = deps.store().getMeta("forkUnavailable");
    if (!claims.fork || unavailable?.environmentId === environment.environmentId) throw forkRefusal();
    // Agent sessions live in their sandbox: one made in a sandbox since replaced went with it.
    const holds = [environment.environmentId, ...(sessionsFrom ? [sessionsFrom] : [])];
    if (!holds.includes(at.controlRef.environmentId)) return { environment, claims, afresh: true };
    try {
      const { sessionId } = await deps.provider().fork({
        environmentId: environment.environmentId,
        sessionId: at.controlRef.sessionId,
        at: at.controlRef,
        newSessionId: branch.agentSessionId,
      });
      deps.log.commit(() => deps.store().markForked(branch.branch, sessionId));
      return { environment, claims };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      if (err.code === "capability_denied") {
        deps.log.commit(() =>
          deps.store().setMeta("forkUnavailable", { environmentId: environment.environmentId, since: Date.now() }),
        );
        throw forkRefusal();
      }
      if (err.code === "not_found") return { environment, claims, afresh: true };
      if (recovered || (err.code !== "environment_gone" && err.code !== "environment_not_running")) throw err;
      ({ environment, claims } = await claimedEnvironment(deps, context, request, environment.environmentId));
      await deps.abandoned.settle(environment.environmentId);
    }
  }
}
