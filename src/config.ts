/**
 * Configuration from wrangler `[vars]` and secrets, validated with Zod at the first request.
 * A bad or missing value is a 500 `config_invalid` naming the variable, never a crash later.
 */
import { z } from "zod";
import { ApiError } from "./errors";
import { workspacePath } from "./lib/workspace-path";
import { ModelEndpoint } from "./schemas/agent-settings";

const Bool = z
  .enum(["true", "false", "1", "0", "yes", "no", ""])
  .optional()
  .transform((v) => v === "true" || v === "1" || v === "yes");

const PositiveInt = (fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .optional()
    .transform((v) => (v === undefined || v === "" ? fallback : Number(v)))
    .refine((n) => n > 0, "must be greater than 0");

const NonNegativeInt = (fallback: number) =>
  z
    .string()
    .regex(/^\d+$/, "must be a whole number")
    .optional()
    .transform((v) => (v === undefined || v === "" ? fallback : Number(v)));

const OptionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === "" ? undefined : v.trim()));

/** A JSON object given as text (a wrangler var holds strings). */
const JsonObjectText = OptionalText.pipe(
  z
    .string()
    .transform((text, ctx) => {
      try {
        const value = JSON.parse(text) as unknown;
        if (typeof value === "object" && value !== null && !Array.isArray(value))
          return value as Record<string, unknown>;
      } catch {
        // reported below
      }
      ctx.addIssue({ code: "custom", message: "must be a JSON object" });
      return z.NEVER;
    })
    .optional(),
);

/** `CAPABILITIES_RECHECK_MS`'s default, also for a provider built without the configuration. */
export const DEFAULT_CAPABILITY_RECHECK_MS = 5_000;

