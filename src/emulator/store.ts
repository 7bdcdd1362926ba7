/**
 * The emulator's SQLite state and its typed accessors. Everything that must survive an eviction
 * lives in these tables; nothing here knows HTTP or streams. The tables, their row types, the
 * schema and its in-place upgrades are ./store-schema.ts; each group of tables has its store, and
 * every SQL statement is in one of them:
 *  - ./store-settings.ts    `counters`, and `settings` (faults, variants) kept parsed in memory;
 *  - ./store-sandboxes.ts   `sandboxes`: a sandbox's status, readiness, use and clock;
 *  - ./store-executions.ts  `executions`: a run started, moved on by the clock, ended;
 *  - ./store-sessions.ts    an agent session as its runs seen together, its fork origin (`forks`),
 *                           its deletion;
 *  - ./store-frames.ts      `frames`: each run's SSE frames;
 *  - ./store-asks.ts        `asks`: what a run asked a person, and its answer;
 *  - ./store-files.ts       `tree_files`, `tree_chunks`: each sandbox's files and each snapshot's copy;
 *  - ./store-snapshots.ts   `snapshots`, `restores`: the snapshots taken and the restores done.
 * This class composes them over the object's one SQL handle: the rooms of the emulator call it (the
 * workspace's two stores directly, as `files` and `snapshots`: ./workspace.ts is their one user).
 */
import type { EmulatorFaults } from "./faults";
import { AskStore } from "./store-asks";
import { ExecutionStore } from "./store-executions";
import { FileStore } from "./store-files";
import { FrameStore } from "./store-frames";
import { SandboxStore } from "./store-sandboxes";
import {
  type AskRow,
  clearEmulatorTables,
  type ExecutionRow,
  type FrameRow,
  migrateEmulatorSchema,
  type SandboxRow,
  type SessionSummaryRow,
} from "./store-schema";
import { AgentSessionStore } from "./store-sessions";
import { SettingsStore } from "./store-settings";
import { SnapshotStore } from "./store-snapshots";
import type { EmulatorVariants } from "./variants";

export class EmulatorStore {
  private readonly settingsStore: SettingsStore;
  private readonly sandboxStore: SandboxStore;
  private readonly executionStore: ExecutionStore;
  private readonly sessionStore: AgentSessionStore;
  private readonly frameStore: FrameStore;
  private readonly askStore: AskStore;
  /** The workspace's files and snapshots (./workspace.ts and the workspace routes read them). */
  readonly files: FileStore;
  readonly snapshots: SnapshotStore;

  constructor(private readonly sql: SqlStorage) {
    migrateEmulatorSchema(sql);
    this.settingsStore = new SettingsStore(sql);
    this.sandboxStore = new SandboxStore(sql);
    this.executionStore = new ExecutionStore(sql);
    // A sandbox created from a snapshot holds its source's agent sessions as they were then.
    this.sessionStore = new AgentSessionStore(sql, (sandboxId) => {
      const row = this.sandboxStore.sandbox(sandboxId);
      const body = row ? (JSON.parse(row.body) as { fromSnapshot?: unknown }) : {};
      const snapshot = typeof body.fromSnapshot === "string" ? this.snapshots.snapshot(body.fromSnapshot) : undefined;
      return snapshot ? { sandboxId: snapshot.sandbox_id, takenAt: snapshot.created_at } : undefined;
    });
    this.frameStore = new FrameStore(sql);
    this.askStore = new AskStore(sql);
    this.files = new FileStore(sql);
    this.snapshots = new SnapshotStore(sql, this.files);
  }

  /** Forgets everything: sandboxes, runs, frames, asks, files, snapshots, counters, faults and variants. */
  reset(): void {
    this.settingsStore.clear();
    this.frameStore.forget();
    clearEmulatorTables(this.sql);
  }

  // ---- counters and settings (./store-settings.ts)

  count(name: string, by = 1): void {
    this.settingsStore.count(name, by);
  }

  counters(): Record<string, number> {
    return this.settingsStore.counters();
  }

