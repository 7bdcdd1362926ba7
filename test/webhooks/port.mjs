// @ts-check
/**
 * Ports for the webhook tests, chosen once per run. vitest.config.ts calls this at load time so
 * the Workers bindings can name them; the global setup starts the receiver on the first. The
 * second is a port nothing listens on (a receiver that is down). Both travel in the environment
 * (`WEBHOOK_RECEIVER_PORT`, `WEBHOOK_DOWN_PORT`), so a second load of the config finds the same.
 */
import { createServer } from "node:net";

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const free = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(free));
    });
  });
}

/** @returns {Promise<{ receiver: number, down: number }>} */
export async function webhookPorts() {
  for (const name of ["WEBHOOK_RECEIVER_PORT", "WEBHOOK_DOWN_PORT"]) {
    const chosen = Number(process.env[name]);
    if (!(Number.isInteger(chosen) && chosen > 0)) process.env[name] = String(await freePort());
  }
  return { receiver: Number(process.env.WEBHOOK_RECEIVER_PORT), down: Number(process.env.WEBHOOK_DOWN_PORT) };
}
