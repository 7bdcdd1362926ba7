/**
 * The user's environment and what it claims for a turn (`claimedEnvironment`): a turn is refused
 * before any upstream call for what it does not claim (`capability_denied`, or
 * `interaction_kind_unsupported` for the interaction kinds it asks for). A claim that falls short is
 * asked for again first: the capability document may have changed since it was read, and is read
 * again where the bounds allow (docs/api.md#capabilities). Used by ./dispatch.ts before a dispatch
 * and by ./branch-fork.ts, each time an environment is recovered.
 */
import { Refusal } from "../errors";
import { type Claims, turnShortfall } from "../providers/claims";
import type { AgentProvider, EnvironmentRecord } from "../providers/provider";
import type { SessionContext, TurnRequest } from "./store/records";

/** An environment and what it claims for the turn at hand. */
export interface ClaimedEnvironment {
  environment: EnvironmentRecord;
  claims: Claims;
}

export interface TurnClaimsDeps {
  provider: () => Pick<AgentProvider, "claimsFor">;
  /** The user's ready environment; `staleEnvironmentId` says that one was found unusable, `claimMissing` that its claims fell short. */
  environment(context: SessionContext, staleEnvironmentId?: string, claimMissing?: boolean): Promise<EnvironmentRecord>;
}

/**
 * The user's environment and what it claims for this turn; refuses what it does not claim,
 * before any upstream call. `staleEnvironmentId`: the environment found stopped or gone, to
 * resume or replace.
 */
export async function claimedEnvironment(
  deps: TurnClaimsDeps,
  context: SessionContext,
  request: TurnRequest,
  staleEnvironmentId?: string,
): Promise<ClaimedEnvironment> {
  let environment = await deps.environment(context, staleEnvironmentId);
  let claims = await deps.provider().claimsFor(environment, request.model);
  let shortfall = turnShortfall(claims, request.interactions);
  if (shortfall.missing.length > 0 || shortfall.unsupported.length > 0) {
    environment = await deps.environment(context, undefined, true);
    claims = await deps.provider().claimsFor(environment, request.model, { recheck: true });
    shortfall = turnShortfall(claims, request.interactions);
  }
  const { missing, unsupported } = shortfall;
  if (missing.length > 0) {
    throw new Refusal(
      "capability_denied",
      `this agent environment does not claim ${missing.join(" and ")}, which running a turn needs`,
      {
        missing,
        warnings: environment.warnings,
      },
    );
  }
  if (unsupported.length > 0) {
    throw new Refusal(
      "interaction_kind_unsupported",
      `this agent environment does not offer interaction kinds: ${unsupported.join(", ")}`,
      { unsupported },
    );
  }
  return { environment, claims };
}
