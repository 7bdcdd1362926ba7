/**
 * A viewer's input bound (docs/api.md#terminals): at most `INPUT_MAX_FRAME_CHARS` in one frame, and
 * at most `bytesPerSecond` and `framesPerSecond` over any one-second window (a fixed window per
 * second: simple, and a burst of at most twice the rate across a boundary).
 */
export const INPUT_MAX_FRAME_CHARS = 64 * 1024;
const INPUT_BYTES_PER_SECOND = 256 * 1024;
const INPUT_FRAMES_PER_SECOND = 200;

export class InputLimit {
  private windowStart = 0;
  private bytes = 0;
  private frames = 0;

  constructor(
    private readonly bytesPerSecond = INPUT_BYTES_PER_SECOND,
    private readonly framesPerSecond = INPUT_FRAMES_PER_SECOND,
  ) {}

  /** Counts one frame of `size` at `nowMs`; false when it passes the rate. */
  admit(size: number, nowMs: number): boolean {
    if (nowMs - this.windowStart >= 1000) {
      this.windowStart = nowMs;
      this.bytes = 0;
      this.frames = 0;
    }
    this.bytes += size;
    this.frames += 1;
    return this.bytes <= this.bytesPerSecond && this.frames <= this.framesPerSecond;
  }
}
