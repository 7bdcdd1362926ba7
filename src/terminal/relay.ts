/**
 * One terminal, relayed (issue 41; docs/api.md#terminals): the gateway's one socket to the
 * sandbox's PTY, the log of what it said (./frame-log.ts), and every viewer's socket. An attach is
 * a success only once the sandbox's `ready` and metadata prove a live PTY (./attach-check.ts);
 * a socket the sandbox drops is reattached once under the same connection id, its retained screen
 * logged after an in-stream `ready`; a PTY that is gone, a stopped sandbox or an exit ends the
 * terminal for input. Viewers' input is bounded (./input-limit.ts); a terminal with no input and no
 * output, or no viewer, for the idle time lets go of the sandbox's socket (which is what keeps this
 * object, and its cost, alive). One open at a time, for one PTY and generation; a close or an attach
 * elsewhere moves the epoch on, and an open from before lets its socket go. Content lives in memory only.
 */
import { z } from "zod";
import { Refusal } from "../errors";
import type { SandboxTerminals, TerminalConnection, UpstreamTerminalFrame } from "../providers/provider";
import { type Geometry, proveAttach, type TerminalSpec } from "./attach";
import { checkMetadata, expiresAt, type ProvenTerminal } from "./attach-check";
import { FrameLog, type LoggedFrame, type Unsequenced } from "./frame-log";
import { INPUT_MAX_FRAME_CHARS, InputLimit } from "./input-limit";

export type { Geometry, TerminalSpec } from "./attach";

/** The seed's terminal ref as the API answers it; null where nothing proves the value. */
export interface TerminalRef {
  terminalId: string;
  kind: "shell" | "agent";
  conversationId?: string;
  name: string | null;
  shell: string | null;
  cwd: string | null;
  cols: number | null;
  rows: number | null;
  createdAt: string | null;
  lastActivityAt: string | null;
  expiresAt: string | null;
  isRunning: boolean;
  exitCode?: number;
  exitSignal?: string;
  attachCount: number;
  viewers: number;
  cursors: { earliest: number | null; latest: number | null };
}

export type CloseAnswer =
  | { status: "closed"; exitCode?: number; exitSignal?: string }
  | { status: "unknown"; message: string };

/** Close codes a viewer's socket ends with (docs/api.md#terminals). */
export const CLOSE = {
  exited: 1000,
  frameInvalid: 4400,
  idle: 4408,
  cursor: 4409,
  ended: 4410,
  tooLarge: 4413,
  rate: 4429,
  closed: 4499,
  /** The sandbox's terminal could not be reached now (a timeout, an error upstream): try again later. */
  tryAgain: 1013,
} as const;

const ViewerFrame = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("input"), data: z.string() }),
  z.strictObject({
    type: z.literal("resize"),
    cols: z.number().int().min(1).max(500),
    rows: z.number().int().min(1).max(200),
  }),
]);

/** Frames a viewer may send before its terminal is ready (a reattach under way); they are sent then, in order. */
const PENDING_MAX_FRAMES = 256;
/** The JSON around an input frame's text: `{"type":"input","data":""}` with room for escapes. */
const FRAME_OVERHEAD = 256;
const TOO_LARGE = "an input frame carries at most 64 Ki characters (65,536 UTF-16 code units)";

/** Drops within a minute the relay reattaches after; one more ends the terminal. */
const MAX_REATTACHES = 3;
const DROP_WINDOW_MS = 60_000;

export interface RelayDeps {
  terminals: SandboxTerminals;
  now: () => number;
  readyTimeoutMs: number;
  idleMs: number;
  setAlarm: (at: number) => void;
  /** The seq the first output of this incarnation gets, and a hook to reserve seqs before they are given. */
  firstSeq: () => number;
  reserveThrough: (seq: number) => void;
  /** When the PTY expires as last proven (kept by the object, for when its memory is gone); null: never proven. */
  expiry: { read: () => number | null; write: (at: number) => void };
}

