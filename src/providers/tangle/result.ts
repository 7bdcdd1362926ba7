/**
 * A run's end read after the fact: the execution's result (its status, text, error and usage
 * receipt), or, where a deployment has no result route, what its session's state can say. Also
 * the session-state read itself, which a dispatch without an admission looks its run up by.
 * An outcome nothing states is `unknown`, never a success.
 */
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { ProviderResult } from "../provider";
import { receiptCounts } from "./counts";
import { SANDBOX_PROVENANCE } from "./frames";
import { sandboxRoutes as routes } from "./routes";
import { PromptResult, SessionStateResponse } from "./wire";
import { refine } from "./wire-errors";

/** The agent session's state (`{ data: { session } }`, or the inner object flat on older deployments). */
export async function readSessionState(client: HttpTransport, environmentId: string, sessionId: string) {
  return client.json(
    routes.sessionState(environmentId, sessionId),
    SessionStateResponse,
    { retry: true },
    "read session state",
  );
}

/** The run's result, or null while it is still running (or waits for a person). */
export async function readResult(client: HttpTransport, ref: AgentExactRunControlRef): Promise<ProviderResult | null> {
  try {
    const result = await client.json(
      routes.executionResult(ref.environmentId, ref.sessionId, ref.executionId),
      PromptResult,
      { retry: true },
      "read run result",
    );
    const status =
      result.status === "success"
        ? "completed"
        : result.status === "cancelled"
          ? "cancelled"
          : result.status === "failed"
            ? "failed"
            : null;
    if (status === null) return null; // awaiting a person: not terminal
    // The result's usage is the run's receipt, as on a terminal frame; one reporting no counter says nothing.
    const receipt = receiptCounts(result.usage, result.costUsd);
    return {
      status,
      ...(result.response !== undefined ? { text: result.response } : {}),
      ...(status === "failed"
        ? {
            error: {
              message: result.error ?? "the run failed",
              ...(result.errorCode ? { code: result.errorCode } : {}),
            },
          }
        : {}),
      ...(Object.keys(receipt).length > 0 ? { receipt, receiptProvenance: SANDBOX_PROVENANCE } : {}),
    };
  } catch (err) {
    // 409: not finished yet.
    if (err instanceof ProviderError && err.code === "conflict") return null;
    // No result route (it is this project's reading of the API): settle from the session state.
    if (err instanceof ProviderError && err.code === "not_found") return resultFromSessionState(client, ref);
    throw refine(err);
  }
}

/**
 * How the exact execution stands by its session's state, where the result route is missing:
 * still active → not settled; the session no longer runs it → it ended, but how (success,
 * failure, cancellation) only a result could say: an unknown outcome, never a success.
 */
async function resultFromSessionState(
  client: HttpTransport,
  ref: AgentExactRunControlRef,
): Promise<ProviderResult | null> {
  const state = await readSessionState(client, ref.environmentId, ref.sessionId);
  if (state.activeExecutionId === ref.executionId) return null;
  // Running, without saying what: nothing can be told yet.
  if (!state.activeExecutionId && state.state === "running") return null;
  return {
    status: "unknown",
    error: {
      message: "the sandbox no longer runs this execution, and this deployment has no result route to say how it ended",
    },
  };
}
