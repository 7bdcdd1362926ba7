// @ts-check
/**
 * vitest global setup of the projects that deliver webhooks (`webhooks`, and `budgets` for the
 * budget stop): starts the webhook receiver (./receiver.mjs) on the port vitest.config.ts chose
 * (`WEBHOOK_RECEIVER_PORT`, so the Workers bindings can name its URL), once however many projects
 * ask for it, and stops it when the last of them ends.
 */
import { startReceiver } from "./receiver.mjs";

const KEY = Symbol.for("agent-gateway.webhook-receiver");

export default async function setup() {
  const port = Number(process.env.WEBHOOK_RECEIVER_PORT);
  if (!Number.isInteger(port) || port <= 0)
    throw new Error("WEBHOOK_RECEIVER_PORT is not set: vitest.config.ts chooses it");
  const shared =
    /** @type {Record<symbol, { receiver: ReturnType<typeof startReceiver>, users: number } | undefined>} */ (
      /** @type {unknown} */ (globalThis)
    );
  const entry = (shared[KEY] ??= { receiver: startReceiver({ port }), users: 0 });
  entry.users++;
  await entry.receiver;
  return async () => {
    entry.users--;
    if (entry.users > 0) return;
    shared[KEY] = undefined;
    await (await entry.receiver).close();
  };
}