export class TerminalRelay {
  private spec: TerminalSpec | null = null;
  private upstream: TerminalConnection | null = null;
  private proven: ProvenTerminal | null = null;
  private log: FrameLog | null = null;
  private exit: { exitCode?: number; exitSignal?: string } | null = null;
  /** Why the terminal takes no more input, once it does not. */
  private ended: "exited" | "lost" | "closed" | null = null;
  private lastActivity = 0;
  private attachCount = 0;
  /** When the sandbox dropped the socket lately (at most MAX_REATTACHES a minute). */
  private drops: number[] = [];
  private alarmArmed = false;
  private geometry: Geometry = { cols: 80, rows: 24 };
  /** The open under way, and which PTY and generation it opens. */
  private opening: { key: string; promise: Promise<Refusal | { restored: boolean }> } | null = null;
  /** Bumped by a close and by an attach to another PTY or generation: an open from before lets its socket go. */
  private epoch = 0;
  private readonly viewers = new Map<WebSocket, InputLimit>();
  /** Viewers accepted whose ready and replay are not sent yet: their frames wait (bounded), in order. */
  private readonly pending = new Map<WebSocket, (string | ArrayBuffer)[]>();
  /** Since when no viewer has watched (null while one does): no viewer for the idle time lets go too. */
  private unwatchedSince: number | null = null;

  constructor(private readonly deps: RelayDeps) {}

  /** Attaches (or finds attached) the sandbox's PTY: a success only once it is proven live. */
  async attach(spec: TerminalSpec, geometry: Geometry): Promise<{ status: "attached" | "reattached" } | Refusal> {
    const same = this.spec?.connectionId === spec.connectionId && this.spec?.generation === spec.generation;
    if (this.upstream && same && this.ended === null) return { status: "reattached" };
    if (!same) {
      // Another PTY, or a new control generation (which the socket carries): the old socket goes, and
      // an open of the old one under way lets its socket go too (the epoch).
      this.epoch++;
      const old = this.upstream;
      this.upstream = null;
      old?.close();
    }
    this.spec = spec;
    this.ended = null;
    this.geometry = geometry;
    this.unwatchedSince ??= this.deps.now();
    const opened = await this.open();
    if (opened instanceof Refusal) {
      // Whoever watched the old PTY has nothing left to watch.
      if (!same) this.closeViewers(CLOSE.ended, "terminal_ended");
      return opened;
    }
    return { status: opened.restored ? "reattached" : "attached" };
  }

  /** The terminal as the API answers it, its metadata read again while the PTY is held. */
  async ref(spec: TerminalSpec): Promise<TerminalRef> {
    this.spec ??= spec;
    if (this.upstream && this.proven) {
      try {
        const fresh = await this.deps.terminals.metadata(spec.environmentId, this.proven.sessionId);
        const checked = fresh && checkMetadata(this.proven, fresh);
        if (checked?.ok) this.proven = { ...checked.terminal, restored: this.proven.restored };
      } catch {
        // What the attach proved stands.
      }
    }
    const p = this.proven;
    const running = this.upstream !== null && this.ended === null && (p?.isRunning ?? false);
    return {
      terminalId: spec.terminalId,
      kind: spec.kind,
      ...(spec.conversationId ? { conversationId: spec.conversationId } : {}),
      name: p?.name ?? null,
      shell: p?.shell ?? null,
      cwd: p?.cwd ?? null,
      cols: p ? this.geometry.cols : null,
      rows: p ? this.geometry.rows : null,
      createdAt: p?.createdAt ?? null,
      lastActivityAt: p ? new Date(Math.max(Date.parse(p.lastActivityAt), this.lastActivity)).toISOString() : null,
      expiresAt: p ? new Date(expiresAt(p, this.lastActivity)).toISOString() : null,
      isRunning: running,
      ...(this.exit ?? {}),
      attachCount: this.attachCount,
      viewers: this.viewers.size,
      cursors: this.log?.cursors() ?? { earliest: null, latest: null },
    };
  }

  /** Whether the gateway holds the PTY, and when it expires (for pruning the user's terminals). */
  liveness(): { held: boolean; expiresAt: number | null } {
    return {
      held: (this.upstream !== null && this.ended === null) || this.opening !== null,
      expiresAt: this.proven ? expiresAt(this.proven, this.lastActivity) : this.deps.expiry.read(),
    };
  }

