// @ts-check
/**
 * vitest global setup of the `webhooks` project: starts the webhook receiver (./receiver.mjs) on
 * the port vitest.config.ts chose (`WEBHOOK_RECEIVER_PORT`, so the Workers bindings can name its
 * URL), and stops it when the run ends.
 */
import { startReceiver } from "./receiver.mjs";

export default async function setup() {
  const port = Number(process.env.WEBHOOK_RECEIVER_PORT);
  if (!Number.isInteger(port) || port <= 0) throw new Error("WEBHOOK_RECEIVER_PORT is not set: vitest.config.ts chooses it");
  const receiver = await startReceiver({ port });
  return () => receiver.close();
}
