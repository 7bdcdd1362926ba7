// @ts-check
/**
 * One stand-in bridge: what a real bridge process holds in memory (runs, retained sessions,
 * operations), the scripted CLIs that drive its runs, cancellation, and the test controls
 * (counters, faults, variants, settings). HTTP lives in routes.mjs, SSE readers in streams.mjs.
 */
import { randomUUID } from "node:crypto";
import { askPermission } from "./asks.mjs";
import { Executor, SATURATED_HEADERS, saturatedBody, saturatedFrameError } from "./executor.mjs";
import { RETAINED_PROVIDER, Run, Session } from "./runs.mjs";
import {
  codexUsage,
  piOneShotUsage,
  piRawUsage,
  scriptedFailure,
  servedFields,
  TOOL_COMMAND,
  TOOL_OUTPUT,
  toolCallDelta,
} from "./scripts.mjs";
import { canonicalDigest, capabilitiesFor, refuse } from "./wire.mjs";

/** @typedef {import("./wire.mjs").Backend} Backend */
/** @typedef {import("./runs.mjs").Settings} Settings */
/** @typedef {import("./runs.mjs").Faults} Faults */
/** @template T @typedef {import("./wire.mjs").Outcome<T>} Outcome */
/** @typedef {import("zod").infer<typeof import("./schemas.mjs").Variants>} Variants */

/** Where the bridge's Pi keeps its models.json on the host (a path no user should see). */
const PI_MODELS_JSON = "/home/bridge-operator/.pi/agent/models.json";

/**
 * The bridge's refusal of a Pi route its models.json does not list (its pi-inference-transport).
 * @param {string} model
 */
function unlistedModel(model) {
  const route = model.split("/").slice(1).join("/");
  return `backend pi model ${route} has no explicit entry in ${PI_MODELS_JSON}; the bridge refuses to combine dynamic model metadata with custom provider auth controls`;
}

/**
 * Sleeps `ms`; resolves false at once when `signal` aborts (the CLI was killed).
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<boolean>}
 */
function sleep(ms, signal) {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** @param {Record<string, unknown>} body */
function promptOfChat(body) {
  const messages = /** @type {Array<{ role: string, content?: unknown }>} */ (body.messages);
  const lastUser = [...messages].reverse().find((m) => m.role === "user") ?? messages[messages.length - 1];
  return textOf(lastUser?.content);
}

/** @param {unknown} content */
function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((p) =>
        p && typeof p === "object" && typeof (/** @type {{ text?: unknown }} */ (p).text) === "string"
          ? /** @type {{ text: string }} */ (p).text
          : "",
      )
      .filter(Boolean)
      .join("\n");
  }
  return "";
}

function freshCounters() {
  return {
    /** New CLI runs by model (an attach or a repeated turn starts none). @type {Record<string, number>} */
    runsStarted: {},
    /** Requests by route (`METHOD /pattern`, `401`, `404`). @type {Record<string, number>} */
    requests: {},
    attaches: 0,
    cancels: 0,
    responds: 0,
    sessionsCreated: 0,
    turns: 0,
    restarts: 0,
  };
}

/**
 * One stand-in bridge: what a real bridge process holds in memory, plus the test controls.
 */
export class Bridge {
  /** @type {Settings} */
  settings;
  /** @type {Faults} */
  faults = {};
  /** Remaining uses of the counted faults. @type {{ severStreams?: number, delayHeaders?: number, stallStreams?: number }} */
  faultUses = {};
  /** @type {Variants} */
  variants = {};
  /** @type {Map<string, Run>} */
  runs = new Map();
  /** @type {Map<string, Session>} */
  sessions = new Map();
  /** Session ids one-shot runs used, whether they were closed, and how often. @type {Map<string, { closed: boolean, closes: number }>} */
  oneShotSessions = new Map();
  /** Interaction answers by operation id. @type {Map<string, { commandDigest: string, ack: Record<string, unknown> }>} */
  respondOperations = new Map();
  /** Cancellations by operation id. @type {Map<string, { requestDigest: string, runId: string }>} */
  cancelOperations = new Map();
  counters = freshCounters();
  /** Open SSE writers (streams.mjs), closed on reset, detach and shutdown. @type {Set<{ close(): void, end(): void, drop(): void, runId?: string, sessionId?: string }>} */
  writers = new Set();
  /** Until this time (ms) the bridge process is down after a restart: every connection is reset. */
  downUntil = 0;
  /** The process slots every spawned CLI holds (executor.mjs). */
  executor = new Executor(() => this.settings.maxConcurrency);

