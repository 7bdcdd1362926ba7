/**
 * The owner's sandbox: brought up, resumed or replaced, and its capability document read
 * (agent-provider-tangle, "ready-before-return create" and "Two capability documents";
 * agent-interface, idempotent create).
 *
 * - One sandbox per owner, created under an idempotency key, handed over only once it reports
 *   running with a ready filesystem; a stopped one is resumed, a gone one (404) or a
 *   failed/expired one is replaced.
 * - Whether a create made the sandbox or found it is read (the answer's status and the owner's
 *   create ledger), and only one this call created is deleted when it cannot be brought up.
 * - The capability document is read after every bring-up or resume (a sandbox may come back on
 *   another deployment), and when asked; a failed read keeps the document read before it.
 */
import { stripUndefined } from "../../lib/digest";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { CreateLedger, EnsureEnvironmentInput, EnsureEnvironmentResult, EnvironmentRecord } from "../provider";
import { type BackendDefaults, backendFor } from "./backend";
import { sandboxRoutes as routes } from "./routes";
import { Sandbox, SandboxCapabilities } from "./wire";

export interface EnvironmentOptions extends BackendDefaults {
  client: HttpTransport;
  git?: { url: string; ref?: string };
  readyTimeoutMs: number;
  readyPollMs: number;
  /** Sent at creation: the Sandbox stops a sandbox idle this long, and retires it this long after creation. */
  limits?: { idleTimeoutSeconds: number; maxLifetimeSeconds: number };
}

const TERMINAL_SANDBOX_STATUSES = new Set(["failed", "stopped", "expired", "deleted"]);
/** How many keys answering a dead sandbox another call made one create call steps past. */
const DEAD_KEYS_SKIPPED = 3;

/** Running with a ready filesystem; a readiness value this client does not know is not ready. */
function isReady(sandbox: Sandbox): boolean {
  return (
    sandbox.status === "running" &&
    (sandbox.filesystemIncarnationReadiness === undefined || sandbox.filesystemIncarnationReadiness === "ready")
  );
}

/** GET a sandbox; null when it is gone (404). */
async function getSandbox(options: EnvironmentOptions, id: string): Promise<Sandbox | null> {
  try {
    return await options.client.json(routes.getSandbox(id), Sandbox, { retry: true }, "read sandbox");
  } catch (err) {
    if (err instanceof ProviderError && err.code === "not_found") return null;
    throw err;
  }
}

/** The sandbox's status; null when it is gone (404). */
export async function sandboxStatus(options: EnvironmentOptions, id: string): Promise<string | null> {
  return (await getSandbox(options, id))?.status ?? null;
}

/** Polls until the sandbox is running with a ready filesystem; on failure deletes it only when this call created it. */
async function waitReady(options: EnvironmentOptions, id: string, createdNow: boolean): Promise<void> {
  const deadline = Date.now() + options.readyTimeoutMs;
  let reason: string;
  while (true) {
    const sandbox = await getSandbox(options, id);
    if (!sandbox) {
      reason = "it disappeared (404) while starting";
      break;
    }
    if (isReady(sandbox)) return;
    if (TERMINAL_SANDBOX_STATUSES.has(sandbox.status)) {
      const detail = typeof sandbox.error === "string" ? `: ${sandbox.error}` : "";
      reason = `it reported ${sandbox.status}${detail}`;
      break;
    }
    if (Date.now() >= deadline) {
      const readiness = sandbox.filesystemIncarnationReadiness;
      reason = `it was still ${sandbox.status}${sandbox.status === "running" ? ` with its filesystem ${readiness === "transitioning" ? "transitioning" : `reporting "${readiness}"`}` : ""} after ${options.readyTimeoutMs} ms`;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, options.readyPollMs));
  }
  if (createdNow) {
    await options.client
      .send(routes.deleteSandbox(id), { retry: true }, "delete unusable sandbox")
      .catch(() => undefined);
  }
  const left = createdNow ? "" : " (it is left in place: this call did not create it, or cannot prove it did)";
  throw new ProviderError("environment_unavailable", `the sandbox could not be brought up: ${reason}${left}`, {
    retryable: true,
  });
}

/** Resumes a stopped sandbox and waits until it is ready (it is never deleted: this call did not create it). */
export async function resumeSandbox(options: EnvironmentOptions, id: string): Promise<void> {
  await options.client.json(routes.resumeSandbox(id), Sandbox, { retry: true }, "resume sandbox");
  await waitReady(options, id, false);
}

/**
 * Reads the sandbox's capability document into the record. A failed read fails nothing else
 * (agent-provider-tangle, "Two capability documents") and is reported as a warning; it keeps the
 * document read before it, if any (a transport failure is no evidence that the deployment
 * changed), else claims nothing.
 */
async function readCapabilities(
  options: EnvironmentOptions,
  id: string,
  previous: EnvironmentRecord["capabilities"],
): Promise<Pick<EnvironmentRecord, "capabilities" | "capabilitiesCheckedAt" | "warnings">> {
  const capabilitiesCheckedAt = new Date().toISOString();
  try {
    const doc = await options.client.json(
      routes.capabilities(id),
      SandboxCapabilities,
      { retry: true },
      "read capability document",
    );
    return { capabilities: doc, capabilitiesCheckedAt, warnings: [] };
  } catch (err) {
    return {
      capabilities: previous,
      capabilitiesCheckedAt,
      warnings: [`capability document unavailable: ${err instanceof Error ? err.message : String(err)}`],
    };
  }
}

