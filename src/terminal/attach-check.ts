/**
 * Whether an attach proved a live terminal (seed 000, "Interactive terminal"): a `ready` frame
 * naming its session and a positive detach window, and metadata with a name, shell, cwd, geometry,
 * timestamps and running state. Anything less fails closed: the attach is not a success.
 */
import { z } from "zod";

const Label = z.string().min(1).max(512);
const Dimension = z.number().int().min(1).max(10_000);
const Instant = z.string().refine((s) => Number.isFinite(Date.parse(s)));

const ReadyFields = { sessionId: z.string().min(1).max(512), detachTimeoutMs: z.number().int().positive() };
const MetadataFields = {
  name: Label,
  shell: Label,
  cwd: Label,
  cols: Dimension,
  rows: Dimension,
  createdAt: Instant,
  lastActivityAt: Instant,
  isRunning: z.boolean(),
};

export interface ProvenTerminal {
  sessionId: string;
  detachTimeoutMs: number;
  restored: boolean;
  name: string;
  shell: string;
  cwd: string;
  cols: number;
  rows: number;
  createdAt: string;
  lastActivityAt: string;
  isRunning: boolean;
  exitCode?: number;
  exitSignal?: string;
}

export type ReadyCheck =
  | { ok: true; sessionId: string; detachTimeoutMs: number; restored: boolean }
  | { ok: false; missing: string[] };

/** The ready frame's fields the attach needs (the fields missing or malformed, by name). */
export function checkReady(ready: { sessionId?: unknown; restored?: unknown; detachTimeoutMs?: unknown }): ReadyCheck {
  const missing = Object.entries(ReadyFields)
    .filter(([name, schema]) => !schema.safeParse(ready[name as keyof typeof ready]).success)
    .map(([name]) => name);
  if (missing.length > 0) return { ok: false, missing };
  return {
    ok: true,
    sessionId: ready.sessionId as string,
    detachTimeoutMs: ready.detachTimeoutMs as number,
    restored: ready.restored === true,
  };
}

export type MetadataCheck = { ok: true; terminal: ProvenTerminal } | { ok: false; missing: string[] };

/** The metadata's fields the seed requires (the fields missing or malformed, by name). */
export function checkMetadata(
  ready: { sessionId: string; detachTimeoutMs: number; restored: boolean },
  metadata: Record<string, unknown>,
): MetadataCheck {
  const missing = Object.entries(MetadataFields)
    .filter(([name, schema]) => !schema.safeParse(metadata[name]).success)
    .map(([name]) => name);
  if (missing.length > 0) return { ok: false, missing };
  const exitCode = z.number().int().safeParse(metadata.exitCode);
  const exitSignal = z.string().min(1).safeParse(metadata.exitSignal);
  return {
    ok: true,
    terminal: {
      ...ready,
      name: metadata.name as string,
      shell: metadata.shell as string,
      cwd: metadata.cwd as string,
      cols: metadata.cols as number,
      rows: metadata.rows as number,
      createdAt: metadata.createdAt as string,
      lastActivityAt: metadata.lastActivityAt as string,
      isRunning: metadata.isRunning as boolean,
      ...(exitCode.success ? { exitCode: exitCode.data } : {}),
      ...(exitSignal.success ? { exitSignal: exitSignal.data } : {}),
    },
  };
}

/** One detach window past the newest activity anyone can prove (seed 000: a ref's expiry). */
export function expiresAt(terminal: ProvenTerminal, localActivityMs: number): number {
  return Math.max(Date.parse(terminal.lastActivityAt), localActivityMs) + terminal.detachTimeoutMs;
}
