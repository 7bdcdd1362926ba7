// @ts-check
/**
 * Runs and retained sessions as a bridge keeps them: a run's frames (OpenAI format) or canonical
 * envelopes, its status and snapshot; a session's log with session-wide cursors and its view.
 * The scripted CLIs that fill them and the operations on them live in bridge.mjs.
 */
import { randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { parseScript } from "./scripts.mjs";
import { canonicalDigest, capabilitiesFor } from "./wire.mjs";

/** @typedef {import("./wire.mjs").Backend} Backend */
/** @typedef {import("./scripts.mjs").Script} Script */
/**
 * Timings, and the bridge's own environment: its process slots (`BRIDGE_HOST_MAX_CONCURRENCY`), how
 * long a spawn waits for one (`BRIDGE_HOST_ACQUIRE_DEADLINE_MS`) and a health probe
 * (`BRIDGE_HEALTH_PROBE_TIMEOUT_MS`), and its filesystem jail (`BRIDGE_JAIL_MODE`).
 * @typedef {{ keepaliveMs: number, chunkDelayMs: number, cancelDelayMs: number, replayWindowMs: number,
 *   maxConcurrency: number, acquireDeadlineMs: number, healthProbeTimeoutMs: number, jailMode: "off" | "write-jail" | "fs-jail" }} Settings
 */
/** @typedef {import("zod").infer<typeof import("./schemas.mjs").Faults>} Faults */

const ENVIRONMENT_ID = "cli-bridge";
/** The provider a retained run reports (one-shot runs report their backend). */
export const RETAINED_PROVIDER = "cli-bridge";
const MAX_RETAINED_DELTAS = 10000;
const MAX_RETAINED_BYTES = 33554432;
/** How long a run's identity outlives its end (transcript 08: endedAt + 24 h). */
const IDENTITY_RETENTION_MS = 86_400_000;
/** A running run's lifetime cap (transcript 12: startedAt + 6 h). */
const RUN_LIFETIME_MS = 21_600_000;

/**
 * A stored frame of a one-shot run. `[DONE]` is not stored: a reader writes it after the terminal.
 * @typedef {{ seq: number, kind: "metadata" }
 *   | { seq: number, kind: "chunk", chunk: { choices: unknown[], usage?: Record<string, unknown> } }
 *   | { seq: number, kind: "error", error: { message: string, type: string } }} OneShotFrame
 */

/**
 * @typedef {{ runId: string, eventId: string, sequence: number, cursor: string, receivedAt: string, event: Record<string, unknown> & { type: string } }} Envelope
 */

/**
 * @typedef {object} Interaction
 * @property {string} id
 * @property {Record<string, unknown>} request     the InteractionRequest as sent, digest included
 * @property {"pending" | "resolved" | "cancelled" | "lost"} state  lost: its run's process died in a crash
 * @property {string | undefined} responseCanonical canonical JSON of the accepted response
 * @property {(grant: string) => void} resolve
 */

export class Run {
  /**
   * @param {object} init
   * @param {string} init.id
   * @param {"one-shot" | "retained"} init.kind
   * @param {string} init.model
   * @param {Backend} init.backend
   * @param {Record<string, unknown>} init.request       the body the run was started with
   * @param {string} init.requestDigest
   * @param {string} init.provider
   * @param {string} init.sessionId
   * @param {string} init.executionId
   * @param {string} init.prompt
   * @param {Session} [init.session]
   * @param {string} [init.turnId]
   */
  constructor(init) {
    this.id = init.id;
    this.kind = init.kind;
    this.model = init.model;
    this.backend = init.backend;
    this.request = init.request;
    this.requestDigest = init.requestDigest;
    this.provider = init.provider;
    this.environmentId = ENVIRONMENT_ID;
    this.sessionId = init.sessionId;
    this.executionId = init.executionId;
    this.session = init.session;
    this.turnId = init.turnId;
    this.script = parseScript(init.prompt);
    /**
     * `unknown`: the run was in flight when the bridge process died (kill -9); after the restart it
     * is never terminal again (docs/cli-bridge-wire.md, "Restarts, shutdowns and session identity").
     * @type {"running" | "done" | "error" | "cancelled" | "unknown"}
     */
    this.status = "running";
    /** @type {number | null} */
    this.cancelRequestedAt = null;
    this.startedAt = Date.now();
    /** @type {number | null} */
    this.endedAt = null;
    /** @type {OneShotFrame[]} */
    this.frames = [];
    /** @type {Envelope[]} */
    this.envelopes = [];
    /** @type {Map<string, Interaction>} */
    this.interactions = new Map();
    /** Emits "frame" (a OneShotFrame or an Envelope), "terminal", and "lost" (its process died). */
    this.events = new EventEmitter();
    this.events.setMaxListeners(0);
    this.readers = 0;
    this.abort = new AbortController();
    /** Set by the expireReplay fault: the replay buffer is gone. */
    this.replayExpired = false;
    /** The answer text a retained run has produced so far. */
    this.answeredText = "";
    /** A retained turn's context boundary when it started: part of its 202 answer, on repeats too. @type {Record<string, unknown> | null} */
    this.boundary = null;
  }

  get terminal() {
    return this.status === "done" || this.status === "error" || this.status === "cancelled";
  }

  /** Still running in this bridge process: its CLI can produce, be cancelled and end. */
  get live() {
    return this.status === "running";
  }

  /** The last OpenAI-format id (0 for a retained run, whose events are canonical: transcript 22). */
  get lastSeq() {
    return this.frames.length;
  }

  get canonicalLastSeq() {
    return this.envelopes.length;
  }

  /** The id a run's replay route reports as its last: per-run sequence of its own format. */
  get streamLastId() {
    return this.kind === "retained" ? this.canonicalLastSeq : this.lastSeq;
  }

  /**
   * @param {Settings} settings
   */
  replayWindowExpired(settings) {
    return this.replayExpired || (this.endedAt !== null && Date.now() > this.endedAt + settings.replayWindowMs);
  }

  /**
   * @param {OneShotFrame extends infer F ? F extends { seq: number } ? Omit<F, "seq"> : never : never} frame
   */
  pushFrame(frame) {
    const stored = /** @type {OneShotFrame} */ ({ seq: this.frames.length + 1, ...frame });
    this.frames.push(stored);
    this.events.emit("frame", stored);
  }

  /**
   * @param {"done" | "error" | "cancelled"} status
   */
  finish(status) {
    if (!this.live) return;
    this.status = status;
    this.endedAt = Date.now();
    this.abort.abort();
    this.events.emit("terminal");
  }

  /** Resolves when the run is terminal or after `ms` (at once for a run no process holds). @param {number} ms */
  waitTerminal(ms) {
    if (!this.live || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.events.off("terminal", done);
        this.events.off("lost", done);
        resolve(undefined);
      };
      const timer = setTimeout(done, ms);
      this.events.on("terminal", done);
      this.events.on("lost", done);
    });
  }

  /**
   * The run snapshot (transcript 08), field for field.
   * @param {Settings} settings
   * @param {Faults} faults
   */
  snapshot(settings, faults) {
    const expired = this.replayWindowExpired(settings);
    const unknown = faults.unknownRunStatus === "all" || (faults.unknownRunStatus === "unfinished" && !this.terminal);
    const expiresAt = this.endedAt === null ? null : this.endedAt + settings.replayWindowMs;
    const misattributed = this.terminal ? faults.misattributedSnapshots : undefined;
    return {
      id: misattributed === "run-id" ? `${this.id}-other` : this.id,
      requestDigest: misattributed === "request-digest" ? `sha256:${"0".repeat(64)}` : this.requestDigest,
      status: unknown ? "unknown" : this.status,
      state: this.terminal
        ? "terminal"
        : !this.live
          ? "detached"
          : this.cancelRequestedAt !== null
            ? "cancelling"
            : this.readers > 0
              ? "running"
              : "detached",
      terminal: this.terminal,
      attachedReaders: this.readers,
      cancelRequestedAt: this.cancelRequestedAt,
      lastSeq: this.lastSeq,
      replay: {
        firstAvailableSeq: expired ? this.lastSeq + 1 : 1,
        lastSeq: this.lastSeq,
        retainedDeltas: expired ? 0 : this.lastSeq,
        maxRetainedDeltas: MAX_RETAINED_DELTAS,
        retainedBytes: expired ? 0 : this.frames.reduce((n, f) => n + Buffer.byteLength(JSON.stringify(f)), 0),
        maxRetainedBytes: MAX_RETAINED_BYTES,
        expiresAt,
        expired,
      },
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      identityExpiresAt: this.endedAt === null ? null : this.endedAt + IDENTITY_RETENTION_MS,
      provider: this.provider,
      environmentId: this.environmentId,
      sessionId: this.sessionId,
      executionId: this.executionId,
      canonicalLastSeq: this.canonicalLastSeq,
      lifetimeExpiresAt: this.terminal ? null : this.startedAt + RUN_LIFETIME_MS,
      profileMaterialization: null,
    };
  }
}

