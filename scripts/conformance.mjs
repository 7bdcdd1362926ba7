#!/usr/bin/env node
// Runs the SSE conformance suite (test/conformance/sse.conformance.mjs, docs/sse-protocol.md)
// against the real dev server: `npm start`'s wrangler dev with the built-in emulator, on a free
// port with throwaway state. The server gets a 1 s heartbeat (so the heartbeat test is quick), a
// short event log (so a cursor can be trimmed) and a low stream rate limit (so the limit can be
// reached); the suite is told the same values. Prints node:test's TAP output and summary.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDevServer } from "./devserver.mjs";
import { reporterArgs } from "./node-tests.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const settings = { SSE_PING_INTERVAL_MS: "1000", EVENT_LOG_MAX_EVENTS: "150", RATE_LIMIT_STREAMS_PER_MINUTE: "60" };

const server = await startDevServer({ vars: settings });
let code = 1;
try {
  // No bound on the file as a whole (CI bounds the run): a hang shows as the tests that never ran.
  const file = join(root, "test", "conformance", "sse.conformance.mjs");
  const reporters = reporterArgs(file);
  const child = spawn(
    process.execPath,
    ["--test", ...(reporters.args.length > 0 ? reporters.args : ["--test-reporter=tap"]), file],
    {
      cwd: root,
      env: { ...process.env, BASE_URL: server.base, ...settings, ...reporters.env },
      stdio: "inherit",
    },
  );
  code = await new Promise((resolve) => child.on("exit", (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  if (code !== 0) console.error(`conformance failed; the server's last output:\n${server.output().slice(-3000)}`);
} finally {
  server.stop();
}
process.exit(code);