export async function ensureEnvironment(
  options: EnvironmentOptions,
  input: EnsureEnvironmentInput,
): Promise<EnsureEnvironmentResult> {
  const { known, ownerKey } = input;
  const reread = async (record: EnvironmentRecord) => ({
    ...record,
    ...(await readCapabilities(options, record.environmentId, record.capabilities)),
  });
  let generation = 1;
  if (known) {
    const sandbox = await getSandbox(options, known.environmentId);
    if (sandbox) {
      if (isReady(sandbox)) {
        // Asked to, or no document was read yet (a failed read claimed nothing): the sandbox runs, so read it.
        if (known.capabilities === null || input.rereadCapabilities)
          return { record: await reread(known), outcome: "existing" };
        return { record: known, outcome: "existing" };
      }
      // A sandbox that was stopped or not yet ready may come back on another deployment: its
      // document is read again once it is ready.
      if (sandbox.status === "stopped") {
        await resumeSandbox(options, known.environmentId);
        return { record: await reread({ ...known, readyAt: new Date().toISOString() }), outcome: "resumed" };
      }
      // pending, provisioning, running-not-ready, or a status we do not know: wait for ready.
      if (!TERMINAL_SANDBOX_STATUSES.has(sandbox.status)) {
        await waitReady(options, known.environmentId, false);
        return { record: await reread(known), outcome: "existing" };
      }
      if (input.resumeOnly) throw new ProviderError("environment_gone", `the sandbox is ${sandbox.status}`);
      // failed / expired / deleted: replace it. The old one is ours; remove what is left of it.
      await options.client
        .send(routes.deleteSandbox(known.environmentId), { retry: true }, "delete failed sandbox")
        .catch(() => undefined);
    }
    generation = known.generation + 1;
  }
  if (input.resumeOnly)
    throw new ProviderError("environment_gone", known ? "the sandbox is gone" : "there is no sandbox");

  return createEnvironment(options, ownerKey, generation, input.ledger, input.fromCheckpoint);
}

/**
 * Creates the owner's sandbox under the generation's idempotency key and brings it up. Whether
 * this call created it is read, never assumed (agent-interface, idempotent create): only a fresh
 * create (201, where a replay answers 200) under a key no earlier call sent proves it, and only
 * a sandbox this call created is deleted when it cannot be brought up. A key whose bring-up
 * failed is not used again; one that answers a dead sandbox another call made is left alone for
 * the next key.
 */
async function createEnvironment(
  options: EnvironmentOptions,
  ownerKey: string,
  first: number,
  ledger: EnsureEnvironmentInput["ledger"],
  fromCheckpoint?: EnsureEnvironmentInput["fromCheckpoint"],
): Promise<EnsureEnvironmentResult> {
  let state: CreateLedger = ledger?.state ?? { sent: 0, failed: 0 };
  const write = (next: CreateLedger) => {
    state = next;
    ledger?.write(next);
  };
  let generation = Math.max(first, state.failed + 1);
  for (let attempt = 1; ; attempt++) {
    const sentBefore = generation <= state.sent;
    // Written before the create goes out: after a crash the key is known as sent.
    if (!sentBefore) write({ ...state, sent: generation });
    const body = stripUndefined({
      name: `chat-${ownerKey.slice(0, 24)}`,
      backend: backendFor(options, undefined),
      // The deployment's named model credential: its name listed, never a value.
      secrets: options.modelCredential ? [options.modelCredential.name] : undefined,
      git: options.git,
      idleTimeoutSeconds: options.limits?.idleTimeoutSeconds,
      maxLifetimeSeconds: options.limits?.maxLifetimeSeconds,
      metadata: { createdBy: "agent-chat-gateway", owner: ownerKey, ...fromCheckpoint?.marker },
      idempotencyKey: `${ownerKey}:g${generation}`,
      // A workspace fork: the files of a checkpoint (docs/sandbox-wire.md §10).
      fromSnapshot: fromCheckpoint?.snapshotId,
      fromSandboxId: fromCheckpoint?.sourceEnvironmentId,
    });
    const { data: sandbox, status } = await options.client.answer(
      routes.createSandbox(),
      Sandbox,
      { body, retry: true },
      "create sandbox",
    );
    const createdHere = status === 201 && !sentBefore;
    if (!createdHere && TERMINAL_SANDBOX_STATUSES.has(sandbox.status) && attempt <= DEAD_KEYS_SKIPPED) {
      write({ ...state, failed: Math.max(state.failed, generation) });
      generation++;
      continue;
    }
    try {
      if (!isReady(sandbox)) await waitReady(options, sandbox.id, createdHere);
    } catch (err) {
      if (err instanceof ProviderError && err.code === "environment_unavailable")
        write({ ...state, failed: Math.max(state.failed, generation) });
      throw err;
    }
    const record: EnvironmentRecord = {
      environmentId: sandbox.id,
      generation,
      readyAt: new Date().toISOString(),
      ...(await readCapabilities(options, sandbox.id, null)),
      ...(options.limits ? { requested: { ...options.limits } } : {}),
    };
    return { record, outcome: createdHere ? "created" : "found" };
  }
}