export class Session {
  /**
   * @param {object} init
   * @param {string} init.id
   * @param {string} init.model
   * @param {Backend} init.backend
   * @param {Record<string, unknown>} init.createBody
   */
  constructor(init) {
    this.id = init.id;
    this.model = init.model;
    this.backend = init.backend;
    this.createBody = init.createBody;
    this.createDigest = canonicalDigest(init.createBody);
    /**
     * `unknown`: restored after a bridge restart with its native process gone; a turn on it is
     * 404 `unknown_session`.
     * @type {"created" | "running" | "idle" | "cancelled" | "closed" | "unknown"}
     */
    this.status = "created";
    /** @type {Run | undefined} the current or last run */
    this.run = undefined;
    /** @type {string | null} the CLI's own session id, known after the first turn starts */
    this.internalSessionId = null;
    this.turns = 0;
    this.createdAt = new Date().toISOString();
    this.updatedAt = this.createdAt;
    /** @type {Record<string, unknown> | null} */
    this.contextBoundary = null;
    /** Session-wide log: the cursor of an entry is its index + 1. @type {Envelope[]} */
    this.log = [];
    /** turn_id → run id: a turn id is bound to one run. @type {Map<string, string>} */
    this.turnRuns = new Map();
    /** Emits "envelope" (an Envelope) and "idle". */
    this.events = new EventEmitter();
    this.events.setMaxListeners(0);
    this.replayExpired = false;
    /** The per-session nonce the injected Pi extension writes into its permission-applied notices (transcript 25). */
    this.notifyNonce = randomBytes(16).toString("hex");
    this.notifies = 0;
    /**
     * The release of the executor slot its native RPC child holds: taken by its first turn, held
     * between turns, given back when the session is closed or cancelled or the bridge stops.
     * @type {(() => void) | undefined}
     */
    this.process = undefined;
    /** A turn is being admitted (waiting for a slot): another turn is refused meanwhile. */
    this.admitting = false;
  }

