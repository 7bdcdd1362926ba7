/**
 * The scripted runs: starting one, advancing every running one by the clock (one frame per frame
 * delay, on the run's own schedule), pausing at an ask until it is answered or expires,
 * cancelling, and finishing. Frames are stored before they are published, so a stream opened
 * later replays exactly what a live one saw.
 *
 * A timer drives the runs while the object is awake; an alarm set just after the next due frame
 * is the backstop that picks them up again after an eviction.
 *
 * The variants that shape a run are fixed when it starts: what the agent asks (in its script
 * input) and how it ends on the wire (`terminal`: the script's terminal frames are sent, reshaped
 * or left out; the run's state records its end either way).
 *
 * A frame that changes the sandbox's files (a completed tool call's `change`) changes them as it is
 * emitted (./workspace.ts), so the files are as the frames so far say.
 */
import type { AskAnswer } from "./asks";
import { buildScript, type ScriptInput } from "./script";
import type { ScriptFrame } from "./script-frame";
import type { EmulatorStore } from "./store";
import type { ExecutionRow } from "./store-schema";
import type { StreamHub } from "./streams";
import { admissionFrame, effectiveVariants, type TerminalShape, terminalFrame } from "./variants";
import type { PromptResultView } from "./wire";
import { Workspace } from "./workspace";

const ALARM_BACKSTOP_MS = 1_000;
/**
 * About this many frames a tick, over every running execution (each due one a share, at least one
 * frame): the rest of what is due goes in the next tick, at once (a timer of 0 ms), so an unpaced
 * run of thousands of frames lets the requests and the other runs of the isolate in between (the
 * emulator shares it with the Worker).
 */
export const FRAMES_PER_TICK = 64;

