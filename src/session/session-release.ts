/**
 * Giving back what a conversation's agent sessions hold upstream while idle (issue 36). A CLI
 * Bridge retained session keeps one of the bridge's process slots from its first turn until it is
 * closed, idle time included: with a handful of conversations left open, every other turn on the
 * bridge is refused. So a session whose provider says it holds something while idle
 * (`idleReleaseMs`) is released (`releaseSession`) once its last run has been over that long with
 * no turn running or waiting in the conversation. The object's alarm does it (`dueAt` says when it
 * must ring; session.ts multiplexes it with the watchdog's and the webhook hand-off's). The next
 * turn there opens another session, and its receipt says whether the agent remembers. What was
 * released is remembered with its last run, so nothing is released twice; a delete releases every
 * session the conversation ran in.
 */
import type { AgentProvider } from "../providers/provider";
import type { AgentExactRunControlRef } from "../schemas/contracts";
import type { EventLog } from "./event-log";
import { TERMINAL_TURN_STATUSES } from "./store/records";
import type { SessionStore } from "./store/store";

/** After a release upstream did not answer, the alarm tries again this much later. */
const RETRY_MS = 60_000;

export interface SessionReleaseDeps {
  store: () => SessionStore;
  log: Pick<EventLog, "commit">;
  provider: () => Pick<AgentProvider, "idleReleaseMs" | "releaseSession">;
}

interface Held {
  ref: AgentExactRunControlRef;
  /** When it may be released: its last run's end plus the idle time its provider allows. */
  dueAt: number;
}

export class SessionRelease {
  /** No release is tried before this (one upstream did not answer); memory only. */
  private retryAt = 0;

  constructor(private readonly deps: SessionReleaseDeps) {}

  private get store(): SessionStore {
    return this.deps.store();
  }

  /** When the alarm must ring for the next idle release; null when none is due (a turn runs or waits; none held). */
  dueAt(): number | null {
    if (this.busy()) return null;
    const due = this.held().map((h) => h.dueAt);
    return due.length === 0 ? null : Math.max(Math.min(...due), this.retryAt);
  }

  /** The alarm: releases each session idle long enough (none while a turn runs or waits). Never throws. */
  async releaseIdle(now = Date.now()): Promise<void> {
    if (this.busy() || now < this.retryAt) return;
    for (const held of this.held()) {
      if (held.dueAt > now || this.busy()) continue;
      try {
        await this.release(held.ref);
      } catch (err) {
        this.retryAt = Date.now() + RETRY_MS;
        const msg = "releasing an idle agent session failed; the alarm tries again";
        console.error(JSON.stringify({ msg, sessionId: held.ref.sessionId, error: String(err) }));
        return;
      }
    }
  }

  /** The conversation is deleted: every session it ran in that holds anything is released (a failure is thrown). */
  async releaseAll(): Promise<void> {
    for (const { ref } of this.held()) await this.deps.provider().releaseSession?.(ref);
  }

  /** A turn runs or waits: nothing is idle. */
  private busy(): boolean {
    return this.store.activeTurn() !== null || this.store.waitingTurns().length > 0;
  }

  /** The sessions the conversation ran in that hold something while idle and are not released since their last run. */
  private held(): Held[] {
    const provider = this.deps.provider();
    // A provider that holds nothing while idle (the Sandbox) costs no read of the turns.
    if (!provider.idleReleaseMs) return [];
    const released = this.store.getMeta("releasedSessions") ?? {};
    return this.store.upstreamRuns().flatMap(({ ref, status, completedAt }) => {
      if (!TERMINAL_TURN_STATUSES.has(status) || completedAt === null) return [];
      if (released[ref.sessionId] === ref.executionId) return [];
      const idleMs = provider.idleReleaseMs?.(ref);
      return idleMs === undefined ? [] : [{ ref, dueAt: completedAt + idleMs }];
    });
  }

  /**
   * Releases one session; remembered once upstream let it go (not when a turn runs there now: that
   * turn's end starts its idle time again).
   */
  private async release(ref: AgentExactRunControlRef): Promise<void> {
    if (!(await this.deps.provider().releaseSession?.(ref))) return;
    this.deps.log.commit(() => {
      const released = this.store.getMeta("releasedSessions") ?? {};
      this.store.setMeta("releasedSessions", { ...released, [ref.sessionId]: ref.executionId });
    });
  }
}