  get busy() {
    return this.admitting || this.run?.live;
  }

  /** Its native child exits: the slot it held is free. */
  endProcess() {
    this.process?.();
    this.process = undefined;
  }

  touch() {
    this.updatedAt = new Date().toISOString();
  }

  /**
   * The session view (transcript 20), with `run` when one is asked for (transcript 21).
   * @param {Settings} settings
   * @param {Faults} faults
   * @param {{ withRun?: boolean }} [options]
   */
  view(settings, faults, options = {}) {
    return {
      id: this.id,
      object: "session",
      create_request_digest: this.createDigest,
      backend: this.backend,
      model: this.model,
      status: this.status,
      run_id: this.run?.id ?? null,
      internal_session_id: this.internalSessionId,
      turns: this.turns,
      created_at: this.createdAt,
      updated_at: this.updatedAt,
      capabilities: capabilitiesFor(this.backend),
      profile_materialization_receipt: null,
      context_boundary: this.contextBoundary,
      ...(options.withRun && this.run ? { run: this.run.snapshot(settings, faults) } : {}),
    };
  }

  /**
   * Appends a canonical event of `run`: its per-run sequence and the session-wide cursor.
   * @param {Run} run
   * @param {Record<string, unknown> & { type: string }} event
   */
  pushEvent(run, event) {
    const sequence = run.envelopes.length + 1;
    /** @type {Envelope} */
    const envelope = {
      runId: run.id,
      eventId: `${run.id}:${sequence}`,
      sequence,
      cursor: String(this.log.length + 1),
      receivedAt: new Date().toISOString(),
      event,
    };
    run.envelopes.push(envelope);
    this.log.push(envelope);
    run.events.emit("frame", envelope);
    this.events.emit("envelope", envelope);
  }
}