  /** Lets go of the PTY and every viewer; `closed` only when its exit was delivered (seed 000). */
  close(): CloseAnswer {
    const answer: CloseAnswer = this.exit
      ? { status: "closed", ...this.exit }
      : {
          status: "unknown",
          message:
            "no exit was delivered: the gateway let go of the terminal; the sandbox keeps it for its detach window",
        };
    this.epoch++;
    this.letGo(CLOSE.closed, "terminal_closed", "the terminal was closed");
    for (const ws of [...this.pending.keys()])
      this.refuse(ws, CLOSE.closed, "terminal_closed", "the terminal was closed");
    this.ended = "closed";
    this.spec = null;
    return answer;
  }

  /** A viewer's socket, accepted: reattached upstream if need be, sent `ready`, the replay after `since`, then live. */
  async addViewer(ws: WebSocket, spec: TerminalSpec, since: number | undefined): Promise<void> {
    this.spec ??= spec;
    this.pending.set(ws, []);
    if (!this.upstream && this.ended === null) {
      const opened = await this.open();
      if (!this.pending.has(ws)) return; // closed meanwhile (by its browser, or by a close of the terminal)
      if (opened instanceof Refusal) {
        const retry = opened.details?.retryable === true || opened.code.startsWith("upstream_");
        this.refuse(ws, retry ? CLOSE.tryAgain : CLOSE.ended, opened.code, opened.message);
        return;
      }
      // The terminal was attached before (a socket is opened only on one): a new shell means it expired.
      if (!opened.restored) this.endGone("the terminal expired: its sandbox kept no screen to reattach");
    }
    const queued = this.pending.get(ws);
    if (!queued) return;
    this.pending.delete(ws);
    const log = this.frameLog();
    this.sendTo(ws, {
      type: "ready",
      terminalId: spec.terminalId,
      status: this.ended ?? "running",
      cols: this.geometry.cols,
      rows: this.geometry.rows,
      cursors: log.cursors(),
    });
    const replay = log.after(since);
    if (!replay.ok) {
      this.sendTo(ws, { type: "error", code: replay.code, message: replay.message, details: replay.cursors });
      return closeSocket(ws, replay.code === "cursor_evicted" ? CLOSE.cursor : CLOSE.frameInvalid, replay.code);
    }
    for (const frame of replay.frames) this.sendTo(ws, frame);
    if (this.ended === "exited") return closeSocket(ws, CLOSE.exited, "exited");
    if (this.ended !== null) {
      this.sendTo(ws, { type: "error", code: "terminal_ended", message: this.endedMessage() });
      return closeSocket(ws, CLOSE.ended, "terminal_ended");
    }
    this.viewers.set(ws, new InputLimit());
    this.unwatchedSince = null;
    // What it typed while its terminal was being reattached, in order.
    for (const message of queued) this.fromViewer(ws, message);
  }

  /** One frame from a viewer: input or resize, bounded; anything else closes that viewer. */
  fromViewer(ws: WebSocket, message: string | ArrayBuffer): void {
    const queued = this.pending.get(ws);
    if (queued) {
      if (queued.length >= PENDING_MAX_FRAMES)
        this.refuse(ws, CLOSE.rate, "input_rate_exceeded", "too much input before the terminal was ready");
      else queued.push(message);
      return;
    }
    const limit = this.viewers.get(ws);
    if (!limit) {
      closeSocket(ws, CLOSE.ended, "terminal_ended");
      return;
    }
    const size = typeof message === "string" ? message.length : message.byteLength;
    // The frame's JSON around at most 64 Ki characters of input (checked exactly once parsed).
    if (size > INPUT_MAX_FRAME_CHARS + FRAME_OVERHEAD) {
      this.refuse(ws, CLOSE.tooLarge, "frame_too_large", TOO_LARGE);
      return;
    }
    if (!limit.admit(size, this.deps.now())) {
      this.refuse(ws, CLOSE.rate, "input_rate_exceeded", "input is at most 256 Ki characters and 200 frames a second");
      return;
    }
    let parsed: unknown;
    try {
      parsed = typeof message === "string" ? JSON.parse(message) : undefined;
    } catch {
      parsed = undefined;
    }
    const frame = ViewerFrame.safeParse(parsed);
    if (!frame.success) {
      this.refuse(
        ws,
        CLOSE.frameInvalid,
        "frame_invalid",
        'a frame is {"type":"input","data"} or {"type":"resize","cols","rows"}',
      );
      return;
    }
    if (frame.data.type === "input" && frame.data.data.length > INPUT_MAX_FRAME_CHARS) {
      this.refuse(ws, CLOSE.tooLarge, "frame_too_large", TOO_LARGE);
      return;
    }
    const upstream = this.upstream;
    if (!upstream || this.ended !== null) {
      this.refuse(ws, CLOSE.ended, "terminal_ended", this.endedMessage());
      return;
    }
    this.touch();
    if (frame.data.type === "input") upstream.input(frame.data.data);
    else {
      this.geometry = { cols: frame.data.cols, rows: frame.data.rows };
      upstream.resize(frame.data.cols, frame.data.rows);
      // The sandbox does not echo a resize: the relay logs it, in its place.
      this.record({ type: "resize", cols: frame.data.cols, rows: frame.data.rows });
    }
  }

