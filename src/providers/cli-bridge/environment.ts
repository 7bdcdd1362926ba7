/**
 * The bridge's one environment and its capability documents, read per model route
 * (`GET /v1/capabilities?model=`, docs/cli-bridge-wire.md; claims.ts reads a document into
 * claims). The bridge is one shared environment that provisions nothing: ensuring it only makes
 * the record. What a turn may do is the route's document, cached briefly and shared by concurrent
 * reads, and read again sooner when a turn lacks a claim (`capabilityReadDue`).
 */
import { DEFAULT_CAPABILITY_RECHECK_MS } from "../../config";
import { capabilityReadDue } from "../claims";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type {
  EnsureEnvironmentInput,
  EnsureEnvironmentResult,
  EnvironmentObservation,
  EnvironmentRecord,
} from "../provider";
import { retryUnlessCapacity } from "./capacity";
import { bridgeRoutes as routes } from "./routes";
import { CapabilityDocument } from "./wire";
import { refine } from "./wire-errors";

/** The bridge names its one environment so (`X-Run-Environment-Id`). */
export const ENVIRONMENT_ID = "cli-bridge";
/**
 * A route's capability document read this recently is reused (concurrent reads share one request);
 * sooner, a turn that lacks a claim reads it again once it is `capabilityRecheckMs` old.
 */
const DISCOVERY_TTL_MS = 10_000;

type Doc = Record<string, unknown>;

export async function ensureEnvironment({ known }: EnsureEnvironmentInput): Promise<EnsureEnvironmentResult> {
  // The bridge is one shared environment that provisions nothing; what a turn may do is read per model route.
  if (known) return { record: known, outcome: "existing" };
  return {
    record: {
      environmentId: ENVIRONMENT_ID,
      generation: 1,
      capabilities: null,
      warnings: [],
      readyAt: new Date().toISOString(),
    },
    outcome: "created",
  };
}

/** The turn's model route: its own, else the deployment's default (`CLI_BRIDGE_MODEL`). */
export function modelFor(defaultModel: string | undefined, model: string | undefined): string {
  const chosen = model ?? defaultModel;
  if (!chosen)
    throw new ProviderError(
      "model_invalid",
      "no model route for this turn: send `model`, or set CLI_BRIDGE_MODEL (e.g. codex/default)",
    );
  return chosen;
}

/** The capability documents of the routes this instance has read, each with when it was read. */
export class CapabilityDocuments {
  private readonly discovery = new Map<string, { at: number; doc: Promise<Doc | null> }>();

  /** `recheckMs`: `CAPABILITIES_RECHECK_MS`, how old a route's document must be before a missing claim reads it again. */
  constructor(
    private readonly http: HttpTransport,
    private readonly recheckMs: number = DEFAULT_CAPABILITY_RECHECK_MS,
  ) {}

  /**
   * The route's capability document; null when the bridge denies discovery for it. Shared while
   * fresh; `claimMissing` reads it again sooner (`capabilityReadDue`).
   */
  read(model: string, claimMissing = false): Promise<Doc | null> {
    const known = this.discovery.get(model);
    const bounds = { maxAgeMs: DISCOVERY_TTL_MS, recheckMs: this.recheckMs };
    if (known && !capabilityReadDue(known.at, Date.now(), bounds, claimMissing)) return known.doc;
    const options = { query: { model }, retry: true, retryIf: retryUnlessCapacity };
    const doc = this.http
      .json(routes.capabilities(), CapabilityDocument, options, "read capabilities")
      .catch((err: unknown) => {
        if (err instanceof ProviderError && err.code === "capability_denied") return null;
        if (err instanceof ProviderError && err.code === "not_found")
          throw new ProviderError("model_invalid", `the CLI Bridge offers no model route ${model}`, err.options);
        throw refine(err);
      });
    this.discovery.set(model, { at: Date.now(), doc });
    doc.catch(() => this.discovery.delete(model));
    return doc;
  }
}

const NO_LIFECYCLE =
  "the CLI Bridge reports no lifecycle for its one environment, which every user shares (docs/cli-bridge-wire.md)";

/**
 * What the bridge reports of its one environment: nothing of its lifecycle, its limits, its
 * resources or an account (docs/cli-bridge-wire.md has no such route), so every surface is
 * unavailable, with the reason; nothing is derived from the local record.
 */
export function observeEnvironment(known: EnvironmentRecord | null): EnvironmentObservation {
  const none = { state: "unavailable" as const, reason: NO_LIFECYCLE };
  return {
    environment: known
      ? {
          status: none,
          createdAt: none,
          startedAt: none,
          lastActivityAt: none,
          expiresAt: none,
          idlePolicy: none,
          resources: none,
        }
      : null,
    accountUsage: { state: "unavailable", reason: "the CLI Bridge has no account to report on" },
  };
}

/** The bridge's environment is shared by every user: no user may stop or delete it. */
export function refuseEnvironmentControl(what: "stop" | "delete"): never {
  throw new ProviderError(
    "capability_denied",
    `the CLI Bridge's one environment is shared by every user: it cannot be ${what === "stop" ? "stopped" : "deleted"} by one`,
  );
}