  /**
   * @param {Settings} defaults
   */
  constructor(defaults) {
    this.defaults = { ...defaults };
    this.settings = { ...defaults };
  }

  /** Forgets every run, session, operation, counter, fault, variant and setting; closes open streams. */
  reset() {
    for (const run of this.runs.values()) run.abort.abort();
    for (const writer of [...this.writers]) writer.close();
    this.settings = { ...this.defaults };
    this.faults = {};
    this.faultUses = {};
    this.variants = {};
    this.runs = new Map();
    this.sessions = new Map();
    this.oneShotSessions = new Map();
    this.respondOperations = new Map();
    this.cancelOperations = new Map();
    this.counters = freshCounters();
    this.downUntil = 0;
    this.executor = new Executor(() => this.settings.maxConcurrency);
  }

  /**
   * Merges settings; a larger slot count lets waiting spawns start at once.
   * @param {Partial<Settings>} partial
   */
  applySettings(partial) {
    this.settings = { ...this.settings, ...partial };
    this.executor.pump();
  }

  /** Whether the bridge process is down (between a restart's stop and its start). */
  get down() {
    return Date.now() < this.downUntil;
  }

  /**
   * The bridge process stops and starts again (docs/cli-bridge-wire.md, "Restarts, shutdowns and session identity"). A graceful
   * stop cancels every run in flight by itself (nobody asked: not a caller's cancel); a crash
   * (kill -9) cancels nothing: its runs in flight are lost, `status: "unknown"` and never terminal
   * afterwards, their events kept up to the crash, and every open connection drops. Either way the
   * restarted bridge restores each retained session that ran a turn with `status: "unknown"`
   * (its native process is gone; a turn on it is 404 `unknown_session`), and one-shot session ids
   * stay owned by the legacy session API.
   * @param {{ crash?: boolean, downMs?: number, forgetOneShotRuns?: boolean }} options
   */
  restart({ crash = false, downMs = 0, forgetOneShotRuns = false }) {
    this.counters.restarts++;
    /** @type {Set<Run>} */
    const stopped = new Set();
    for (const run of this.runs.values()) {
      if (!run.live) continue;
      if (crash) this.loseRun(run);
      else {
        this.completeCancel(run, "shutdown");
        stopped.add(run);
      }
    }
    for (const writer of [...this.writers]) {
      if (crash) writer.drop();
      else writer.end();
    }
    // The shutdown cancelled its runs in memory and exited without recording their end (the
    // bridge's Run.dispose sets the status and persists nothing): back up, it reads them as runs
    // lost in a crash, `unknown` and never terminal, and their sessions as lost.
    for (const run of stopped) run.status = "unknown";
    for (const session of this.sessions.values()) {
      const lost =
        session.run !== undefined &&
        (stopped.has(session.run) || (session.status !== "closed" && session.status !== "cancelled"));
      if (lost) {
        session.status = "unknown";
        session.touch();
        session.events.emit("idle");
      }
      session.process = undefined;
    }
    // Every CLI process died with the bridge: no slot is held.
    this.executor.reset();
    if (forgetOneShotRuns) {
      for (const [id, run] of this.runs) if (run.kind === "one-shot") this.runs.delete(id);
    }
    this.downUntil = Date.now() + downMs;
  }

