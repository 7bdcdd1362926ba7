/**
 * The agent's own terminal UI (interactive mode; docs/sandbox-wire.md §12, all [ours] but the SDK's
 * shapes): started (or found) for a session, control claimed under compare-and-swap, stopped. Its
 * PTY is reached through ./terminals.ts under the connection id the start answers.
 */
import { z } from "zod";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { InteractiveAgent } from "../provider";
import { sandboxRoutes } from "./routes";
import { refine } from "./wire-errors";

const CAPABILITY = "interactiveAgent";

const StartedBody = z.object({ connectionId: z.string().min(1) });
const ClaimedBody = z.object({
  status: z.enum(["accepted", "replayed", "conflict"]),
  generation: z.number().int().nonnegative(),
});
// `{ data: X }` (the sidecar's envelope) or X bare.
const StatusBody = z.object({ status: z.enum(["running", "exited"]) });
const Status = z.union([z.object({ data: StatusBody }).transform((b) => b.data), StatusBody]);
const Started = z.union([z.object({ data: StartedBody }).transform((b) => b.data), StartedBody]);
const Claimed = z.union([z.object({ data: ClaimedBody }).transform((b) => b.data), ClaimedBody]);

/** A 404 naming no session: the deployment has no interactive routes. */
function interactiveError(err: unknown): unknown {
  if (!(err instanceof ProviderError)) return err;
  const wire = err.options.wireCode?.toUpperCase();
  if (err.code === "not_found" && (wire === "NOT_FOUND" || wire === undefined))
    return err.as("capability_denied", "this deployment has no interactive agent routes", {
      retryable: false,
      details: { missing: [CAPABILITY] },
    });
  return refine(err);
}

export class TangleInteractive implements InteractiveAgent {
  constructor(private readonly client: HttpTransport) {}

  async start(
    environmentId: string,
    sessionId: string,
    request: { cols: number; rows: number; idempotencyKey: string },
  ): Promise<{ connectionId: string }> {
    try {
      return await this.client.json(sandboxRoutes.interactive(environmentId, sessionId, "", "POST"), Started, {
        body: request,
      });
    } catch (err) {
      throw interactiveError(err);
    }
  }

  async claim(
    environmentId: string,
    sessionId: string,
    request: { operationId: string; holderId: string; expectedGeneration: number },
  ): Promise<{ status: "accepted" | "replayed" | "conflict"; generation: number }> {
    try {
      return await this.client.json(sandboxRoutes.interactive(environmentId, sessionId, "/control", "POST"), Claimed, {
        body: request,
        accept: [409],
      });
    } catch (err) {
      throw interactiveError(err);
    }
  }

  async status(environmentId: string, sessionId: string): Promise<{ status: "running" | "exited" } | null> {
    try {
      const answer = await this.client.json(sandboxRoutes.interactive(environmentId, sessionId, "", "GET"), Status);
      return { status: answer.status };
    } catch (err) {
      if (err instanceof ProviderError && err.options.wireCode?.toUpperCase() === "INTERACTIVE_NOT_FOUND") return null;
      throw interactiveError(err);
    }
  }

  async stop(environmentId: string, sessionId: string, generation: number): Promise<void> {
    try {
      await this.client.send(sandboxRoutes.interactive(environmentId, sessionId, "/stop", "POST"), {
        body: { generation },
      });
    } catch (err) {
      throw interactiveError(err);
    }
  }
}
