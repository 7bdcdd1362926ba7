// @ts-check
/**
 * vitest global setup of the `cli-bridge` project: starts the CLI Bridge stand-in on the port
 * vitest.config.ts chose (`CLI_BRIDGE_STANDIN_PORT`) with the token the Workers bindings carry,
 * and stops it when the run ends.
 */
import { startStandIn } from "./standin.mjs";

export default async function setup() {
  const port = Number(process.env.CLI_BRIDGE_STANDIN_PORT);
  if (!Number.isInteger(port) || port <= 0)
    throw new Error("CLI_BRIDGE_STANDIN_PORT is not set: vitest.config.ts chooses it");
  // The root instance serves every file's conversations, which are left open (a real bridge with
  // its default 4 process slots would be full after four retained Pi sessions): its limit is
  // raised. Instances (`/i/<name>/`) keep the real default.
  const standIn = await startStandIn({ port, token: "standin-token", root: { maxConcurrency: 1000 } });
  return () => standIn.close();
}
