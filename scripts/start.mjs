#!/usr/bin/env node
// Runs the gateway locally with `wrangler dev` (the `local` environment of wrangler.toml, which alone
// has the Sandbox emulator) against the emulator, or against the provider .dev.vars names.
// No account, no login: dev login is on (loopback only), and fixed local-only secrets are used
// unless a .dev.vars file or the environment provides real ones.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const port = process.env.PORT ?? "8787";
const args = ["dev", "--env", "local", "--ip", "127.0.0.1", "--port", port, "--var", "DEV_LOGIN:true"];

// Local-only defaults: stable across restarts so local conversations stay reachable.
const localDefaults = {
  AUTH_JWT_SECRET: "local-development-only-jwt-secret-0123456789",
  SESSION_ID_SECRET: "local-development-only-session-secret-0123456789",
};
if (!existsSync(join(root, ".dev.vars"))) {
  for (const [name, value] of Object.entries(localDefaults)) {
    args.push("--var", `${name}:${process.env[name] ?? value}`);
  }
}
if (process.env.PERSIST_TO) args.push("--persist-to", process.env.PERSIST_TO);
if (process.env.INSPECTOR_PORT) args.push("--inspector-port", process.env.INSPECTOR_PORT);
args.push(...process.argv.slice(2));

const child = spawn(join(root, "node_modules", ".bin", "wrangler"), args, {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
