/**
 * How a run ended, read from its snapshot (`GET /v1/runs/:runId`, docs/cli-bridge-wire.md). Pure.
 *
 * - A snapshot that names another run or another request digest than the control ref's is not
 *   this run's end (seeds/003_84635c82d6e641c4.txt: the provider rejects a terminal response that does not match the
 *   accepted run): the turn fails `upstream_mismatch`, its outcome unknown.
 * - `status: "unknown"` is a run that was in flight when the bridge died; after its restart no
 *   process holds it and it is never terminal again (docs/cli-bridge-wire.md, "Restarts, shutdowns and session identity"). So is a run the bridge
 *   no longer knows at all (404: its README says a restart loses its in-memory registry). Either
 *   ends the turn `failed` `upstream_lost` at once, and a stop the session asked for wins.
 * - `cancelled` is whoever's cancel it was: the session knows whether it asked. A run whose stream
 *   said the bridge cancelled it (a caller's cancel, or its own as it shut down), and that the
 *   bridge can no longer confirm (down, or back from a restart that recorded no end: its runs read
 *   `unknown` or are forgotten), ended so: `STOPPED`, never `upstream_lost`, however soon the
 *   bridge is back.
 * - A failure's message is the bridge's, without its host's file paths (host-paths.ts).
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import type { RunError, TerminalStatus } from "../provider";
import { scrubbed } from "./host-paths";
import type { RunSnapshot } from "./wire";

export interface RunEnd {
  status: TerminalStatus;
  error?: RunError;
  /** The outcome is not known (the status is the gateway's conclusion): a stop the session asked for wins. */
  assumed?: true;
}

/** The end of a run the bridge lost or forgot. */
export const LOST: RunEnd = {
  status: "failed",
  assumed: true,
  error: {
    code: "upstream_lost",
    message:
      "the CLI Bridge lost this run (it restarted while the run was in flight): whether the run finished is unknown",
  },
};

/** The end of a run whose stream said the bridge cancelled it, when the bridge can no longer confirm that (see above). */
export const STOPPED: RunEnd = { status: "cancelled", assumed: true };

/** Whether a snapshot names exactly the ref's run (a snapshot without a digest names none other). */
export function namesRun(ref: AgentExactRunControlRef, snapshot: RunSnapshot): boolean {
  return (
    snapshot.id === ref.runId && (snapshot.requestDigest === undefined || snapshot.requestDigest === ref.requestDigest)
  );
}

/** The run's end from its snapshot; null while the bridge says it is running. */
export function runEnd(ref: AgentExactRunControlRef, snapshot: RunSnapshot): RunEnd | null {
  if (!namesRun(ref, snapshot)) {
    const what = snapshot.id !== ref.runId ? `run ${snapshot.id}` : `request digest ${snapshot.requestDigest}`;
    return {
      status: "failed",
      assumed: true,
      error: {
        code: "upstream_mismatch",
        message: `the CLI Bridge answered run ${ref.runId} with the snapshot of ${what}: refused, the run's outcome is unknown`,
      },
    };
  }
  switch (snapshot.status) {
    case "done":
    case "completed":
      return { status: "completed" };
    case "cancelled":
      return { status: "cancelled" };
    case "error":
    case "failed":
      if (typeof snapshot.error !== "string") return { status: "failed", error: { message: "the run failed" } };
      return { status: "failed", error: { message: scrubbed(snapshot.error, `run ${ref.runId}`) } };
    case "unknown":
      return LOST;
    default:
      return null;
  }
}
