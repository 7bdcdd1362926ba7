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
  /** What the frame does to the sandbox's files when it is emitted (a completed tool call; workspace.ts applies it). */
  change?: WorkspaceChange;
}

/**
 * A change to the workspace's files, its paths as the agent's tools give them (relative to the
 * root, or absolute under it). `edit` replaces the first `oldString` of the file, and changes
 * nothing when the file or the string is not there; `binary` writes `bytes` bytes with NUL bytes in.
 */
export type WorkspaceChange =
  | { op: "write"; path: string; text: string }
  | { op: "binary"; path: string; bytes: number }
  | { op: "edit"; path: string; oldString: string; newString: string }
  | { op: "delete"; path: string }
  | { op: "rename"; from: string; to: string };