  faults(): EmulatorFaults {
    return this.settingsStore.faults();
  }

  setFaults(faults: EmulatorFaults): void {
    this.settingsStore.setFaults(faults);
  }

  variants(): EmulatorVariants {
    return this.settingsStore.variants();
  }

  setVariants(variants: EmulatorVariants): void {
    this.settingsStore.setVariants(variants);
  }

  // ---- sandboxes (./store-sandboxes.ts)

  /** A sandbox row as stored (deleted ones included). */
  sandbox(id: string): SandboxRow | undefined {
    return this.sandboxStore.sandbox(id);
  }

  /** The live sandboxes created from a snapshot. */
  childrenOfSnapshot(snapshotId: string): string[] {
    return this.sandboxStore.childrenOfSnapshot(snapshotId);
  }

  sandboxIdByIdempotencyKey(key: string): string | undefined {
    return this.sandboxStore.sandboxIdByIdempotencyKey(key);
  }

  /** Ids of sandboxes not deleted, oldest first. */
  sandboxIds(limit: number, offset: number): string[] {
    return this.sandboxStore.sandboxIds(limit, offset);
  }

  insertSandbox(row: Parameters<SandboxStore["insertSandbox"]>[0]): void {
    this.sandboxStore.insertSandbox(row);
  }

  /** The sandbox was used now (a runtime call, a resume). */
  touchSandbox(id: string, at: number): void {
    this.sandboxStore.touchSandbox(id, at);
  }

  setSandboxStartedAt(id: string, at: number): void {
    this.sandboxStore.setSandboxStartedAt(id, at);
  }

  /** Ages the sandbox and its runs by `ms`, as if that much time had passed for it. */
  ageSandbox(id: string, ms: number): void {
    this.sandboxStore.ageSandbox(id, ms);
  }

  /** When the sandbox's last run ended (ms), null when none has. */
  lastRunEndedAt(sandboxId: string): number | null {
    return this.sandboxStore.lastRunEndedAt(sandboxId);
  }

  /** How many sandboxes run now (the account's usage [ours]). */
  runningSandboxCount(): number {
    return this.sandboxStore.runningSandboxCount();
  }

  updateSandbox(id: string, fields: Parameters<SandboxStore["updateSandbox"]>[1]): void {
    this.sandboxStore.updateSandbox(id, fields);
  }

  setSandboxStatus(id: string, status: string): void {
    this.sandboxStore.setSandboxStatus(id, status);
  }

  /** Sets how many answers have shown this sandbox "warming" (0 when it becomes ready again). */
  setWarmingPolls(id: string, polls: number): void {
    this.sandboxStore.setWarmingPolls(id, polls);
  }

  /** Marks a sandbox deleted and frees its idempotency key. */
  deleteSandbox(id: string): void {
    this.sandboxStore.deleteSandbox(id);
  }

  // ---- executions (./store-executions.ts)

  execution(id: string): ExecutionRow | undefined {
    return this.executionStore.execution(id);
  }

  executionByTurn(sandboxId: string, sessionId: string, turnId: string): ExecutionRow | undefined {
    return this.executionStore.executionByTurn(sandboxId, sessionId, turnId);
  }

  /** A finished execution of a turn (the completed-turn route). */
  finishedExecutionByTurn(sandboxId: string, sessionId: string, turnId: string): ExecutionRow | undefined {
    return this.executionStore.finishedExecutionByTurn(sandboxId, sessionId, turnId);
  }

  runningExecutions(sandboxId: string, sessionId?: string): ExecutionRow[] {
    return this.executionStore.runningExecutions(sandboxId, sessionId);
  }

  /** Running executions with a frame (or an ask's expiry) due by `now`. */
  dueExecutions(now: number): ExecutionRow[] {
    return this.executionStore.dueExecutions(now);
  }

  /** The earliest time any running execution has something due, or null. */
  nextDueAt(): number | null {
    return this.executionStore.nextDueAt();
  }