const ConfigSchema = z
  .object({
    PROVIDER: z.enum(["tangle", "cli-bridge", "emulator"]).optional(),
    /** Local development: the emulator's binding exists only in wrangler.toml's `local` environment, never in a deploy. */
    local: z.boolean(),
    SANDBOX_BASE_URL: OptionalText.pipe(z.url().optional()),
    TANGLE_API_KEY: OptionalText,
    AGENT_BACKEND: OptionalText.transform((v) => v ?? "opencode"),
    AGENT_MODEL: OptionalText,
    AGENT_GIT_URL: OptionalText,
    AGENT_GIT_REF: OptionalText,
    /** A model credential the Sandbox holds, by name (agent-provider-tangle, named model credentials): never a value. */
    AGENT_MODEL_CREDENTIAL: OptionalText.pipe(
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, "must be the name of a secret the Sandbox holds (A-Z, 0-9, _)")
        .optional(),
    ),
    AGENT_MODEL_CREDENTIAL_BASE_URL: OptionalText.pipe(ModelEndpoint.optional()),
    AUTH_JWT_SECRET: OptionalText.pipe(z.string().min(32, "must be at least 32 characters").optional()),
    AUTH_JWKS_URL: OptionalText.pipe(z.url().optional()),
    AUTH_ISSUER: OptionalText,
    AUTH_AUDIENCE: OptionalText,
    SESSION_ID_SECRET: z
      .string({ error: "is required (a random string of 32+ characters)" })
      .min(32, "must be at least 32 characters"),
    DEV_LOGIN: Bool,
    MAX_MESSAGE_BYTES: PositiveInt(64 * 1024),
    UPSTREAM_TIMEOUT_MS: PositiveInt(30_000),
    UPSTREAM_IDLE_TIMEOUT_MS: PositiveInt(90_000),
    ADMISSION_TIMEOUT_MS: PositiveInt(15_000),
    SANDBOX_READY_TIMEOUT_MS: PositiveInt(120_000),
    SANDBOX_READY_POLL_MS: PositiveInt(2_000),
    /** Sent at creation (docs/api.md#the-sandboxs-life): the Sandbox stops a sandbox idle this long (30 minutes). */
    SANDBOX_IDLE_TIMEOUT_SECONDS: PositiveInt(30 * 60),
    /** Sent at creation: the Sandbox retires a sandbox this long after it was created (24 hours); the next turn replaces it. */
    SANDBOX_MAX_LIFETIME_SECONDS: PositiveInt(24 * 60 * 60),
    CAPABILITIES_MAX_AGE_MS: PositiveInt(5 * 60_000),
    CAPABILITIES_RECHECK_MS: PositiveInt(DEFAULT_CAPABILITY_RECHECK_MS),
    EVENT_LOG_MAX_EVENTS: PositiveInt(50_000),
    TURN_MAX_DURATION_MS: PositiveInt(60 * 60_000),
    RATE_LIMIT_TURNS_PER_MINUTE: PositiveInt(30),
    QUEUE_MAX_TURNS: PositiveInt(10),
    RATE_LIMIT_STREAMS_PER_MINUTE: PositiveInt(120),
    UPSTREAM_LOST_AFTER_MS: PositiveInt(10 * 60_000),
    SSE_PING_INTERVAL_MS: PositiveInt(15_000),
    SSE_MAX_PENDING_BYTES: PositiveInt(4 * 1024 * 1024),
    /** Live events go on direct streams while a conversation is busy, until this long without one (docs/architecture.md); 0: never. */
    SSE_DIRECT_QUIET_MS: NonNegativeInt(3000),
    /** How long a Worker instance serves the provider's catalog again (GET /v1/agents, a turn's backend check); 0: read every time. */
    AGENTS_CATALOG_TTL_MS: NonNegativeInt(60_000),
    /** The workspace's checkpoints a conversation keeps (src/session/workspace.ts); older ones are released first; 0: none taken. */
    WORKSPACE_CHECKPOINTS_MAX: NonNegativeInt(20),
    /** Branches of a conversation with a sandbox of their own (src/session/workspace.ts); later ones share its workspace. */
    WORKSPACE_FORKS_MAX: NonNegativeInt(3),
    /** The text of a turn's file diffs kept, in all (bytes); past it the files are listed without their text. */
    WORKSPACE_DIFF_MAX_BYTES: PositiveInt(65_536),
    /** The workspace's root in each sandbox: repository-relative paths are joined to it (docs/sandbox-wire.md §10). */
    SANDBOX_WORKSPACE_ROOT: OptionalText.pipe(
      z
        .string()
        .regex(/^\/[^\\]*$/, "must be an absolute POSIX path")
        .refine((p) => workspacePath(p.slice(1)).ok, "must hold no control character, .. segment or overlong segment")
        .optional(),
    ).transform((p) => (p ?? "/home/agent").replace(/(.)\/+$/, "$1")),
    /** The largest attachment taken, in bytes (POST /v1/conversations/:cid/attachments). */
    ATTACHMENT_MAX_BYTES: PositiveInt(10 * 1024 * 1024),
    /** The most bytes a workspace download streams (a file, or a directory's tar.gz); past it the stream errors. */
    WORKSPACE_DOWNLOAD_MAX_BYTES: PositiveInt(256 * 1024 * 1024),
    /** How many attachments a conversation may hold. */
    ATTACHMENTS_PER_CONVERSATION: PositiveInt(50),
    STREAM_TOKEN_TTL_SECONDS: PositiveInt(300),
    /** Terminals a user may have open (docs/api.md#terminals); 0: none offered (501 `interactiveTerminal`). */
    TERMINAL_MAX_PER_USER: NonNegativeInt(4),
    /** A terminal with no input and no output, or no viewer, this long lets go of the sandbox's socket (its viewers close 4408). */
    TERMINAL_IDLE_SECONDS: PositiveInt(900),
    CORS_ORIGINS: OptionalText,
    TOKEN_BUDGET_PER_CONVERSATION: OptionalText.pipe(
      z
        .string()
        .regex(/^\d+$/, "must be a whole number of tokens")
        .transform(Number)
        .refine((n) => n > 0, "must be greater than 0")
        .optional(),
    ),
    TOKEN_BUDGET_PER_USER: OptionalText.pipe(
      z
        .string()
        .regex(/^\d+$/, "must be a whole number of tokens")
        .transform(Number)
        .refine((n) => n > 0, "must be greater than 0")
        .optional(),
    ),
    CLI_BRIDGE_URL: OptionalText.pipe(z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional()),
    CLI_BRIDGE_TOKEN: OptionalText,
    CLI_BRIDGE_MODEL: OptionalText.pipe(
      z
        .string()
        .regex(/^[^/\s]+\/\S+$/, "must be a model route such as codex/default")
        .optional(),
    ),
    CLI_BRIDGE_EXECUTION: JsonObjectText,
    CLI_BRIDGE_CWD: OptionalText,
    CLI_BRIDGE_HEADERS_TIMEOUT_MS: PositiveInt(30_000),
    CLI_BRIDGE_BODY_TIMEOUT_MS: PositiveInt(120_000),
    // A retained bridge session holds one of the bridge's process slots until it is closed: closed
    // after this long idle (docs/cli-bridge.md#run-against-your-cli-bridge).
    CLI_BRIDGE_SESSION_IDLE_MS: PositiveInt(600_000),
    // Webhooks (docs/webhooks.md#webhooks): one attempt's timeout, the backoff's first and longest delay, and when a
    // delivery is given up.
    WEBHOOK_TIMEOUT_MS: PositiveInt(15_000),
    WEBHOOK_RETRY_BASE_MS: PositiveInt(5_000),
    WEBHOOK_RETRY_MAX_DELAY_MS: PositiveInt(6 * 60 * 60_000),
    WEBHOOK_GIVE_UP_AFTER_MS: PositiveInt(3 * 24 * 60 * 60_000),
    EMULATOR_FRAME_DELAY_MS: PositiveInt(40),
    EMULATOR_PROVISION_MS: PositiveInt(300),
  })
  .superRefine((c, ctx) => {
    if (!c.AUTH_JWT_SECRET && !c.AUTH_JWKS_URL) {
      ctx.addIssue({
        code: "custom",
        path: ["AUTH_JWT_SECRET"],
        message: "AUTH_JWT_SECRET or AUTH_JWKS_URL must be set",
      });
    }
    const provider = providerOf(c);
    if (provider === "tangle" && !c.TANGLE_API_KEY) {
      ctx.addIssue({
        code: "custom",
        path: ["TANGLE_API_KEY"],
        message: c.PROVIDER
          ? "is required when PROVIDER is tangle"
          : "is required (the Sandbox account key; or set PROVIDER to cli-bridge with CLI_BRIDGE_URL): a deployed gateway never serves the local emulator",
      });
    }
    if (provider === "emulator" && !c.local) {
      ctx.addIssue({
        code: "custom",
        path: ["PROVIDER"],
        message: "emulator runs only in local development (npm start, the tests), never in a deploy",
      });
    }
    if (provider === "cli-bridge" && !c.CLI_BRIDGE_URL) {
      ctx.addIssue({
        code: "custom",
        path: ["CLI_BRIDGE_URL"],
        message: "is required when PROVIDER is cli-bridge (the bridge's base URL)",
      });
    }
    if (c.SANDBOX_IDLE_TIMEOUT_SECONDS > c.SANDBOX_MAX_LIFETIME_SECONDS) {
      ctx.addIssue({
        code: "custom",
        path: ["SANDBOX_IDLE_TIMEOUT_SECONDS"],
        message: `must not exceed SANDBOX_MAX_LIFETIME_SECONDS (${c.SANDBOX_MAX_LIFETIME_SECONDS}): a sandbox cannot idle longer than it lives`,
      });
    }
    if (!c.AGENT_MODEL_CREDENTIAL !== !c.AGENT_MODEL_CREDENTIAL_BASE_URL) {
      ctx.addIssue({
        code: "custom",
        path: [c.AGENT_MODEL_CREDENTIAL ? "AGENT_MODEL_CREDENTIAL_BASE_URL" : "AGENT_MODEL_CREDENTIAL"],
        message:
          "AGENT_MODEL_CREDENTIAL and AGENT_MODEL_CREDENTIAL_BASE_URL go together: the secret's name and the endpoint it is sent to",
      });
    }
    if (c.DEV_LOGIN && !c.AUTH_JWT_SECRET) {
      ctx.addIssue({
        code: "custom",
        path: ["AUTH_JWT_SECRET"],
        message: "is required when DEV_LOGIN is enabled (dev tokens are HS256)",
      });
    }
  })
  .transform((c) => ({
    ...c,
    provider: providerOf(c),
    sandboxBaseUrl: c.SANDBOX_BASE_URL ?? "https://sandbox.tangle.tools",
  }));

/**
 * The provider: PROVIDER when set; else `tangle` when an account key is configured; else the
 * emulator, only in local development. A deploy with neither is refused (config_invalid).
 */
function providerOf(c: {
  PROVIDER?: "tangle" | "cli-bridge" | "emulator";
  TANGLE_API_KEY?: string;
  local: boolean;
}): "tangle" | "cli-bridge" | "emulator" {
  return c.PROVIDER ?? (c.TANGLE_API_KEY || !c.local ? "tangle" : "emulator");
}

export type Config = z.output<typeof ConfigSchema>;

const cache = new WeakMap<object, Config>();

/** Reads and validates the configuration; cached per env object. Throws ApiError 500 config_invalid. */
export function readConfig(env: Env): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = ConfigSchema.safeParse({ ...env, local: env.SANDBOX_EMULATOR !== undefined });
  if (!parsed.success) {
    const variables = [...new Set(parsed.error.issues.map((i) => String(i.path[0] ?? "config")))];
    const message = parsed.error.issues.map((i) => `${String(i.path[0] ?? "config")} ${i.message}`).join("; ");
    throw new ApiError(500, "config_invalid", `configuration is invalid: ${message}`, { variables });
  }
  cache.set(env, parsed.data);
  return parsed.data;
}
