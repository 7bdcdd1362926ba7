/**
 * The user's sandbox (one per user, the Sandbox sessions guide "One sandbox per user"): brought up
 * single-flight, so two conversations starting at once never race to provision; its capability
 * document read again when it is due (docs/api.md#capabilities); observed, stopped and deleted at the
 * user's request (docs/api.md#the-sandboxs-life). The create ledger (which create keys were sent,
 * which bring-ups failed) lets a create prove it made the sandbox it got before anything deletes it.
 * Whether the account may use it at all is the caller's to check first (./account.ts).
 */
import { readConfig } from "../config";
import { Refusal } from "../errors";
import { createProvider } from "../providers";
import { capabilityReadDue } from "../providers/claims";
import { ProviderError } from "../providers/errors";
import type { CreateLedger, EnvironmentRecord } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import type { EnvironmentAction, EnvironmentAnswer } from "../schemas/environment";
import type { AccountStore } from "./account-store";
import type { UserStore } from "./store";

/** A ready environment checked this recently is used without another status probe. */
const TRUST_VERIFIED_MS = 30_000;
/** How many actions the log keeps (the oldest go first). */
const ACTIONS_KEPT = 50;

export interface EnvironmentDeps {
  env: Env;
  store: UserStore;
  /** What the gateway did to the sandbox is logged there (./account-store.ts). */
  accountStore: AccountStore;
  transaction<T>(fn: () => T): T;
}

type Provider = ReturnType<typeof createProvider>;

export class UserEnvironment {
  /**
   * The provisioning under way, whether it reads the capability document again, and whether it only
   * resumes (a workspace read's: `existing`), which a turn waits out before it brings one up itself.
   */
  private ensuring: { work: Promise<EnvironmentRecord>; rereads: boolean; resumeOnly?: true } | undefined;
  private verifiedAt = 0;

  constructor(private readonly deps: EnvironmentDeps) {}

  /** The environment as recorded (null: none yet, or deleted). */
  known(): EnvironmentRecord | null {
    return this.deps.store.environment();
  }

  /**
   * The user's ready environment. `staleEnvironmentId` says a caller found that one unusable
   * (stopped or gone): it is probed again and resumed or replaced. `claimMissing` says a caller
   * lacks a claim: the capability document is read again first where `capabilityReadDue` allows,
   * as it is once it is older than `CAPABILITIES_MAX_AGE_MS`.
   */
  async ensure(
    ownerKey: string,
    staleEnvironmentId: string | undefined,
    claimMissing: boolean,
  ): Promise<EnvironmentRecord> {
    // Twice at most: a provisioning under way that does not read the document again is waited
    // for, then this call reads it if it still must.
    for (let pass = 1; ; pass++) {
      if (this.ensuring?.resumeOnly) {
        await this.ensuring.work.catch(() => undefined);
        continue;
      }
      const known = this.known();
      const stale = staleEnvironmentId !== undefined && known?.environmentId === staleEnvironmentId;
      const rereads = known !== null && this.capabilityReadDue(known, claimMissing);
      if (known && !stale && !rereads && Date.now() - this.verifiedAt < TRUST_VERIFIED_MS) return known;
      if (this.ensuring && rereads && !this.ensuring.rereads && pass === 1) {
        await this.ensuring.work.catch(() => undefined);
        continue;
      }
      if (!this.ensuring) {
        const ensuring = { work: this.provision(ownerKey, known, rereads), rereads };
        this.ensuring = ensuring;
        ensuring.work
          .finally(() => {
            if (this.ensuring === ensuring) this.ensuring = undefined;
          })
          .catch(() => undefined);
      }
      return this.ensuring.work;
    }
  }

