/**
 * Forking an agent session (the Sandbox sessions guide: `session(id).fork({ messageId })` copies
 * the conversation up to a message into a new session that shares the sandbox's files). The route
 * and its body are [ours] (docs/sandbox-wire.md §3, §8): `messageId` names the run whose answer is
 * the last message kept, `sessionId` the new session, chosen by the caller so a repeat is the same
 * fork. A deployment without the route (404 without a session code, or 501) has no fork; a 404
 * naming the session or its message says the conversation to copy is gone (`not_found`), and a
 * stopped or gone sandbox is read as for any runtime call (wire-errors.ts).
 */
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { ForkInput } from "../provider";
import { sandboxRoutes as routes } from "./routes";
import { ForkResponse } from "./wire";
import { refine } from "./wire-errors";

/** Wire codes of a 404 that names something missing on a route that exists. */
const MISSING_THING = new Set(["SESSION_NOT_FOUND", "EXECUTION_NOT_FOUND", "MESSAGE_NOT_FOUND", "SANDBOX_NOT_FOUND"]);
/** Of those, the ones that say the conversation to copy is not there (the sandbox is: it answered). */
const SOURCE_MISSING = new Set(["SESSION_NOT_FOUND", "EXECUTION_NOT_FOUND", "MESSAGE_NOT_FOUND"]);

export async function forkSession(client: HttpTransport, input: ForkInput): Promise<{ sessionId: string }> {
  try {
    const answer = await client.json(
      routes.forkSession(input.environmentId, input.sessionId),
      ForkResponse,
      // Not retried here (a 501 is an answer, not an outage): a failed fork fails the turn, and
      // the client's retry forks again under the same new id, which upstream treats as the same fork.
      { body: { messageId: input.at.executionId, sessionId: input.newSessionId } },
      "fork session",
    );
    return { sessionId: answer.id };
  } catch (err) {
    if (err instanceof ProviderError) {
      const wire = err.options.wireCode?.toUpperCase();
      const routeMissing =
        err.status === 501 || (err.status === 404 && (wire === undefined || !MISSING_THING.has(wire)));
      if (routeMissing)
        throw err.as(
          "capability_denied",
          `this deployment cannot fork an agent session (the fork route answered ${err.status})`,
          { details: { missing: ["session.fork"] } },
        );
      if (err.status === 404 && SOURCE_MISSING.has(wire!))
        throw err.as("not_found", `the agent session to fork, or its message, is gone (${wire})`, { retryable: false });
    }
    throw refine(err);
  }
}
