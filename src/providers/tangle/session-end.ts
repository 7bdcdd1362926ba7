/**
 * Ending a conversation's agent session upstream when the conversation is deleted. A session gone
 * with its sandbox leaves nothing to delete, and so does one whose sandbox expired or failed (it
 * cannot run again, and its sessions went with it); a stopped sandbox still holds the session, so
 * it is resumed once and the delete sent again.
 */
import { ProviderError } from "../errors";
import { type EnvironmentOptions, resumeSandbox, sandboxStatus } from "./environment";
import { sandboxRoutes as routes } from "./routes";
import { refine } from "./wire-errors";

/** Sandbox statuses no resume brings back (docs/sandbox-wire.md §2). */
const NOT_RESUMABLE = new Set(["expired", "failed", "deleted"]);

export async function endSession(options: EnvironmentOptions, environmentId: string, sessionId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await options.client.send(routes.deleteSession(environmentId, sessionId), { retry: true }, "delete session");
      return;
    } catch (err) {
      const refined = refine(err);
      // Gone with its sandbox: nothing is left to delete.
      if (refined instanceof ProviderError && (refined.code === "not_found" || refined.code === "environment_gone"))
        return;
      // A stopped sandbox holds the session still: resume it, then delete (once).
      if (attempt === 1 && refined instanceof ProviderError && refined.code === "environment_not_running") {
        const status = await sandboxStatus(options, environmentId);
        // Expired, failed or gone: it never runs again, and the session went with it.
        if (status === null || NOT_RESUMABLE.has(status)) return;
        await resumeSandbox(options, environmentId);
        continue;
      }
      throw refined;
    }
  }
}
