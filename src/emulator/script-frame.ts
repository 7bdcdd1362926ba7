/**
 * One frame of the emulator agent's script: what it emits, and when. Its own module because both
 * the script (script.ts) and the asks it contains (asks.ts) build frames, and asks.ts is imported by
 * script.ts: the shape sits below both instead of in a cycle between them.
 */
export interface ScriptFrame {
  type: string;
  data: Record<string, unknown>;
  /** Multiplier of the frame delay before this frame (default 1). */
  delayFactor?: number;
  /** The run stops after this frame until the named ask is answered (or expires after timeoutMs). */
  waitFor?: string;
  timeoutMs?: number;
  /** The run stops after this frame until a control call releases it (the `[hold]` directive, holds.ts). */
  hold?: boolean;
  /** The ask it waits for, as recorded: its request, and whether the answer route or only the plan routes decide it. */
  ask?: { request: Record<string, unknown>; via: "interaction" | "plan-route" };
}