  viewerGone(ws: WebSocket): void {
    this.pending.delete(ws);
    if (!this.viewers.delete(ws) || this.viewers.size > 0) return;
    this.unwatchedSince = this.deps.now();
    this.armAlarm(this.unwatchedSince + this.deps.idleMs);
  }

  /**
   * The idle check: no input and no output, or no viewer, for the idle time lets go of the sandbox's
   * socket (a shell printing to nobody is not kept in memory for ever).
   */
  alarm(): void {
    this.alarmArmed = false;
    if (!this.upstream) return;
    const due = Math.min(
      this.lastActivity + this.deps.idleMs,
      this.unwatchedSince === null ? Number.POSITIVE_INFINITY : this.unwatchedSince + this.deps.idleMs,
    );
    if (this.deps.now() < due) {
      this.armAlarm(due);
      return;
    }
    this.letGo(CLOSE.idle, "terminal_idle", "the terminal was idle: reattach to go on");
  }

  private armAlarm(at: number): void {
    if (this.alarmArmed) return;
    this.alarmArmed = true;
    this.deps.setAlarm(at);
  }

  // ------------------------------------------------------------------ upstream

  /** Opens the sandbox's PTY under the spec's connection id and generation (one at a time), proven by ready and metadata. */
  private async open(): Promise<Refusal | { restored: boolean }> {
    const spec = this.spec;
    if (!spec) return new Refusal("terminal_not_found", "no such terminal");
    const key = `${spec.connectionId}#${spec.generation ?? ""}`;
    // An open of another PTY or generation ends first (it lets its socket go: the epoch moved on).
    while (this.opening && this.opening.key !== key) await this.opening.promise.catch(() => undefined);
    if (this.opening) return this.opening.promise;
    const promise = this.openOnce(spec, this.epoch).finally(() => {
      if (this.opening?.promise === promise) this.opening = null;
    });
    this.opening = { key, promise };
    return promise;
  }

  private async openOnce(spec: TerminalSpec, epoch: number): Promise<Refusal | { restored: boolean }> {
    // A close, or an attach to another PTY, while this open awaits: its socket goes (./attach.ts).
    const attached = await proveAttach(
      this.deps.terminals,
      spec,
      this.geometry,
      this.deps.readyTimeoutMs,
      () => this.epoch !== epoch,
    );
    if (attached instanceof Refusal) return attached;
    const { connection, terminal } = attached;
    const hadFrames = (this.log?.cursors().latest ?? null) !== null;
    this.upstream = connection;
    this.proven = terminal;
    this.geometry = { cols: terminal.cols, rows: terminal.rows };
    this.attachCount++;
    this.exit = null;
    this.ended = null;
    connection.onClose((code) => this.upstreamClosed(connection, code));
    if (terminal.restored || hadFrames) this.record({ type: "ready", restored: terminal.restored });
    attached.take((frame) => this.fromUpstream(frame));
    this.touch();
    // Kept for pruning once the gateway lets go (a terminal object may be gone by then): one row.
    this.deps.expiry.write(expiresAt(terminal, this.lastActivity));
    if (this.unwatchedSince !== null) this.armAlarm(this.unwatchedSince + this.deps.idleMs);
    return { restored: terminal.restored };
  }

