/**
 * The agent's own TUI (docs/sandbox-wire.md §12, interactive mode): per session, an incarnation
 * started by the interactive routes (./api-interactive.ts), with its control generation (claimed
 * by compare-and-swap, fencing the socket's writes), and the program its PTY runs (./terminals.ts):
 * a header, a prompt line; a line typed and Enter starts a scripted run in the session through the
 * runner (the same execution records as `/agents/run/stream`), its text streamed onto the screen;
 * an ask shown as numbered choices, answered by typing its number (the same interaction records as
 * the answer route); `/exit` ends it with exit code 0. State is memory only, as the PTY's is.
 */
import type { Runner } from "./runner";
import type { EmulatorStore } from "./store";
import type { StreamHub } from "./streams";
import type { PtyHost, PtyProgram } from "./terminals";

export interface TuiDeps {
  store: EmulatorStore;
  runner: Runner;
  streams: StreamHub;
}

/** One incarnation of a session's TUI. */
export interface Incarnation {
  sandboxId: string;
  sessionId: string;
  incarnationId: string;
  connectionId: string;
  idempotencyKey: string;
  startedAt: number;
  generation: number;
  /** Control claims by operation id: who claimed, from which generation, and what it answered. */
  operations: Map<string, { holderId: string; expectedGeneration: number; generation: number }>;
  status: "running" | "exited";
  endedAt?: number;
  exitCode?: number;
  reason?: "exited" | "stopped" | "lost";
}

/** A choice of an ask on the screen: the answer it gives. */
interface Choice {
  label: string;
  outcome: "accepted" | "declined";
  data?: Record<string, unknown>;
}

interface AskRequest {
  id: string;
  title?: string;
  body?: string;
  answerSpec?: { fields?: Array<{ name: string; type?: string; required?: boolean; options?: string[] }> };
}

const PROMPT = "> ";
const crlf = (text: string) => text.replace(/\r?\n/g, "\r\n");

/** The numbered choices of an ask: its first select field's options (when no other field is required), then Decline. */
export function askChoices(request: AskRequest): Choice[] {
  const fields = request.answerSpec?.fields ?? [];
  const select = fields.find((f) => f.type === "select" && f.options && f.options.length > 0);
  const others = fields.filter((f) => f !== select && f.required);
  const choices: Choice[] =
    select && others.length === 0
      ? select.options!.map((o) => ({ label: o, outcome: "accepted" as const, data: { [select.name]: o } }))
      : [];
  return [...choices, { label: "Decline", outcome: "declined" }];
}

export class TuiProgram implements PtyProgram {
  readonly name = "agent";
  readonly shell = "agent --interactive";
  private host?: PtyHost;
  private line = "";
  private unwatch?: () => void;
  private ask?: { executionId: string; id: string; choices: Choice[] };
  private busy = false;
  private turns = 0;

  constructor(
    private readonly deps: TuiDeps,
    private readonly incarnation: Incarnation,
    /** The PTY ended: exited (`/exit`, with its code) or lost (no code); the incarnation records it. */
    private readonly onEnd: (reason: "exited" | "lost", code?: number) => void,
  ) {}

  generation(): number {
    return this.incarnation.generation;
  }

  start(host: PtyHost): void {
    this.host = host;
    host.write(`Agent session ${this.incarnation.sessionId} (type a prompt, /exit to quit)\r\n${PROMPT}`);
  }

  resize(): void {}

  input(text: string): void {
    const host = this.host;
    if (!host) return;
    for (const ch of text) {
      if (ch === "\r" || ch === "\n") {
        host.write("\r\n");
        const line = this.line.trim();
        this.line = "";
        if (this.enter(line)) return;
      } else if (ch === "\x7f" || ch === "\b") {
        if (this.line.length > 0) {
          this.line = [...this.line].slice(0, -1).join("");
          host.write("\b \b");
        }
      } else if (ch >= " ") {
        this.line += ch;
        host.write(ch);
      }
    }
  }

  ended(): void {
    this.unwatch?.();
    this.unwatch = undefined;
    // Ended otherwise than by `/exit` (its detach window passed, its sandbox went away): lost.
    this.onEnd("lost");
  }

  /** A line entered; true when the program exited. */
  private enter(line: string): boolean {
    const host = this.host!;
    if (line === "/exit") {
      this.onEnd("exited", 0);
      host.exit(0);
      return true;
    }
    if (this.ask) {
      this.answer(line);
      return false;
    }
    if (this.busy) {
      host.write("(the agent is working: wait for its answer)\r\n");
      return false;
    }
    if (line === "") host.write(PROMPT);
    else this.prompt(line);
    return false;
  }