/** A stored frame's data; a frame the corrupt-frame fault broke reads as empty. */
function parseStored(data: string): Record<string, unknown> {
  try {
    const value = JSON.parse(data) as unknown;
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export interface RunnerOptions {
  store: EmulatorStore;
  streams: StreamHub;
  /** The configured frame delay (ms); a `frameDelayMs` fault overrides it. */
  frameDelayMs: () => number;
  /** Arms the object's alarm (the eviction backstop). */
  setAlarm: (at: number) => void;
}

export interface StartRun {
  sandboxId: string;
  sessionId: string;
  turnId?: string;
  message: string;
  interactions?: Record<string, boolean>;
  backend: string;
  /** The model the dispatch named (`backend.model`, as `provider/model`); absent: the backend's default. */
  model?: string;
  /** What [whoami] says of the dispatch beyond its backend and model (nothing secret). */
  dispatched?: string[];
  /** The execution id the dispatch asked for; a fresh one when absent. */
  requestedExecutionId?: string;
  /** The dispatch body as received (the control route shows it). */
  request: unknown;
  /** The session's earlier user messages (its memory, forks included). */
  history?: string[];
}

export class Runner {
  private readonly store: EmulatorStore;
  private readonly streams: StreamHub;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the backstop alarm this instance armed fires (undefined: none armed, or it fired). */
  private alarmAt: number | undefined;
  /** Scripts are pure functions of their input: rebuilt on demand, cached per execution. */
  private readonly scripts = new Map<string, ScriptFrame[]>();
  private readonly workspace: Workspace;

  constructor(private readonly options: RunnerOptions) {
    this.store = options.store;
    this.streams = options.streams;
    this.workspace = new Workspace(options.store);
  }

  /** Starts a run: stores it with its admission frame and schedules its first frame. */
  start(run: StartRun): ExecutionRow {
    const faults = this.store.faults();
    const variants = effectiveVariants(this.store.variants());
    const requested = run.requestedExecutionId ?? `exec_${crypto.randomUUID()}`;
    const id = faults.admitWrongExecutionId ? `${requested}-other` : requested;
    const input: ScriptInput = {
      message: run.message,
      sessionId: run.sessionId,
      executionId: id,
      turnId: run.turnId,
      backend: run.backend,
      ...(run.model !== undefined ? { model: run.model } : {}),
      ...(run.dispatched && run.dispatched.length > 0 ? { dispatched: run.dispatched } : {}),
      environmentId: run.sandboxId,
      ...(run.history && run.history.length > 0 ? { history: run.history } : {}),
      ...(run.interactions ? { interactions: run.interactions } : {}),
      ...(faults.foreignBinding ? { foreignBinding: true } : {}),
      ...(variants.permissionScopes === "contract" ? { permissionScopes: "contract" as const } : {}),
      ...(variants.permissionAnswer === "response" ? { permissionAnswer: "response" as const } : {}),
      ...(variants.planDecision === "route" ? { planDecision: "route" as const } : {}),
      ...(variants.waitSignal === "status" ? { waitSignal: "status" as const } : {}),
      ...(variants.childTask === "subtask-part" ? { childTask: "subtask-part" as const } : {}),
    };
    const script = buildScript(input);
    this.scripts.set(id, script);
    const now = Date.now();
    const delay = faults.frameDelayMs ?? this.options.frameDelayMs();
    const exe = this.store.insertExecution({
      id,
      sandboxId: run.sandboxId,
      sessionId: run.sessionId,
      turnId: run.turnId ?? null,
      scriptInput: input,
      nextAt: now + delay * (script[0]?.delayFactor ?? 1),
      frameDelayMs: delay,
      createdAt: now,
      request: run.request,
      terminal: variants.terminal,
    });
    this.append(
      exe,
      admissionFrame(
        variants,
        { executionId: id, sessionId: run.sessionId, turnId: run.turnId, status: "running" },
        { alreadyExisted: false, dispatched: true },
      ),
    );
    this.store.count("runs.started");
    this.schedule();
    return exe;
  }

  /**
   * Emits the frames that are due, for every running execution: about FRAMES_PER_TICK in all, a
   * share of them each (at least one), so a run with thousands due does not hold back the others;
   * the rest go in the next tick, at once. Then schedules the next tick.
   */
  tick(): void {
    const now = Date.now();
    const due = this.store.dueExecutions(now);
    const share = Math.max(1, Math.floor(FRAMES_PER_TICK / due.length));
    for (const exe of due) this.advance(exe, now, share);
    this.schedule();
  }

  /** Arms the timer (and the alarm backstop) for the earliest due frame of any running execution. */
  schedule(): void {
    const next = this.store.nextDueAt();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (next === null) return;
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - Date.now()));
    // The backstop moves only when it would fire before the next frame is due or more than
    // ALARM_BACKSTOP_MS after it: not a storage write per tick (a frame every few ms).
    if (this.alarmAt === undefined || this.alarmAt < next || this.alarmAt > next + ALARM_BACKSTOP_MS) {
      this.alarmAt = next + ALARM_BACKSTOP_MS;
      this.options.setAlarm(this.alarmAt);
    }
  }

  /** The backstop alarm fired: none is armed until the next schedule. */
  alarmFired(): void {
    this.alarmAt = undefined;
  }

  /** Forgets the in-memory part (after a reset of the stored state). */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.alarmAt = undefined;
    this.scripts.clear();
  }

  /** Records an ask's end and lets its run continue according to the answer. */
  resolveAsk(exe: ExecutionRow, interactionId: string, status: "answered" | "expired", answer: AskAnswer): void {
    const answers = { ...(JSON.parse(exe.answers) as Record<string, AskAnswer>), [interactionId]: answer };
    this.store.resolveAsk(interactionId, status, answer);
    this.store.setAnswers(exe.id, answers, Date.now() + exe.frame_delay_ms);
    this.scripts.delete(exe.id);
  }

  /** Whether a run is held after the frame it last sent, waiting for a release (holds.ts). */
  held(exe: ExecutionRow): boolean {
    return (
      exe.status === "running" &&
      exe.next_at === null &&
      exe.waiting_for === null &&
      this.script(exe)[exe.step - 1]?.hold === true
    );
  }

  /** A held run goes on: its next frame at once, the rest on its schedule from there. */
  release(exe: ExecutionRow): void {
    this.store.setProgress(exe.id, exe.step, Date.now());
    this.schedule();
  }

  /**
   * Stops a running execution: a cancelled status, a receipt with the text so far, and `done`
   * (in the run's terminal shape: `done-only` leaves the receipt out, `none` both).
   */
  cancel(exe: ExecutionRow, reason: string): void {
    this.append(exe, { type: "status", data: { status: "cancelled", detail: reason } });
    const text = this.partialText(exe.id);
    this.emit(exe, {
      type: "result",
      data: { finalText: text, sessionId: exe.session_id, executionId: exe.id, status: "cancelled" },
    });
    this.emit(exe, { type: "done", data: {} });
    this.finish(exe, "cancelled", { finalText: text, error: reason });
  }

  /**
   * The sandbox stopped: its runtime is down, so the live streams of its runs close with no
   * terminal frame. Variant `stoppedRuns`: the runs end `failed` with it, or are kept (`survive`)
   * and go on; their frames are there for a reader once the sandbox runs again.
   */
  sandboxStopped(sandboxId: string): void {
    const survive = effectiveVariants(this.store.variants()).stoppedRuns === "survive";
    for (const exe of this.store.runningExecutions(sandboxId)) {
      if (survive) this.streams.closeExecution(exe.id);
      else this.finish(exe, "failed", { error: "sandbox stopped" });
    }
    this.schedule();
  }

  /** Ends a run without further frames (its sandbox or session went away, or its script ended). */
  finish(
    exe: ExecutionRow,
    status: string,
    fields: { finalText?: string; usage?: unknown; cost?: number; error?: string },
  ): void {
    this.store.finishExecution(exe.id, status, fields);
    this.streams.closeExecution(exe.id);
    this.scripts.delete(exe.id);
  }

  /** §5 PromptResult of an execution. */
  promptResult(exe: ExecutionRow): PromptResultView {
    const status = exe.status === "completed" ? "success" : exe.status;
    return {
      success: status === "success",
      status,
      durationMs: (exe.finished_at ?? Date.now()) - exe.created_at,
      executionId: exe.id,
      ...(exe.final_text !== null ? { response: exe.final_text } : {}),
      ...(exe.error !== null ? { error: exe.error } : {}),
      ...(exe.usage !== null ? { usage: JSON.parse(exe.usage) as Record<string, unknown> } : {}),
      ...(exe.cost !== null ? { costUsd: exe.cost } : {}),
    };
  }

  // ---------------------------------------------------------------- internals

  /** Sends a frame as the run's terminal shape has it (a terminal frame may be reshaped or left out). */
  private emit(exe: ExecutionRow, frame: { type: string; data: Record<string, unknown> }): void {
    const shaped = terminalFrame(exe.terminal as TerminalShape, frame);
    if (shaped) this.append(exe, shaped);
  }

  /** Stores the next frame of an execution (applying the corrupt-frame fault) and publishes it. */
  private append(exe: ExecutionRow, frame: { type: string; data: Record<string, unknown> }): void {
    const id = this.store.lastFrameId(exe.id) + 1;
    const corrupt = this.store.faults().corruptFrames?.find((c) => c.id === id)?.kind;
    const data =
      corrupt === "not_json"
        ? "{not json"
        : corrupt === "invalid"
          ? JSON.stringify({ ...frame.data, part: { type: "text", text: "a part without an id" }, status: 42 })
          : corrupt === "oversize"
            ? JSON.stringify({ ...frame.data, padding: "x".repeat(1024 * 1024 + 10) })
            : JSON.stringify(frame.data);
    this.store.insertFrame(exe.id, id, frame.type, data);
    this.streams.publish(exe.id, { event: frame.type, id, data });
  }

  private script(exe: ExecutionRow): ScriptFrame[] {
    let script = this.scripts.get(exe.id);
    if (!script) {
      script = buildScript({
        ...(JSON.parse(exe.script_input) as ScriptInput),
        answers: JSON.parse(exe.answers) as Record<string, AskAnswer>,
      });
      this.scripts.set(exe.id, script);
    }
    return script;
  }

  /**
   * Emits the frames of one execution that are due by `now`, at most `budget` of them (with a zero
   * delay, every frame is due).
   */
  private advance(exe: ExecutionRow, now: number, budget: number): void {
    if (exe.waiting_for !== null) {
      // The ask's deadline passed with no answer: it expires and the run goes on with defaults.
      this.resolveAsk(exe, exe.waiting_for, "expired", { outcome: "timeout" });
      exe = this.store.execution(exe.id)!;
    }
    const script = this.script(exe);
    let step = exe.step;
    let nextAt: number | null = exe.next_at;
    let emitted = 0;
    while (nextAt !== null && nextAt <= now && emitted < budget) {
      const frame = script[step];
      if (!frame) {
        if (emitted > 0) this.store.setProgress(exe.id, step, nextAt);
        this.finish(exe, "completed", {});
        return;
      }
      this.emit(exe, frame);
      if (frame.change && this.workspace.apply(exe.sandbox_id, frame.change)) this.store.count("files.changed");
      emitted++;
      step++;
      if (frame.waitFor) {
        // The run waits for a person: no next frame until the ask is answered or expires.
        const ask = frame.ask ?? {
          request: (frame.data as { request: Record<string, unknown> }).request,
          via: "interaction" as const,
        };
        this.store.insertAsk(frame.waitFor, exe.id, exe.session_id, ask.request, ask.via);
        this.store.setProgress(exe.id, step, frame.timeoutMs ? now + frame.timeoutMs : null, frame.waitFor);
        return;
      }
      if (frame.hold) {
        // Held (holds.ts): no next frame until released.
        this.store.setProgress(exe.id, step, null);
        return;
      }
      const next = script[step];
      // On the run's own schedule (the frame before's due time plus the delay), not the tick's: a
      // tick that came late, the isolate busy with other work, emits the frames due by now at once
      // (FRAMES_PER_TICK a tick), as a remote upstream's stream arrives after a reader's stall; a
      // delay counted from the tick would slow the agent down with its reader.
      nextAt = next ? nextAt + exe.frame_delay_ms * (next.delayFactor ?? 1) : null;
      if (frame.type === "result") {
        this.store.setReceipt(
          exe.id,
          (frame.data.finalText as string | undefined) ?? null,
          frame.data.tokenUsage,
          (frame.data.totalCostUsd as number | undefined) ?? null,
        );
      }
      if (!next) {
        this.store.setProgress(exe.id, step, nextAt);
        const last =
          frame.type === "error"
            ? "failed"
            : frame.type === "done" || frame.type === "result"
              ? this.resultStatus(exe.id, script)
              : "completed";
        this.finish(exe, last, frame.type === "error" ? { error: String(frame.data.message) } : {});
        return;
      }
    }
    // Where the run is: once for the frames of this tick, not once each (written with them, in the same task).
    if (emitted > 0) this.store.setProgress(exe.id, step, nextAt);
  }

  /** The run's end status from its last receipt: the one sent, or the script's when none was sent (terminal shape). */
  private resultStatus(executionId: string, script: ScriptFrame[]): string {
    const results = this.store.framesOfType(executionId, "result");
    const row = results[results.length - 1];
    const receipt = row ? parseStored(row.data) : script.filter((f) => f.type === "result").at(-1)?.data;
    if (!receipt) return "completed";
    const status = (receipt as { status?: string }).status;
    return status === "success" || status === undefined ? "completed" : status === "cancelled" ? "cancelled" : "failed";
  }

  /** The text parts streamed so far, joined (a cancelled run's receipt). */
  private partialText(executionId: string): string {
    const texts = new Map<string, string>();
    for (const row of this.store.framesOfType(executionId, "message.part.updated")) {
      const part = (parseStored(row.data) as { part?: { id?: string; type?: string; text?: string } }).part;
      if (part?.type === "text" && part.id && part.text !== undefined) texts.set(part.id, part.text);
    }
    return [...texts.values()].join("\n\n");
  }
}