  private fromUpstream(frame: UpstreamTerminalFrame): void {
    if (frame.type === "ready") return;
    if (frame.type === "output") {
      this.touch();
      this.record(frame);
    } else if (frame.type === "exit") {
      this.exit = {
        ...(frame.exitCode !== undefined ? { exitCode: frame.exitCode } : {}),
        ...(frame.exitSignal !== undefined ? { exitSignal: frame.exitSignal } : {}),
      };
      this.ended = "exited";
      this.record(frame);
    } else this.record({ type: "error", code: "terminal_error", message: frame.message });
  }

  private upstreamClosed(connection: TerminalConnection, _code: number): void {
    if (this.upstream !== connection) return;
    this.upstream = null;
    if (this.ended === "exited") {
      this.closeViewers(CLOSE.exited, "exited");
      return;
    }
    if (this.ended !== null) return;
    // Dropped with no exit: reattached under the same id, a few times a minute at most.
    const now = this.deps.now();
    this.drops = this.drops.filter((at) => now - at < DROP_WINDOW_MS);
    this.drops.push(now);
    if (this.drops.length > MAX_REATTACHES) {
      this.endGone("the sandbox kept dropping the terminal's socket");
      return;
    }
    void this.reattach();
  }

  /** After a drop: the same connection id again, once the attach under way (if the drop came during it) is over. */
  private async reattach(): Promise<void> {
    await this.opening?.promise.catch(() => undefined);
    if (this.upstream || this.ended !== null) return;
    const opened = await this.open();
    if (opened instanceof Refusal) return this.endGone(`the terminal could not be reattached: ${opened.message}`);
    // The PTY was gone: a new shell is not the terminal the viewers had.
    if (!opened.restored) this.endGone("the terminal's shell is gone (the sandbox kept no screen to reattach)");
  }

  /** The terminal is over with no exit delivered: a new shell the sandbox started in its place is let go too. */
  private endGone(message: string): void {
    const fresh = this.upstream;
    this.upstream = null;
    fresh?.close();
    this.ended = "lost";
    this.record({ type: "error", code: "terminal_ended", message });
    this.closeViewers(CLOSE.ended, "terminal_ended");
  }

  private endedMessage(): string {
    if (this.ended === "exited") return "the terminal exited";
    if (this.ended === "closed") return "the terminal was closed";
    if (this.ended === "lost") return "the terminal is gone";
    return "the terminal is not attached: reattach it";
  }

  // ------------------------------------------------------------------ viewers

  private frameLog(): FrameLog {
    this.log ??= new FrameLog(this.deps.firstSeq());
    return this.log;
  }

  private record(frame: Unsequenced): void {
    const log = this.frameLog();
    const added = log.append(frame);
    if (added.length === 0) return;
    this.deps.reserveThrough(log.nextSeq - 1);
    for (const ws of this.viewers.keys()) for (const entry of added) this.sendTo(ws, entry);
  }

  private touch(): void {
    this.lastActivity = this.deps.now();
    this.armAlarm(this.lastActivity + this.deps.idleMs);
  }

  private letGo(code: number, errorCode: string, message: string): void {
    const upstream = this.upstream;
    this.upstream = null;
    upstream?.close();
    if (this.proven) this.deps.expiry.write(expiresAt(this.proven, this.lastActivity));
    for (const ws of this.viewers.keys()) this.sendTo(ws, { type: "error", code: errorCode, message });
    this.closeViewers(code, errorCode);
    // Nothing of the screen outlives the socket it came from; the numbering goes on.
    this.log?.clear();
  }

  private closeViewers(code: number, reason: string): void {
    for (const ws of [...this.viewers.keys()]) closeSocket(ws, code, reason);
    this.viewers.clear();
  }

  private refuse(ws: WebSocket, code: number, errorCode: string, message: string): void {
    this.sendTo(ws, { type: "error", code: errorCode, message });
    this.viewers.delete(ws);
    this.pending.delete(ws);
    closeSocket(ws, code, errorCode);
  }

  private sendTo(ws: WebSocket, frame: LoggedFrame | Record<string, unknown>): void {
    try {
      ws.send(JSON.stringify(frame));
    } catch {
      this.viewers.delete(ws);
    }
  }
}

function closeSocket(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // Already closed.
  }
}
