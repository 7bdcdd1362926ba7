/**
 * A terminal's ordered, bounded log of what its viewers are sent (seed 000, "Interactive terminal";
 * docs/api.md#terminals): only output frames carry a sequence, numbered here (the sandbox's socket
 * has no cursor); `ready`, `resize`, `error` and `exit` keep their place between them. A viewer
 * resumes from an exclusive `since`; a cursor the log no longer holds is refused, never answered
 * with a gap. The log lives in memory only: nothing of a terminal's content is stored.
 */

/** What a viewer is sent, in order (the socket's own first `ready` is not logged: ./relay.ts). */
export type LoggedFrame =
  | { type: "ready"; restored: boolean }
  | { type: "output"; seq: number; data: string }
  | { type: "resize"; cols: number; rows: number }
  | { type: "exit"; exitCode?: number; exitSignal?: string }
  | { type: "error"; code: string; message: string };

export type Unsequenced = Exclude<LoggedFrame, { type: "output" }> | { type: "output"; data: string };

export interface Cursors {
  /** The oldest output seq retained; null when none is. */
  earliest: number | null;
  /** The newest output seq given; null before any. */
  latest: number | null;
}

export type Replay =
  | { ok: true; frames: LoggedFrame[] }
  | { ok: false; code: "cursor_evicted" | "cursor_invalid"; message: string; cursors: Cursors };

const LOG_MAX_FRAMES = 1024;
const LOG_MAX_CHARS = 1 << 20;
/** No output frame carries more (the seed's bound): a larger chunk is split. */
export const OUTPUT_MAX_CHARS = 16_384;

export class FrameLog {
  private frames: LoggedFrame[] = [];
  private chars = 0;
  /** The newest seq given (`firstSeq - 1` before any). */
  private lastSeq: number;
  /** The oldest cursor that still replays everything after it. */
  private minCursor: number;
  /** The newest output seq dropped (or cleared): every frame before the next output followed it. */
  private lastDropped: number;

  constructor(
    private readonly firstSeq = 1,
    private readonly maxFrames = LOG_MAX_FRAMES,
    private readonly maxChars = LOG_MAX_CHARS,
  ) {
    this.lastSeq = firstSeq - 1;
    this.minCursor = firstSeq - 1;
    this.lastDropped = firstSeq - 1;
  }

  /** Appends a frame (output split and numbered); answers what was logged, for the live viewers. */
  append(frame: Unsequenced): LoggedFrame[] {
    const added: LoggedFrame[] = [];
    if (frame.type === "output") {
      let at = 0;
      while (at < frame.data.length) {
        // A split never cuts a surrogate pair in two.
        let end = Math.min(at + OUTPUT_MAX_CHARS, frame.data.length);
        const code = frame.data.charCodeAt(end - 1);
        if (end < frame.data.length && code >= 0xd800 && code <= 0xdbff) end--;
        added.push({ type: "output", seq: ++this.lastSeq, data: frame.data.slice(at, end) });
        at = end;
      }
    } else added.push(frame);
    for (const entry of added) {
      this.frames.push(entry);
      this.chars += weight(entry);
    }
    while (this.frames.length > this.maxFrames || (this.chars > this.maxChars && this.frames.length > 1)) this.evict();
    return added;
  }

  /** Every retained frame after output `since` (exclusive; absent: all), or why that cursor cannot be served. */
  after(since?: number): Replay {
    if (since === undefined) return { ok: true, frames: [...this.frames] };
    if (since > this.lastSeq)
      return {
        ok: false,
        code: "cursor_invalid",
        message: `cursor ${since} is past the newest output (${this.lastSeq})`,
        cursors: this.cursors(),
      };
    if (since < this.minCursor)
      return {
        ok: false,
        code: "cursor_evicted",
        message: `cursor ${since} is older than the retained output; resume from ${this.minCursor} or start from the current screen`,
        cursors: this.cursors(),
      };
    const at = this.frames.findIndex((f) => f.type === "output" && f.seq === since);
    // The cursor's own frame was evicted (since === minCursor): everything retained follows it.
    return { ok: true, frames: this.frames.slice(at + 1) };
  }

  cursors(): Cursors {
    const first = this.frames.find((f) => f.type === "output");
    return {
      earliest: first?.type === "output" ? first.seq : null,
      latest: this.lastSeq >= this.firstSeq ? this.lastSeq : null,
    };
  }

  /** The seq the next output gets. */
  get nextSeq(): number {
    return this.lastSeq + 1;
  }

  /** Forgets every frame; the numbering goes on (a cursor from before is then evicted). */
  clear(): void {
    this.frames = [];
    this.chars = 0;
    this.minCursor = this.lastSeq;
    this.lastDropped = this.lastSeq;
  }

  private evict(): void {
    const dropped = this.frames.shift()!;
    this.chars -= weight(dropped);
    // A dropped output: a cursor at it still misses nothing. A dropped ready, resize, exit or error:
    // the cursor at the output before it would miss it, so the oldest good cursor is the next output's.
    if (dropped.type === "output") this.lastDropped = dropped.seq;
    this.minCursor = dropped.type === "output" ? dropped.seq : this.lastDropped + 1;
  }
}

function weight(frame: LoggedFrame): number {
  return frame.type === "output" ? frame.data.length : 64;
}
