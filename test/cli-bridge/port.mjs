// @ts-check
/**
 * The CLI Bridge stand-in's port for one test run. vitest.config.ts calls this at load time so the
 * Workers bindings can name the stand-in's URL; the global setup starts the stand-in on the same
 * port. The port travels in `CLI_BRIDGE_STANDIN_PORT`, so a second load of the config (or a child
 * process) finds the same one.
 */
import { createServer } from "node:net";

/** @returns {Promise<number>} */
export async function standInPort() {
  const chosen = Number(process.env.CLI_BRIDGE_STANDIN_PORT);
  if (Number.isInteger(chosen) && chosen > 0) return chosen;
  const port = await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const free = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(free));
    });
  });
  process.env.CLI_BRIDGE_STANDIN_PORT = String(port);
  return port;
}