  insertExecution(row: Parameters<ExecutionStore["insertExecution"]>[0]): ExecutionRow {
    return this.executionStore.insertExecution(row);
  }

  /** Moves a run on: the next script step and when it is due, and the ask it now waits for, if any. */
  setProgress(id: string, step: number, nextAt: number | null, waitingFor?: string): void {
    this.executionStore.setProgress(id, step, nextAt, waitingFor);
  }

  setReceipt(id: string, finalText: string | null, usage: unknown, cost: number | null): void {
    this.executionStore.setReceipt(id, finalText, usage, cost);
  }

  /** Records an answer and lets the run go on at `nextAt`. */
  setAnswers(id: string, answers: unknown, nextAt: number): void {
    this.executionStore.setAnswers(id, answers, nextAt);
  }

  /** Ends a run; fields already recorded are kept unless given. Its outstanding asks are cancelled. */
  finishExecution(id: string, status: string, fields: Parameters<ExecutionStore["finishExecution"]>[2]): void {
    this.executionStore.finishExecution(id, status, fields);
  }

  // ---- agent sessions and forks (./store-sessions.ts)

  /** A session's executions, newest first. */
  sessionExecutions(sandboxId: string, sessionId: string): ExecutionRow[] {
    return this.sessionStore.sessionExecutions(sandboxId, sessionId);
  }

  sessionSummaries(sandboxId: string): SessionSummaryRow[] {
    return this.sessionStore.sessionSummaries(sandboxId);
  }

  countSessionExecutions(sandboxId: string, sessionId: string): number {
    return this.sessionStore.countSessionExecutions(sandboxId, sessionId);
  }

  forkOf(sandboxId: string, sessionId: string): { source: string; messageId: string } | undefined {
    return this.sessionStore.forkOf(sandboxId, sessionId);
  }

  insertFork(sandboxId: string, sessionId: string, source: string, messageId: string, now: number): void {
    this.sessionStore.insertFork(sandboxId, sessionId, source, messageId, now);
  }

  /** A session's conversation, oldest first: a fork's copied runs before its own. */
  sessionHistory(sandboxId: string, sessionId: string): Array<{ executionId: string; message: string }> {
    return this.sessionStore.sessionHistory(sandboxId, sessionId);
  }

  /** Forgets a session: its executions, their frames and asks. */
  deleteSession(sandboxId: string, sessionId: string): void {
    this.sessionStore.deleteSession(sandboxId, sessionId);
    this.frameStore.forget();
  }

  // ---- frames (./store-frames.ts)

  lastFrameId(executionId: string): number {
    return this.frameStore.lastFrameId(executionId);
  }

  insertFrame(executionId: string, id: number, type: string, data: string): void {
    this.frameStore.insertFrame(executionId, id, type, data);
  }

  /** An execution's frames with id ≥ `from`, in order. */
  framesFrom(executionId: string, from: number): FrameRow[] {
    return this.frameStore.framesFrom(executionId, from);
  }

  framesOfType(executionId: string, type: string): FrameRow[] {
    return this.frameStore.framesOfType(executionId, type);
  }

  // ---- asks (./store-asks.ts)

  /** Records an ask the run now waits for (once: a rebuilt script asks the same ask again). */
  insertAsk(
    interactionId: string,
    executionId: string,
    sessionId: string,
    request: unknown,
    via: "interaction" | "plan-route",
  ): void {
    this.askStore.insertAsk(interactionId, executionId, sessionId, request, via);
  }

  ask(interactionId: string): AskRow | undefined {
    return this.askStore.ask(interactionId);
  }

  resolveAsk(interactionId: string, status: "answered" | "expired", answer: unknown): void {
    this.askStore.resolveAsk(interactionId, status, answer);
  }

  /** A session's outstanding asks, oldest first: those offered as interactions (`planRoute`: all). */
  outstandingAsks(sandboxId: string, sessionId: string, planRoute = false): AskRow[] {
    return this.askStore.outstandingAsks(sandboxId, sessionId, planRoute);
  }
}
