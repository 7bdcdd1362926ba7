/**
 * Ending a conversation's agent session upstream when the conversation is deleted. A session gone
 * with its sandbox leaves nothing to delete; a stopped sandbox still holds the session, so it is
 * resumed once and the delete sent again.
 */
import { ProviderError } from "../errors";
import { resumeSandbox, type EnvironmentOptions } from "./environment";
import { sandboxRoutes as routes } from "./routes";
import { refine } from "./wire-errors";

export async function endSession(options: EnvironmentOptions, environmentId: string, sessionId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await options.client.send(routes.deleteSession(environmentId, sessionId), { retry: true }, "delete session");
      return;
    } catch (err) {
      const refined = refine(err);
      // Gone with its sandbox: nothing is left to delete.
      if (refined instanceof ProviderError && (refined.code === "not_found" || refined.code === "environment_gone")) return;
      // A stopped sandbox holds the session still: resume it, then delete (once).
      if (attempt === 1 && refined instanceof ProviderError && refined.code === "environment_not_running") {
        await resumeSandbox(options, environmentId);
        continue;
      }
      throw refined;
    }
  }
}