  /**
   * The user's environment for a read or a write of its workspace: resumed where it stopped, as a
   * turn would, but never created or replaced (refused `environment_not_found` where there is none
   * or it is gone). `staleEnvironmentId`: a caller found that one not running.
   */
  async existing(ownerKey: string, staleEnvironmentId?: string): Promise<EnvironmentRecord> {
    // A bring-up under way is waited for: what it brings up is the user's environment.
    if (this.ensuring) await this.ensuring.work.catch(() => undefined);
    const known = this.known();
    if (!known) throw new Refusal("environment_not_found", "the user has no sandbox yet: a first turn creates one");
    const stale = staleEnvironmentId !== undefined && known.environmentId === staleEnvironmentId;
    if (!stale && Date.now() - this.verifiedAt < TRUST_VERIFIED_MS) return known;
    // Single-flight with every other bring-up: a turn arriving meanwhile waits for this one.
    const ensuring = { work: this.resume(ownerKey, known), rereads: false, resumeOnly: true as const };
    this.ensuring = ensuring;
    return ensuring.work.finally(() => {
      if (this.ensuring === ensuring) this.ensuring = undefined;
    });
  }

  /** The known environment resumed where it stopped (never created or replaced). */
  private async resume(ownerKey: string, known: EnvironmentRecord): Promise<EnvironmentRecord> {
    try {
      const provider = createProvider(readConfig(this.deps.env), this.deps.env);
      const { record, outcome } = await provider.ensureEnvironment({ ownerKey, known, resumeOnly: true });
      this.deps.store.putEnvironment(record);
      this.verifiedAt = Date.now();
      if (outcome === "resumed") this.log("resumed", record.environmentId, "to read its workspace");
      return record;
    } catch (err) {
      if (err instanceof ProviderError && err.code === "environment_gone")
        throw new Refusal("environment_not_found", "the sandbox is gone: the next turn creates another");
      throw providerRefusal(err);
    }
  }

  /** Whether the record's capability document is read again before it is handed out. */
  private capabilityReadDue(known: EnvironmentRecord, claimMissing: boolean): boolean {
    // None was read yet (the read failed): it is read again at every turn, and within one turn
    // once (a missing claim asks again only where the bounds allow).
    if (known.capabilities === null && !claimMissing) return true;
    const config = readConfig(this.deps.env);
    const checkedAt = Date.parse(known.capabilitiesCheckedAt ?? known.readyAt);
    return capabilityReadDue(
      checkedAt,
      Date.now(),
      { maxAgeMs: config.CAPABILITIES_MAX_AGE_MS, recheckMs: config.CAPABILITIES_RECHECK_MS },
      claimMissing,
    );
  }

  private async provision(
    ownerKey: string,
    known: EnvironmentRecord | null,
    rereadCapabilities: boolean,
  ): Promise<EnvironmentRecord> {
    const { store } = this.deps;
    try {
      const provider = createProvider(readConfig(this.deps.env), this.deps.env);
      const ledger = { state: store.ledger(), write: (next: CreateLedger) => store.writeLedger(next) };
      const { record, outcome } = await provider.ensureEnvironment({
        ownerKey,
        known,
        ledger,
        ...(rereadCapabilities ? { rereadCapabilities } : {}),
      });
      store.putEnvironment(record);
      this.verifiedAt = Date.now();
      if (outcome !== "existing") {
        const replaced = known !== null && known.environmentId !== record.environmentId;
        this.log(
          replaced ? "replaced" : outcome,
          record.environmentId,
          replaced ? `in place of ${known.environmentId}` : undefined,
        );
      }
      if (outcome !== "existing" || record.warnings.length) {
        console.log(
          JSON.stringify({
            msg: "environment ready",
            outcome,
            environmentId: record.environmentId,
            warnings: record.warnings,
          }),
        );
      }
      return record;
    } catch (err) {
      throw providerRefusal(err);
    }
  }

