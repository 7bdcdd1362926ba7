import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { buildPage } from "./scripts/build-page.mjs";
import { standInPort } from "./test/cli-bridge/port.mjs";
import { webhookPorts } from "./test/webhooks/port.mjs";

// The Workers projects serve wrangler.toml's assets directory, the chat page as built (dist/page/):
// built here first, as wrangler's [build] step builds it before dev and deploy.
await buildPage();

const bindings = {
  AUTH_JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
  AUTH_AUDIENCE: "gateway-test",
  SESSION_ID_SECRET: "test-session-secret-0123456789abcdef",
  DEV_LOGIN: "true",
  EMULATOR_FRAME_DELAY_MS: "3",
  EMULATOR_PROVISION_MS: "20",
  SANDBOX_READY_POLL_MS: "10",
  SSE_PING_INTERVAL_MS: "200",
  // Direct streams end soon after a burst, so the tests' streams switch to them and back many times.
  SSE_DIRECT_QUIET_MS: "100",
  // Tests change the emulator's catalog between reads.
  AGENTS_CATALOG_TTL_MS: "0",
  // A turn refused for a missing claim reads the capability document again once it is this old:
  // short enough for a test to see a restored flag, long enough that back-to-back refusals read it once.
  CAPABILITIES_RECHECK_MS: "2000",
};

// Every project fails a hung test, hook or teardown in seconds, naming it, instead of holding the run
// (the slowest test takes about 4.5 s here). A synchronous or microtask-only loop cannot be
// interrupted from inside the isolate: tests bound what they read (frames, pages) so a loop ends.
const timeouts = { testTimeout: 15_000, hookTimeout: 15_000, teardownTimeout: 10_000 };

// Token budgets are deployment configuration, so the budget tests run as a project of their own
// with small budgets set.
const BUDGET_TESTS = "test/budget.test.ts";
// Other deployment limits set small enough for a test to reach them.
const LIMIT_TESTS = "test/limits.test.ts";
const CAPABILITY_AGE_TESTS = "test/capability-age.test.ts";
const WORKSPACE_LIMIT_TESTS = "test/workspace-limits.test.ts";
// A deployment that offers no terminals (TERMINAL_MAX_PER_USER=0).
const TERMINALS_OFF_TESTS = "test/terminals-off.test.ts";
// The CLI Bridge tests run against the stand-in (test/cli-bridge/standin.mjs), a Node server the
// project's global setup starts on a port chosen here, so the Workers bindings can name its URL.
const CLI_BRIDGE_TESTS = "test/cli-bridge/**/*.test.ts";
const cliBridgeBindings = {
  PROVIDER: "cli-bridge",
  CLI_BRIDGE_URL: `http://127.0.0.1:${await standInPort()}`,
  CLI_BRIDGE_TOKEN: "standin-token",
};
// The webhook tests deliver to a real receiver (test/webhooks/receiver.mjs, started by the project's
// global setup on a port chosen here) with retry timings short enough for a test to see a retry,
// a give-up and a timeout.
const WEBHOOK_TESTS = "test/webhooks/**/*.test.ts";
// The budget stop's webhook runs with the budgets (test/webhooks/budget.test.ts).
const WEBHOOK_BUDGET_TESTS = "test/webhooks/budget.test.ts";
const ports = await webhookPorts();
const webhookBindings = {
  WEBHOOK_RECEIVER_URL: `http://127.0.0.1:${ports.receiver}`,
  WEBHOOK_DOWN_URL: `http://127.0.0.1:${ports.down}`,
  WEBHOOK_TIMEOUT_MS: "1500",
  WEBHOOK_RETRY_BASE_MS: "100",
  WEBHOOK_RETRY_MAX_DELAY_MS: "400",
  WEBHOOK_GIVE_UP_AFTER_MS: "4000",
};
// The chat page's pure modules (public/lib) are tested in plain Node: no Workers runtime.
const PAGE_TESTS = "test/page/**";
// The benchmarks' pure parts (bench/), in plain Node too.
const BENCH_TESTS = "test/bench/**";

export default defineConfig({
  test: {
    // Test files run side by side (most of their time is spent waiting on the emulator's clock);
    // the cli-bridge project runs after the rest, one file at a time (below).
    maxWorkers: "100%",
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: { bindings },
          }),
        ],
        test: {
          ...timeouts,
          name: "gateway",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [
            BUDGET_TESTS,
            LIMIT_TESTS,
            CAPABILITY_AGE_TESTS,
            WORKSPACE_LIMIT_TESTS,
            TERMINALS_OFF_TESTS,
            PAGE_TESTS,
            BENCH_TESTS,
            CLI_BRIDGE_TESTS,
            WEBHOOK_TESTS,
          ],
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: {
              bindings: {
                ...bindings,
                EVENT_LOG_MAX_EVENTS: "30",
                ADMISSION_TIMEOUT_MS: "300",
                UPSTREAM_IDLE_TIMEOUT_MS: "250",
                RATE_LIMIT_TURNS_PER_MINUTE: "4",
                RATE_LIMIT_STREAMS_PER_MINUTE: "6",
                CAPABILITIES_MAX_AGE_MS: "3000",
                WORKSPACE_CHECKPOINTS_MAX: "2",
                WORKSPACE_FORKS_MAX: "1",
                ATTACHMENT_MAX_BYTES: "4096",
                ATTACHMENTS_PER_CONVERSATION: "3",
                WORKSPACE_DOWNLOAD_MAX_BYTES: "2048",
                TERMINAL_IDLE_SECONDS: "1",
              },
            },
          }),
        ],
        test: { ...timeouts, name: "limits", include: [LIMIT_TESTS, CAPABILITY_AGE_TESTS, WORKSPACE_LIMIT_TESTS] },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: {
              bindings: {
                ...bindings,
                ...webhookBindings,
                TOKEN_BUDGET_PER_CONVERSATION: "2500",
                TOKEN_BUDGET_PER_USER: "4500",
              },
            },
          }),
        ],
        test: {
          ...timeouts,
          name: "budgets",
          include: [BUDGET_TESTS, WEBHOOK_BUDGET_TESTS],
          globalSetup: ["./test/webhooks/global-setup.mjs"],
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: { bindings: { ...bindings, TERMINAL_MAX_PER_USER: "0" } },
          }),
        ],
        test: { ...timeouts, name: "terminals-off", include: [TERMINALS_OFF_TESTS] },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: { bindings: { ...bindings, ...cliBridgeBindings } },
          }),
        ],
        // One file at a time, after the others: its files share the stand-in and its faults, so two at
        // once read each other's capability documents.
        test: {
          ...timeouts,
          name: "cli-bridge",
          include: [CLI_BRIDGE_TESTS],
          globalSetup: ["./test/cli-bridge/global-setup.mjs"],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml", environment: "local" },
            miniflare: { bindings: { ...bindings, ...webhookBindings } },
          }),
        ],
        test: {
          ...timeouts,
          name: "webhooks",
          include: [WEBHOOK_TESTS],
          exclude: [WEBHOOK_BUDGET_TESTS],
          globalSetup: ["./test/webhooks/global-setup.mjs"],
        },
      },
      { test: { ...timeouts, name: "page", include: [`${PAGE_TESTS}/*.test.ts`], environment: "node" } },
      { test: { ...timeouts, name: "bench", include: [`${BENCH_TESTS}/*.test.ts`], environment: "node" } },
    ],
  },
});
