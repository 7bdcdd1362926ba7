/**
 * A run's end read from its snapshot (`GET /v1/runs/:runId`, docs/cli-bridge-wire.md): the
 * snapshot read itself, the confirmation a stream's last event waits for (a finish is
 * provisional until the snapshot says terminal), and the result read after the fact. How a
 * snapshot reads as an end is ends.ts; a confirmed end of a one-shot Pi run closes its session
 * (session-end.ts).
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import type { HttpTransport } from "../http";
import type { ProviderResult } from "../provider";
import { LOST, type RunEnd, runEnd } from "./ends";
import { bridgeRoutes as routes } from "./routes";
import type { SessionCloser } from "./session-end";
import { RunSnapshot } from "./wire";
import { isNotFound } from "./wire-errors";

/** How long one snapshot read waits for a run to become terminal, and how often it is asked. */
const TERMINAL_WAIT_MS = 5_000;
const TERMINAL_CHECKS = 3;

/** The run's snapshot; `waitMs` asks the bridge to hold the answer until the run is terminal, that long at most. */
export async function readSnapshot(http: HttpTransport, runId: string, waitMs?: number): Promise<RunSnapshot> {
  return http.json(
    routes.run(runId),
    RunSnapshot,
    { retry: true, ...(waitMs ? { query: { wait_ms: String(waitMs) } } : {}) },
    "read run",
  );
}

/** How the run ended, from its snapshot (a one-shot Pi run's session is then closed); null while the bridge does not say. */
export async function confirmEnd(
  http: HttpTransport,
  closer: SessionCloser,
  ref: AgentExactRunControlRef,
): Promise<{ end: RunEnd; closeFailed?: string } | null> {
  for (let check = 0; check < TERMINAL_CHECKS; check++) {
    let snapshot: RunSnapshot;
    try {
      snapshot = await readSnapshot(http, ref.runId, TERMINAL_WAIT_MS);
    } catch (err) {
      if (isNotFound(err)) return { end: LOST };
      throw err;
    }
    const end = runEnd(ref, snapshot);
    if (end) return { end, ...(await closer.afterEnd(ref, snapshot, end)) };
  }
  return null;
}

/** The run's result, or null while it is still running; a run the bridge no longer knows is lost. */
export async function readResult(
  http: HttpTransport,
  closer: SessionCloser,
  ref: AgentExactRunControlRef,
): Promise<ProviderResult | null> {
  let snapshot: RunSnapshot;
  try {
    snapshot = await readSnapshot(http, ref.runId);
  } catch (err) {
    if (isNotFound(err)) return { status: LOST.status, error: LOST.error! };
    throw err;
  }
  const end = runEnd(ref, snapshot);
  if (!end) return null;
  await closer.afterEnd(ref, snapshot, end);
  return { status: end.status, ...(end.error ? { error: end.error } : {}) };
}
