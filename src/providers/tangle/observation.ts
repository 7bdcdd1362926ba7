/**
 * The user's sandbox as the Sandbox reports it, and the account's usage (agent-provider-tangle,
 * "Environment observation"); a user's stop and delete of their sandbox.
 *
 * - Each surface is read off the sandbox object (docs/sandbox-wire.md §2): `status`, `createdAt`,
 *   `startedAt`, `lastActivityAt`, `expiresAt` [wire]; the idle policy and resources the sandbox
 *   echoes from its create [ours]. A field the answer lacks is unavailable, never zero, and never
 *   the value the gateway asked for (that is `requested`, beside it).
 * - A sandbox the Sandbox no longer has (404) reports `gone`; a read that fails leaves every
 *   surface unavailable with the failure named (nothing is carried over from an earlier read).
 * - The account's usage is [ours] (`GET /v1/account/usage`, the SDK's `client.usage()`): a
 *   deployment without the route, or a failed read, leaves it unavailable; a ceiling it does not
 *   state is null, never zero.
 */
import { z } from "zod";
import type { ObservedAccountUsage, ObservedEnvironment } from "../../schemas/environment";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { EnvironmentObservation, EnvironmentRecord } from "../provider";
import { sandboxRoutes as routes } from "./routes";
import { Sandbox } from "./wire";
import { refine } from "./wire-errors";

const Seconds = z.number().int().positive();
const Amount = z.number().positive();
/** The [ours] fields a sandbox may echo from its create. */
const Echoed = z.looseObject({
  idleTimeoutSeconds: Seconds.optional().catch(undefined),
  maxLifetimeSeconds: Seconds.optional().catch(undefined),
  resources: z
    .looseObject({
      cpuCores: Amount.optional().catch(undefined),
      memoryMB: Amount.optional().catch(undefined),
      diskGB: Amount.optional().catch(undefined),
    })
    .optional()
    .catch(undefined),
});

const AccountUsageAnswer = z.looseObject({
  activeSandboxes: z.number().int().nonnegative().optional().catch(undefined),
  concurrentSandboxLimit: z.number().int().positive().nullable().optional().catch(undefined),
});

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));
const unavailable = (why: string) => ({ state: "unavailable" as const, reason: why });
const time = (value: string | undefined, name: string) =>
  value !== undefined && !Number.isNaN(Date.parse(value))
    ? { state: "reported" as const, value }
    : unavailable(`the Sandbox reported no ${name}`);

/** The sandbox object read into surfaces; `null` when the Sandbox has no such sandbox (404). */
function observedOf(sandbox: Sandbox | null): ObservedEnvironment {
  if (!sandbox) {
    const gone = unavailable("the Sandbox no longer has this sandbox (404)");
    return {
      status: { state: "reported", value: "gone" },
      createdAt: gone,
      startedAt: gone,
      lastActivityAt: gone,
      expiresAt: gone,
      idlePolicy: gone,
      resources: gone,
    };
  }
  const echoed = Echoed.parse(sandbox);
  const policyReported = echoed.idleTimeoutSeconds !== undefined || echoed.maxLifetimeSeconds !== undefined;
  const resources = echoed.resources;
  const resourcesReported =
    resources !== undefined &&
    (resources.cpuCores !== undefined || resources.memoryMB !== undefined || resources.diskGB !== undefined);
  return {
    status: { state: "reported", value: sandbox.status },
    createdAt: time(sandbox.createdAt, "creation time"),
    startedAt: time(sandbox.startedAt, "start time"),
    lastActivityAt: time(sandbox.lastActivityAt, "last activity"),
    expiresAt: time(sandbox.expiresAt, "expiry"),
    idlePolicy: policyReported
      ? {
          state: "reported",
          value: {
            idleTimeoutSeconds: echoed.idleTimeoutSeconds ?? null,
            maxLifetimeSeconds: echoed.maxLifetimeSeconds ?? null,
          },
        }
      : unavailable("the Sandbox reported no idle timeout or lifetime for this sandbox"),
    resources: resourcesReported
      ? {
          state: "reported",
          value: {
            cpuCores: resources.cpuCores ?? null,
            memoryMB: resources.memoryMB ?? null,
            diskGB: resources.diskGB ?? null,
          },
        }
      : unavailable("the Sandbox reported no resources for this sandbox"),
  };
}

async function observeSandbox(client: HttpTransport, id: string): Promise<ObservedEnvironment> {
  try {
    return observedOf(await client.json(routes.getSandbox(id), Sandbox, { retry: true }, "read sandbox"));
  } catch (err) {
    if (err instanceof ProviderError && err.code === "not_found") return observedOf(null);
    const why = unavailable(`the sandbox could not be read: ${reason(err)}`);
    return {
      status: why,
      createdAt: why,
      startedAt: why,
      lastActivityAt: why,
      expiresAt: why,
      idlePolicy: why,
      resources: why,
    };
  }
}

async function observeAccount(client: HttpTransport): Promise<ObservedAccountUsage> {
  try {
    const usage = await client.json(routes.accountUsage(), AccountUsageAnswer, { retry: true }, "read account usage");
    if (usage.activeSandboxes === undefined && usage.concurrentSandboxLimit === undefined)
      return unavailable("the Sandbox's account usage names no figure this gateway reads");
    return {
      state: "reported",
      value: {
        activeSandboxes: usage.activeSandboxes ?? null,
        concurrentSandboxLimit: usage.concurrentSandboxLimit ?? null,
      },
    };
  } catch (err) {
    if (err instanceof ProviderError && err.code === "not_found")
      return unavailable("this Sandbox deployment serves no account usage (GET /v1/account/usage answered 404)");
    return unavailable(`the account usage could not be read: ${reason(err)}`);
  }
}

export async function observe(
  client: HttpTransport,
  environment: EnvironmentRecord | null,
): Promise<EnvironmentObservation> {
  const [observed, accountUsage] = await Promise.all([
    environment ? observeSandbox(client, environment.environmentId) : null,
    observeAccount(client),
  ]);
  return { environment: observed, accountUsage };
}

/** Stops the sandbox now; one already stopped is stopped. A sandbox that is gone fails (`environment_gone`). */
export async function stopSandbox(client: HttpTransport, id: string): Promise<void> {
  try {
    await client.json(routes.stopSandbox(id), Sandbox, { retry: true }, "stop sandbox");
  } catch (err) {
    const refined = refine(err);
    if (refined instanceof ProviderError && refined.code === "environment_gone")
      throw new ProviderError("environment_gone", "the sandbox is gone: there is nothing to stop", refined.options);
    throw refined;
  }
}

/** Deletes the sandbox; one the Sandbox no longer has (404) is deleted. */
export async function deleteSandbox(client: HttpTransport, id: string): Promise<void> {
  try {
    await client.send(routes.deleteSandbox(id), { retry: true }, "delete sandbox");
  } catch (err) {
    const refined = refine(err);
    if (refined instanceof ProviderError && (refined.code === "not_found" || refined.code === "environment_gone"))
      return;
    throw refined;
  }
}