  private prompt(message: string): void {
    const { store, runner, streams } = this.deps;
    const { sandboxId, sessionId } = this.incarnation;
    const host = this.host!;
    const inFlight = store.runningExecutions(sandboxId, sessionId)[0];
    if (inFlight) {
      host.write(`(session busy with ${inFlight.id})\r\n${PROMPT}`);
      return;
    }
    const sandbox = store.sandbox(sandboxId);
    const created = JSON.parse(sandbox?.body ?? "{}") as { backend?: { type?: string } };
    this.turns++;
    const exe = runner.start({
      sandboxId,
      sessionId,
      turnId: `${this.incarnation.incarnationId}-turn-${this.turns}`,
      message,
      backend: created.backend?.type ?? "opencode",
      request: { message, sessionId, via: "interactive" },
      history: store.sessionHistory(sandboxId, sessionId).map((m) => m.message),
    });
    this.busy = true;
    this.unwatch = streams.watch(exe.id, (frame) => {
      if (frame === null) return this.settled();
      this.frame(exe.id, frame.event, frame.data);
    });
  }

  /** One frame of the run on the screen: text deltas, asks, the end. */
  private frame(executionId: string, type: string, raw: string): void {
    const host = this.host!;
    let data: Record<string, unknown>;
    try {
      data = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return;
    }
    if (type === "message.part.updated") {
      const part = data.part as { type?: string } | undefined;
      if (part?.type === "text" && typeof data.delta === "string") host.write(crlf(data.delta));
    } else if (type === "interaction") {
      const request = data.request as AskRequest;
      const choices = askChoices(request);
      this.ask = { executionId, id: request.id, choices };
      const lines = [`\r\n? ${request.title ?? "The agent asks"}`, ...(request.body ? [request.body] : [])];
      lines.push(...choices.map((c, i) => `  ${i + 1}) ${c.label}`));
      host.write(`${crlf(lines.join("\n"))}\r\nanswer #: `);
    } else if (type === "interaction.cancel" && this.ask?.id === data.id) {
      this.ask = undefined;
      host.write("\r\n(the ask was withdrawn)\r\n");
    } else if (type === "error") host.write(`\r\n[error] ${String(data.message ?? "")}`);
  }

  private answer(line: string): void {
    const { store, runner } = this.deps;
    const host = this.host!;
    const ask = this.ask!;
    const n = Number(line);
    const choice = Number.isInteger(n) ? ask.choices[n - 1] : undefined;
    if (!choice) {
      host.write(`type a number from 1 to ${ask.choices.length}\r\nanswer #: `);
      return;
    }
    this.ask = undefined;
    const row = store.ask(ask.id);
    const exe = store.execution(ask.executionId);
    if (row?.status !== "outstanding" || exe?.status !== "running") {
      host.write("(that ask was already answered)\r\n");
      return;
    }
    // The same records as the answer route: the chat and the TUI agree.
    store.count("interactions.answers");
    store.count("interactions.delivered");
    runner.resolveAsk(exe, ask.id, "answered", {
      outcome: choice.outcome,
      ...(choice.data ? { data: choice.data } : {}),
    });
    runner.schedule();
    host.write(`(${choice.label})\r\n`);
  }

  /** The run ended: a new prompt. */
  private settled(): void {
    this.unwatch = undefined;
    this.busy = false;
    this.ask = undefined;
    this.host?.write(`\r\n${PROMPT}`);
  }
}

/** The sessions' TUIs: their incarnations by sandbox and session, and by connection id. */
export class Interactives {
  private readonly bySession = new Map<string, Incarnation>();

  private key(sandboxId: string, sessionId: string): string {
    return `${sandboxId}\n${sessionId}`;
  }

  get(sandboxId: string, sessionId: string): Incarnation | undefined {
    return this.bySession.get(this.key(sandboxId, sessionId));
  }

  /** The running incarnation whose PTY a connection id names. */
  byConnection(sandboxId: string, connectionId: string): Incarnation | undefined {
    for (const inc of this.bySession.values())
      if (inc.sandboxId === sandboxId && inc.connectionId === connectionId && inc.status === "running") return inc;
    return undefined;
  }

  /** A new incarnation of the session's TUI (the last one, exited, is replaced). */
  start(sandboxId: string, sessionId: string, idempotencyKey: string): Incarnation {
    const incarnationId = `inc_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
    const inc: Incarnation = {
      sandboxId,
      sessionId,
      incarnationId,
      connectionId: `tui-${incarnationId}`,
      idempotencyKey,
      startedAt: Date.now(),
      generation: 0,
      operations: new Map(),
      status: "running",
    };
    this.bySession.set(this.key(sandboxId, sessionId), inc);
    return inc;
  }

  /** The incarnation ended. */
  end(inc: Incarnation, reason: "exited" | "stopped" | "lost", exitCode?: number): void {
    if (inc.status !== "running") return;
    inc.status = "exited";
    inc.endedAt = Date.now();
    inc.reason = reason;
    if (exitCode !== undefined) inc.exitCode = exitCode;
  }

  /** Every running incarnation of a sandbox that stopped or went away is lost. */
  sandboxEnded(sandboxId: string): void {
    for (const inc of this.bySession.values()) if (inc.sandboxId === sandboxId) this.end(inc, "lost");
  }

  clear(): void {
    this.bySession.clear();
  }
}