  /** The user's sandbox as the provider reports it, and what the gateway did to it. */
  async view(): Promise<EnvironmentAnswer> {
    const config = readConfig(this.deps.env);
    const provider = createProvider(config, this.deps.env);
    const known = this.known();
    const observedAt = new Date().toISOString();
    const observation = await provider.observe(known);
    // The provider account's usage (its sandboxes, every user's) is the operator's to read, in the
    // log; no user is shown it (docs/api.md#the-sandboxs-life).
    console.log(
      JSON.stringify({
        msg: "provider account usage",
        provider: config.provider,
        accountUsage: observation.accountUsage,
      }),
    );
    return {
      provider: config.provider,
      observedAt,
      environment:
        known && observation.environment
          ? {
              environmentId: known.environmentId,
              generation: known.generation,
              requested: known.requested ?? null,
              reported: observation.environment,
            }
          : null,
      capabilities: { ...provider.environmentControl },
      actions: this.deps.accountStore.actions().map((r) => ({
        action: r.action,
        at: new Date(r.at).toISOString(),
        environmentId: r.environmentId,
        ...(r.detail !== null ? { detail: r.detail } : {}),
      })),
    };
  }

  /** The environment as it is once a bring-up under way has ended; refused where the provider lets no user do `what`. */
  private async settled(what: "stop" | "delete"): Promise<{ provider: Provider; known: EnvironmentRecord | null }> {
    const provider = createProvider(readConfig(this.deps.env), this.deps.env);
    if (!provider.environmentControl[what]) {
      throw new Refusal(
        "environment_control_unsupported",
        `this provider's environment is shared by every user: it cannot be ${what === "stop" ? "stopped" : "deleted"} by one`,
      );
    }
    await this.ensuring?.work.catch(() => undefined);
    return { provider, known: this.known() };
  }

  /** Stops the user's sandbox now; the next turn resumes it (its agent's memory kept). */
  async stop(): Promise<{ stopped: true; environmentId: string }> {
    const { provider, known } = await this.settled("stop");
    if (!known) throw new Refusal("environment_not_found", "there is no sandbox to stop: the next turn creates one");
    await provider.stopEnvironment(known).catch((err: unknown) => {
      if (err instanceof ProviderError && err.code === "environment_gone")
        throw new Refusal("environment_not_found", "the sandbox is gone already: the next turn creates another");
      throw providerRefusal(err);
    });
    // The next turn probes it (and resumes it) instead of trusting the last check.
    this.verifiedAt = 0;
    this.log("stopped", known.environmentId, "the user asked");
    return { stopped: true as const, environmentId: known.environmentId };
  }

  /** Deletes the user's sandbox upstream and here; the next turn creates another, its agent starting afresh. */
  async delete(): Promise<{ deleted: true; environmentId: string | null }> {
    const { provider, known } = await this.settled("delete");
    if (!known) return { deleted: true as const, environmentId: null };
    await this.forget(provider, known);
    this.log("deleted", known.environmentId, "the user asked");
    return { deleted: true as const, environmentId: known.environmentId };
  }

  /** The account deletion's step: the sandbox goes once a bring-up under way has ended. */
  async deleteForAccount(provider: Provider): Promise<void> {
    await this.ensuring?.work.catch(() => undefined);
    const known = this.known();
    if (known) await this.forget(provider, known);
  }

  /**
   * Deletes the environment upstream, then its record. Every create key sent so far is retired
   * (the ledger's `failed`), so the next create makes a new sandbox under a key never sent,
   * rather than finding the deleted one under its old key.
   */
  private async forget(provider: Provider, known: EnvironmentRecord): Promise<void> {
    if (provider.environmentControl.delete) {
      await provider.deleteEnvironment(known).catch((err: unknown) => {
        throw providerRefusal(err);
      });
    }
    this.deps.transaction(() => this.deps.store.retireEnvironment(known.generation));
    this.verifiedAt = 0;
  }

  /** Logs what the gateway did to the sandbox (the log keeps the newest ACTIONS_KEPT). */
  private log(action: EnvironmentAction["action"], environmentId: string, detail?: string): void {
    this.deps.accountStore.recordAction(
      { at: Date.now(), action, environmentId, detail: detail ?? null },
      ACTIONS_KEPT,
    );
  }
}
