/**
 * When a bridge session is closed (`POST /v1/sessions/:id/close`): a one-shot Pi run's session
 * once the run's end is confirmed (agent-provider-cli-bridge), and the conversation's retained
 * or not-yet-closed Pi session when the conversation is deleted. Each session is closed once per
 * instance: the closed ids are kept here, so a repeat cleanup sends no second close.
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import { LOST, namesRun, type RunEnd } from "./ends";
import { bridgeRoutes as routes } from "./routes";
import { CLI_BRIDGE_PROVIDER_NAME, PI_ONE_SHOT_PROVIDER } from "./sessions";
import { isNotFound, refine } from "./wire-errors";
import type { RunSnapshot } from "./wire";

export class SessionCloser {
  /** One-shot Pi sessions this instance closed: a repeat cleanup sends no second close. */
  private readonly closedSessions = new Set<string>();

  constructor(private readonly http: HttpTransport) {}

  /**
   * Once a one-shot Pi run's end is confirmed, its session is closed (agent-provider-cli-bridge), after checking the
   * snapshot names exactly this run and session; once per session.
   */
  async afterEnd(ref: AgentExactRunControlRef, snapshot: RunSnapshot, end: RunEnd): Promise<{ closeFailed?: string }> {
    if (ref.provider !== PI_ONE_SHOT_PROVIDER || end === LOST || !namesRun(ref, snapshot) || snapshot.sessionId !== ref.sessionId) return {};
    if (this.closedSessions.has(ref.sessionId)) return {};
    try {
      await this.http.send(routes.closeSession(ref.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (!(isNotFound(err) || (err instanceof ProviderError && err.code === "conflict"))) {
        return { closeFailed: `the run's Pi session could not be closed on the CLI Bridge: ${err instanceof Error ? err.message : String(err)}` };
      }
    }
    this.closedSessions.add(ref.sessionId);
    return {};
  }

  /** The conversation is deleted: its last run's session is closed where one is left open. */
  async endSession(lastRun: AgentExactRunControlRef | undefined): Promise<void> {
    // A retained session is closed, and a one-shot Pi session not closed yet; other one-shot runs leave nothing to delete.
    if (!lastRun || (lastRun.provider !== CLI_BRIDGE_PROVIDER_NAME && lastRun.provider !== PI_ONE_SHOT_PROVIDER)) return;
    if (this.closedSessions.has(lastRun.sessionId)) return;
    try {
      await this.http.send(routes.closeSession(lastRun.sessionId), { body: {}, retry: true }, "close session");
    } catch (err) {
      if (err instanceof ProviderError && (err.code === "not_found" || err.code === "conflict")) return;
      throw refine(err);
    }
  }
}