  /**
   * A run in flight when the process died: its CLI is gone with it, nothing more is written, and
   * no process will ever end it.
   * @param {Run} run
   */
  loseRun(run) {
    run.status = "unknown";
    run.abort.abort();
    for (const interaction of run.interactions.values())
      if (interaction.state === "pending") interaction.state = "lost";
    run.events.emit("lost");
  }

  /** @param {Faults} faults */
  setFaults(faults) {
    this.faults = faults;
    this.faultUses = {
      severStreams: faults.severStreams ? (faults.severStreams.count ?? 1) : undefined,
      stallStreams: faults.stallStreams ? (faults.stallStreams.count ?? 1) : undefined,
      delayHeaders: faults.delayHeaders?.count,
    };
    // The replay buffers of every run and session that exists now are gone.
    for (const run of this.runs.values()) run.replayExpired = faults.expireReplay === true;
    for (const session of this.sessions.values()) session.replayExpired = faults.expireReplay === true;
  }

  /**
   * Takes one use of a counted stream fault for a stream on `route`, if any applies.
   * @param {"severStreams" | "stallStreams"} name
   * @param {"chat" | "run-events" | "session-events"} route
   */
  takeStreamFault(name, route) {
    const fault = this.faults[name];
    const left = this.faultUses[name];
    if (!fault || !left || (fault.routes && !fault.routes.includes(route))) return undefined;
    this.faultUses[name] = left - 1;
    return fault;
  }

  /** The header delay for the next `/v1` answer, if the fault is set (one use taken when counted). */
  takeHeaderDelay() {
    const fault = this.faults.delayHeaders;
    if (!fault) return 0;
    if (fault.count !== undefined) {
      const left = this.faultUses.delayHeaders ?? 0;
      if (left <= 0) return 0;
      this.faultUses.delayHeaders = left - 1;
    }
    return fault.ms;
  }

  /** @param {string} route */
  countRequest(route) {
    this.counters.requests[route] = (this.counters.requests[route] ?? 0) + 1;
  }

  /** @param {Run} run */
  countRunStarted(run) {
    this.counters.runsStarted[run.model] = (this.counters.runsStarted[run.model] ?? 0) + 1;
  }

  // -------------------------------------------------------------------------------------------
  // One-shot runs

  /**
   * Starts a one-shot run, or finds the run this identity is bound to.
   * @param {Record<string, unknown>} body  the parsed body, with `run_id` resolved
   * @param {Backend} backend
   * @returns {Outcome<{ run: Run, attached: boolean }>}
   */
  startOrAttachOneShot(body, backend) {
    const runId = /** @type {string} */ (body.run_id);
    const requestDigest = canonicalDigest(body);
    const existing = this.runs.get(runId);
    if (existing) {
      if (existing.kind !== "one-shot" || existing.requestDigest !== requestDigest) {
        return refuse(
          409,
          `run ${JSON.stringify(runId)} is already bound to a different request`,
          "run_identity_conflict",
          {
            run_id: runId,
            expected_request_digest: existing.requestDigest,
            received_request_digest: requestDigest,
          },
        );
      }
      this.counters.attaches++;
      return { ok: true, run: existing, attached: true };
    }
    const explicit = typeof body.provider === "string";
    const sessionId = /** @type {string | undefined} */ (body.session_id) ?? runId;
    if (this.sessions.has(sessionId)) return identityConflict(sessionId, "retained", "legacy");
    const run = new Run({
      id: runId,
      kind: "one-shot",
      model: /** @type {string} */ (body.model),
      backend,
      request: body,
      requestDigest,
      provider: explicit ? /** @type {string} */ (body.provider) : backend,
      sessionId,
      executionId: explicit ? /** @type {string} */ (body.execution_id) : runId,
      prompt: promptOfChat(body),
    });
    if (!this.oneShotSessions.has(sessionId)) this.oneShotSessions.set(sessionId, { closed: false, closes: 0 });
    this.runs.set(runId, run);
    this.countRunStarted(run);
    run.pushFrame({ kind: "metadata" });
    void this.runOneShotScript(run);
    return { ok: true, run, attached: false };
  }

