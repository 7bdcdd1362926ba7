import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          AUTH_JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
          AUTH_AUDIENCE: "gateway-test",
          SESSION_ID_SECRET: "test-session-secret-0123456789abcdef",
          DEV_LOGIN: "true",
          EMULATOR_FRAME_DELAY_MS: "3",
          SANDBOX_READY_POLL_MS: "10",
          EMULATOR_PROVISION_MS: "20",
          SSE_PING_INTERVAL_MS: "200",
        },
      },
    }),
  ],
  test: { include: ["test/**/*.test.ts", "src/**/*.test.ts"] },
});
