/**
 * The user's sandbox as the provider reports it, what the gateway did to it, and the account's
 * deletion (docs/api.md#the-sandboxs-life). Every reported value carries whether it was reported:
 * a value the provider does not report is `unavailable` with the reason, never a made-up zero or
 * a guess (seed 000, "Environment observation").
 */
import { z } from "zod";

/** A value the provider reported, or why there is none. */
function observed<T extends z.ZodType>(value: T) {
  return z.discriminatedUnion("state", [
    z.object({ state: z.literal("reported"), value }),
    z.object({ state: z.literal("unavailable"), reason: z.string() }),
  ]);
}

const IsoTime = z.string().describe("ISO 8601 time");

export const IdlePolicy = z.object({
  idleTimeoutSeconds: z.number().int().positive().nullable().describe("null: the provider reports no idle timeout"),
  maxLifetimeSeconds: z.number().int().positive().nullable().describe("null: the provider reports no maximum lifetime"),
});
export type IdlePolicy = z.infer<typeof IdlePolicy>;

const Resources = z.object({
  cpuCores: z.number().positive().nullable(),
  memoryMB: z.number().positive().nullable(),
  diskGB: z.number().positive().nullable(),
});

const AccountUsage = z.object({
  activeSandboxes: z.number().int().nonnegative().nullable().describe("null: not reported"),
  concurrentSandboxLimit: z
    .number()
    .int()
    .positive()
    .nullable()
    .describe("null: not reported, or no ceiling (never zero)"),
});

/** What the provider reports of one environment, surface by surface. */
export const ObservedEnvironment = z.object({
  status: observed(z.string()).describe(
    "the provider's status (`running`, `stopped`, `expired`, …); `gone` when the provider no longer has it",
  ),
  createdAt: observed(IsoTime),
  startedAt: observed(IsoTime),
  lastActivityAt: observed(IsoTime),
  expiresAt: observed(IsoTime),
  idlePolicy: observed(IdlePolicy),
  resources: observed(Resources),
});
export type ObservedEnvironment = z.infer<typeof ObservedEnvironment>;
type Observed<T> = { state: "reported"; value: T } | { state: "unavailable"; reason: string };
export type ObservedAccountUsage = Observed<z.infer<typeof AccountUsage>>;

export const EnvironmentAction = z.object({
  action: z
    .enum(["created", "found", "resumed", "replaced", "stopped", "deleted"])
    .describe("created/found/resumed/replaced: brought up for a turn; stopped/deleted: the user asked"),
  at: IsoTime,
  environmentId: z.string(),
  detail: z.string().optional(),
});
export type EnvironmentAction = z.infer<typeof EnvironmentAction>;

export const EnvironmentAnswer = z
  .object({
    provider: z.string(),
    observedAt: IsoTime,
    environment: z
      .object({
        environmentId: z.string(),
        generation: z.number().int().positive(),
        requested: IdlePolicy.nullable().describe(
          "the limits the gateway sent at creation; null: created before they were recorded",
        ),
        reported: ObservedEnvironment,
      })
      .nullable()
      .describe("null: the user has no environment (none yet, or it was deleted)"),
    capabilities: z
      .object({ stop: z.boolean(), delete: z.boolean() })
      .describe("what this provider lets a user do to their environment"),
    actions: z
      .array(EnvironmentAction)
      .describe("what the gateway did to the user's environment, newest first (at most 50)"),
  })
  .meta({ id: "Environment" });
export type EnvironmentAnswer = z.infer<typeof EnvironmentAnswer>;

export const EnvironmentStopAnswer = z
  .object({ stopped: z.literal(true), environmentId: z.string() })
  .meta({ id: "EnvironmentStopped" });
export const EnvironmentDeleteAnswer = z
  .object({ deleted: z.literal(true), environmentId: z.string().nullable().describe("null: there was none") })
  .meta({ id: "EnvironmentDeleted" });

/** The steps of an account's deletion, in the order they run (docs/api.md#the-sandboxs-life). */
const DELETION_STEPS = ["sealed", "webhooks", "streams", "conversations", "sandbox", "index", "done"] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

export const AccountDeletion = z
  .object({
    state: z.enum(["deleting", "deleted"]),
    step: z.enum(DELETION_STEPS).describe("the next step to run (`done` once deleted)"),
    beganAt: IsoTime,
    finishedAt: IsoTime.nullable(),
    conversationsDeleted: z.number().int().nonnegative(),
    lastError: z
      .string()
      .nullable()
      .describe("why the last attempt stopped short; the alarm or the next DELETE /v1/me resumes it"),
  })
  .meta({ id: "AccountDeletion" });
export type AccountDeletion = z.infer<typeof AccountDeletion>;

export const AccountAnswer = z
  .object({ deletion: AccountDeletion.nullable().describe("null: no deletion began") })
  .meta({ id: "Account" });
export type AccountAnswer = z.infer<typeof AccountAnswer>;
