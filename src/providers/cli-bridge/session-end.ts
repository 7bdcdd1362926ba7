/**
 * When a bridge session is closed (`POST /v1/sessions/:id/close`): a one-shot Pi run's session
 * once the run's end is confirmed (agent-provider-cli-bridge); a retained session once it has been
 * idle for `CLI_BRIDGE_SESSION_IDLE_MS` (its native child holds one of the bridge's process slots
 * until it is closed); and every retained or not-yet-closed Pi session of a conversation when the
 * conversation is deleted. Each session is closed once per instance: the closed ids are kept here,
 * so a repeat cleanup sends no second close. The bridge refuses to close a session while a turn
 * runs in it (409 `active_run`): then it is not closed.
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import { LOST, namesRun, type RunEnd } from "./ends";
import { bridgeRoutes as routes } from "./routes";
import { CLI_BRIDGE_PROVIDER_NAME, PI_ONE_SHOT_PROVIDER } from "./sessions";
import type { RunSnapshot } from "./wire";
import { isNotFound, isWire, refine } from "./wire-errors";

export class SessionCloser {
  /** One-shot Pi sessions this instance closed: a repeat cleanup sends no second close. */
  private readonly closedSessions = new Set<string>();

  constructor(private readonly http: HttpTransport) {}

  /**
   * Once a one-shot Pi run's end is confirmed, its session is closed (agent-provider-cli-bridge), after checking the
   * snapshot names exactly this run and session; once per session.
   */
  async afterEnd(ref: AgentExactRunControlRef, snapshot: RunSnapshot, end: RunEnd): Promise<{ closeFailed?: string }> {
    if (
      ref.provider !== PI_ONE_SHOT_PROVIDER ||
      end === LOST ||
      !namesRun(ref, snapshot) ||
      snapshot.sessionId !== ref.sessionId
    )
      return {};
    if (this.closedSessions.has(ref.sessionId)) return {};
    try {
      await this.http.send(routes.closeSession(ref.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (!(isNotFound(err) || (err instanceof ProviderError && err.code === "conflict"))) {
        return {
          closeFailed: `the run's Pi session could not be closed on the CLI Bridge: ${err instanceof Error ? err.message : String(err)}`,
        };
      }
    }
    this.closedSessions.add(ref.sessionId);
    return {};
  }

  /** The conversation is deleted: its last run's session is closed where one is left open. */
  async endSession(lastRun: AgentExactRunControlRef | undefined): Promise<void> {
    if (lastRun) await this.close(lastRun);
  }

  /**
   * Closes the bridge session `ref` ran in: a retained session, or a one-shot Pi session not
   * closed yet (other one-shot runs leave nothing open). False when the bridge kept it because a
   * turn runs in it; a session it no longer knows, or has closed, is closed.
   */
  async close(ref: AgentExactRunControlRef): Promise<boolean> {
    if (ref.provider !== CLI_BRIDGE_PROVIDER_NAME && ref.provider !== PI_ONE_SHOT_PROVIDER) return true;
    if (this.closedSessions.has(ref.sessionId)) return true;
    try {
      await this.http.send(routes.closeSession(ref.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (isWire(err, "active_run")) return false;
      if (!(err instanceof ProviderError && (err.code === "not_found" || err.code === "conflict"))) throw refine(err);
    }
    this.closedSessions.add(ref.sessionId);
    return true;
  }
}