  /** @param {Run} run */
  async runOneShotScript(run) {
    const { script, backend } = run;
    const signal = run.abort.signal;
    if (backend === "pi" && this.faults.piModelUnlisted) {
      run.pushFrame({ kind: "error", error: { message: unlistedModel(run.model), type: "not_configured" } });
      run.finish("error");
      return;
    }
    // The CLI takes a process slot first (the stream answered 200 already), and holds it until the run ends.
    const slot = await this.executor.acquire(this.settings.acquireDeadlineMs, signal);
    if ("aborted" in slot) return;
    if ("saturated" in slot) {
      run.pushFrame({ kind: "error", error: saturatedFrameError(slot.saturated) });
      run.finish("error");
      return;
    }
    if (!run.live) return slot.release();
    run.events.once("terminal", slot.release);
    run.events.once("lost", slot.release);
    const gapMs = script.slowMs ?? this.settings.chunkDelayMs;
    /** @param {Record<string, unknown>} delta */
    const content = (delta) =>
      run.pushFrame({ kind: "chunk", chunk: { choices: [{ index: 0, delta, finish_reason: null }] } });

    if (script.tool) {
      if (!(await sleep(gapMs, signal))) return;
      content(toolCallDelta(backend));
    }
    for (const [index, piece] of script.pieces.entries()) {
      if (!(await sleep(gapMs, signal))) return;
      content({ content: piece });
      if (script.hang && index === 0) return; // waits for the cancel, which ends the run
    }
    if (!(await sleep(gapMs, signal))) return;
    const failure = scriptedFailure(backend, script);
    if (failure) {
      run.pushFrame({ kind: "error", error: failure });
      run.finish("error");
      return;
    }
    const finish = { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] };
    if (backend === "codex") {
      run.pushFrame({ kind: "chunk", chunk: { ...finish, usage: codexUsage(script), ...servedFields(script) } });
    } else {
      for (const [index, usage] of piOneShotUsage(script).entries())
        run.pushFrame({ kind: "chunk", chunk: { choices: [], usage, ...(index === 0 ? servedFields(script) : {}) } });
      run.pushFrame({ kind: "chunk", chunk: finish });
    }
    run.finish("done");
  }

  // -------------------------------------------------------------------------------------------
  // Retained sessions and turns

  /**
   * @param {Record<string, unknown>} body
   * @param {Backend} backend
   * @returns {Outcome<{ session: Session }>}
   */
  createSession(body, backend) {
    const id = /** @type {string | undefined} */ (body.session_id) ?? randomUUID();
    if (this.oneShotSessions.has(id)) return identityConflict(id, "legacy", "retained");
    // One session per id, created once: the same create again is refused like any other (the
    // bridge's SessionStore.createRetained throws "already exists"; its route answers 409).
    if (this.sessions.has(id))
      return refuse(409, `retained session ${JSON.stringify(id)} already exists`, "session_identity_conflict");
    const session = new Session({
      id,
      model: /** @type {string} */ (body.model),
      backend,
      createBody: { ...body, session_id: id },
    });
    this.sessions.set(id, session);
    this.counters.sessionsCreated++;
    return { ok: true, session };
  }

  /**
   * Starts a turn, or answers the run a repeated turn is bound to. A session's first turn starts its
   * native child, which needs the bridge's jail and a process slot (waited for, then refused).
   * @param {Session} session
   * @param {Record<string, unknown>} body  a valid TurnRequest
   * @returns {Promise<Outcome<{ run: Run, admitted: Record<string, unknown>, boundary: Record<string, unknown> | null }>>}
   */
  async startTurn(session, body) {
    const runId = /** @type {string} */ (body.run_id);
    const turnId = /** @type {string | undefined} */ (body.turn_id);
    const requestDigest = canonicalDigest({ session_id: session.id, model: session.model, turn: body });
    const existing = this.runs.get(runId);
    if (existing) {
      if (existing.session !== session || existing.requestDigest !== requestDigest) {
        return refuse(
          409,
          `run ${JSON.stringify(runId)} is already bound to a different request`,
          "run_identity_conflict",
          {
            run_id: runId,
            expected_request_digest: existing.requestDigest,
            received_request_digest: requestDigest,
          },
        );
      }
      return {
        ok: true,
        run: existing,
        admitted: existing.snapshot(this.settings, this.faults),
        boundary: existing.boundary,
      };
    }
    const boundTo = turnId === undefined ? undefined : session.turnRuns.get(turnId);
    if (boundTo !== undefined) {
      return refuse(
        409,
        `turn ${JSON.stringify(turnId)} is already bound to run ${JSON.stringify(boundTo)}`,
        "run_identity_conflict",
        {
          run_id: boundTo,
          turn_id: turnId,
        },
      );
    }
    if (session.status === "cancelled" || session.status === "closed") {
      return refuse(409, `retained session ${JSON.stringify(session.id)} is ${session.status}`, "invalid_state");
    }
    if (session.status === "unknown") {
      return refuse(
        404,
        `native session ${JSON.stringify(session.id)} was lost across bridge restart; its continuation is unknown`,
        "unknown_session",
      );
    }
    if (session.busy) {
      return refuse(
        409,
        `retained session ${JSON.stringify(session.id)} is running turn ${JSON.stringify(session.run?.id)}`,
        "invalid_state",
        {
          run_id: session.run?.id,
        },
      );
    }
    const interactions = /** @type {Record<string, boolean> | undefined} */ (body.interactions);
    const capabilities = capabilitiesFor(session.backend);
    const offered = "interactions" in capabilities ? capabilities.interactions.kinds : [];
    const unsupported = Object.keys(interactions ?? {}).filter((kind) => !offered.includes(kind));
    if (unsupported.length > 0) {
      return refuse(
        400,
        `interaction kinds not offered by ${session.model}: ${unsupported.join(", ")}`,
        "invalid_request_error",
        { param: "interactions" },
      );
    }

    if (!session.process) {
      const refused = await this.startProcess(session);
      if (refused) return refused;
    }

    const prompt = typeof body.message === "string" ? body.message : textOf(body.parts);
    const boundary = session.contextBoundary;
    const run = new Run({
      id: runId,
      kind: "retained",
      model: session.model,
      backend: session.backend,
      request: body,
      requestDigest,
      provider: /** @type {string | undefined} */ (body.provider) ?? RETAINED_PROVIDER,
      sessionId: session.id,
      executionId: /** @type {string | undefined} */ (body.execution_id) ?? runId,
      prompt,
      session,
      turnId,
    });
    run.boundary = boundary;
    this.runs.set(runId, run);
    if (turnId !== undefined) session.turnRuns.set(turnId, runId);
    session.internalSessionId ??= randomUUID();
    session.run = run;
    session.status = "running";
    session.touch();
    this.countRunStarted(run);
    this.counters.turns++;
    // The 202's top-level run is the snapshot at admission, before the first event (transcript 21).
    const admitted = run.snapshot(this.settings, this.faults);
    session.pushEvent(run, { type: "status", status: "started" });
    void this.runRetainedScript(run, session);
    return { ok: true, run, admitted, boundary };
  }

  /**
   * Starts a session's native child (the bridge's pi-native-start): refused without an enforced
   * fs-jail, which the bridge takes from its own BRIDGE_JAIL_MODE (never from the request), then a
   * process slot, waited for up to `acquireDeadlineMs`. Answers the refusal, if any.
   * @param {Session} session
   */
  async startProcess(session) {
    if (this.settings.jailMode !== "fs-jail") {
      return refuse(
        501,
        "backend pi requires an enforced Linux fs-jail so Bash and descendants cannot read host credentials or sibling sessions; set BRIDGE_JAIL_MODE=fs-jail and enable bubblewrap",
        "not_configured",
      );
    }
    if (this.faults.piModelUnlisted) return refuse(501, unlistedModel(session.model), "not_configured");
    session.admitting = true;
    const slot = await this.executor.acquire(this.settings.acquireDeadlineMs);
    session.admitting = false;
    if ("release" in slot) {
      session.process = slot.release;
      return undefined;
    }
    session.events.emit("idle");
    const saturated =
      "saturated" in slot
        ? slot.saturated
        : { in_flight: this.executor.inFlight, max: this.settings.maxConcurrency, queued: 0, deadline_ms: 0 };
    return { ...refuse(429, "", "executor_saturated"), body: saturatedBody(saturated), headers: SATURATED_HEADERS };
  }

  /**
   * The retained Pi script (transcripts 23, 25, 52).
   * @param {Run} run
   * @param {Session} session
   */
  async runRetainedScript(run, session) {
    const { script } = run;
    const signal = run.abort.signal;
    const stepMs = this.settings.chunkDelayMs;
    const gapMs = script.slowMs ?? stepMs;
    /** @param {Record<string, unknown> & { type: string }} event */
    const emit = (event) => session.pushEvent(run, event);
    const messageId = `${run.id}:message:0`;
    const toolsMessageId = `${run.id}:message:tools`;

    if (!(await sleep(stepMs, signal))) return;
    emit({ type: "session.updated", sessionId: session.internalSessionId, time: { updated: Date.now() } });
    if (!(await sleep(stepMs, signal))) return;
    emit({ type: "status", status: "started" });

    let useTool = script.tool;
    if (script.permission) {
      const requested = /** @type {Record<string, boolean> | undefined} */ (run.request.interactions);
      // An explicit posture without `permission: true` gets no ask: the tool is denied.
      const ask = requested === undefined || requested.permission === true;
      let grant = "deny";
      if (ask) {
        if (!(await sleep(stepMs, signal))) return;
        const answer = await askPermission(run, emit, signal);
        if (answer === undefined) return;
        grant = answer;
      }
      if (!(await sleep(stepMs, signal))) return;
      emit({
        type: "raw",
        backend: "pi",
        event: {
          type: "extension_ui_request",
          id: "notify-1",
          method: "notify",
          message: `cli-bridge.permission-applied.v1:${session.notifyNonce}-${++session.notifies}:${grant}`,
          notifyType: "info",
        },
      });
      useTool = grant !== "deny";
    }
    if (useTool) {
      const part = {
        id: `${run.id}:tool:tool-1`,
        sessionID: session.id,
        messageID: toolsMessageId,
        type: "tool",
        callID: "tool-1",
        tool: "bash",
      };
      if (!(await sleep(stepMs, signal))) return;
      emit({
        type: "message.part.updated",
        part: { ...part, state: { status: "running", input: { command: TOOL_COMMAND }, time: { start: Date.now() } } },
      });
      if (!(await sleep(stepMs, signal))) return;
      const at = Date.now();
      emit({
        type: "message.part.updated",
        part: {
          ...part,
          state: {
            status: "completed",
            input: {},
            output: { content: [{ type: "text", text: TOOL_OUTPUT }] },
            time: { start: at, end: at },
          },
        },
      });
    }

    let text = "";
    for (const [index, piece] of script.pieces.entries()) {
      if (!(await sleep(gapMs, signal))) return;
      text += piece;
      emit({
        type: "message.part.updated",
        part: { id: `${messageId}:text`, sessionID: session.id, messageID: messageId, type: "text", text },
        delta: piece,
      });
      run.answeredText = text;
      if (script.hang && index === 0) return; // waits for the cancel, which ends the run
    }
    if (!(await sleep(stepMs, signal))) return;
    const failure = scriptedFailure("pi", script);
    if (failure) {
      emit({ type: "status", status: "failed", detail: failure.message });
      this.endTurn(run, session, "error");
      return;
    }
    emit({ type: "raw", backend: "pi", ...servedFields(script), event: piRawUsage(text, script) });
    emit({ type: "model-processing", phase: "generating" });
    emit({ type: "raw", backend: "pi", event: { type: "agent_end", messages: [] } });
    emit({ type: "status", status: "completed" });
    this.endTurn(run, session, "done");
  }

  /**
   * @param {Run} run
   * @param {Session} session
   * @param {"done" | "error" | "cancelled"} status
   */
  endTurn(run, session, status) {
    if (status === "cancelled") {
      // Cancelling a retained run ends its session: its native child is stopped.
      session.status = "cancelled";
      session.endProcess();
    } else {
      session.turns++;
      if (session.status === "running") session.status = "idle";
      if (status === "done") {
        session.contextBoundary = {
          runId: run.id,
          provider: run.provider,
          environmentId: run.environmentId,
          sessionId: run.sessionId,
          executionId: run.executionId,
          requestDigest: run.requestDigest,
          boundary: { kind: "revision", revision: `pi:${session.internalSessionId}:${2 * session.turns}` },
          observedAt: new Date().toISOString(),
        };
      }
    }
    session.touch();
    run.finish(status);
    session.events.emit("idle");
  }

  // -------------------------------------------------------------------------------------------
  // Cancellation

  /**
   * Asks the run to stop. Answers whether this call is the one that requested it.
   * @param {Run} run
   */
  requestCancel(run) {
    this.counters.cancels++;
    if (!run.live || run.cancelRequestedAt !== null) return false;
    run.cancelRequestedAt = Date.now();
    run.abort.abort(); // the CLI is killed: its script stops at once
    setTimeout(() => this.completeCancel(run), this.settings.cancelDelayMs);
    return true;
  }

  /**
   * Ends a run cancelled: by the caller (transcripts 11b, 54), or by the bridge itself as it shuts
   * down (the frames of a shutdown cancel are guessed: the same shapes, another message).
   * @param {Run} run
   * @param {"caller" | "shutdown"} [by]
   */
  completeCancel(run, by = "caller") {
    if (!run.live) return;
    run.abort.abort();
    if (run.kind === "one-shot") {
      const message =
        by === "caller"
          ? `run ${run.id} was cancelled by the caller before it produced a terminal answer`
          : `run ${run.id} was cancelled because the bridge is shutting down`;
      run.pushFrame({ kind: "error", error: { message, type: "run_cancelled" } });
      run.finish("cancelled");
      return;
    }
    const session = /** @type {Session} */ (run.session);
    /** @param {Record<string, unknown> & { type: string }} event */
    const emit = (event) => session.pushEvent(run, event);
    for (const interaction of run.interactions.values()) {
      if (interaction.state !== "pending") continue;
      interaction.state = "cancelled";
      emit({
        type: "interaction.cancel",
        id: interaction.id,
        reason: by === "caller" ? "run cancelled" : "bridge shutting down",
      });
    }
    emit({
      type: "raw",
      backend: "pi",
      ...servedFields(run.script),
      event: piRawUsage(run.answeredText ?? "", run.script),
    });
    emit({ type: "raw", backend: "pi", event: { type: "agent_end", messages: [] } });
    emit({ type: "status", status: "failed", detail: "cancelled" });
    this.endTurn(run, session, "cancelled");
  }
}

/**
 * One session id, two session APIs: the id is owned by the first that used it (docs/cli-bridge-wire.md, "Restarts, shutdowns and session identity").
 * @param {string} sessionId
 * @param {"legacy" | "retained"} owner
 * @param {"legacy" | "retained"} requested
 */
function identityConflict(sessionId, owner, requested) {
  return refuse(
    409,
    `session id ${JSON.stringify(sessionId)} is already owned by the ${owner} session API and cannot be used by the ${requested} session API`,
    "session_identity_conflict",
  );
}
