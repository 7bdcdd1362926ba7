/**
 * A faithful local stand-in for one Tangle Sandbox deployment (docs/sandbox-wire.md), as a
 * Durable Object serving the same HTTP routes. The Tangle client reaches it through the same code
 * path as the real service, with this object's `fetch` in place of the network.
 *
 * State lives in SQLite, so runs survive an eviction: an alarm picks the scripted agents up again.
 */
import { DurableObject } from "cloudflare:workers";
import { Hono, type Context } from "hono";
import { z } from "zod";
import { encodeSseFrame, SSE_HEADERS } from "../../lib/sse";
import { CreateSandboxBody, RunStreamBody, type Sandbox } from "../../schemas/sandbox-wire";
import { buildScript, type ScriptFrame, type ScriptInput } from "./script";
import type { AskAnswer } from "./asks";
import { canonicalJson } from "../../lib/digest";
import { EmulatorFaults } from "./faults";

interface SandboxRow extends Record<string, SqlStorageValue> {
  id: string;
  idempotency_key: string | null;
  body: string;
  status: string;
  readiness: string;
  ready_at: number | null;
  created_at: number;
  error: string | null;
}

interface ExecutionRow extends Record<string, SqlStorageValue> {
  id: string;
  sandbox_id: string;
  session_id: string;
  turn_id: string | null;
  status: string;
  script_input: string;
  step: number;
  next_at: number | null;
  frame_delay_ms: number;
  created_at: number;
  finished_at: number | null;
  final_text: string | null;
  usage: string | null;
  cost: number | null;
  error: string | null;
  request: string | null;
  waiting_for: string | null;
  answers: string;
}

interface LiveStream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  sent: number;
  dropAfter?: number;
  repeat: boolean;
  closed: boolean;
  /** Frames queued in the current burst, sent as one chunk. */
  pending: string;
  flushQueued: boolean;
}

const encoder = new TextEncoder();
const ALARM_BACKSTOP_MS = 1_000;

function errorResponse(c: Context, status: number, code: string, message: string, extra?: Record<string, unknown>) {
  return c.json({ error: { code, message, ...extra } }, status as 400);
}

export class SandboxEmulator extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private readonly app: Hono;
  private readonly streams = new Map<string, Set<LiveStream>>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Scripts are pure functions of their input: rebuilt on demand, cached per execution. */
  private readonly scripts = new Map<string, ScriptFrame[]>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.migrate();
    this.app = this.routes();
    // After an eviction, resume any run that was in flight.
    ctx.blockConcurrencyWhile(async () => this.schedule());
  }

  override async fetch(request: Request): Promise<Response> {
    return this.app.fetch(request);
  }

  override async alarm(): Promise<void> {
    this.tick();
  }

  // ---------------------------------------------------------------- storage

  private migrate(): void {
    this.sql.exec(`
      CREATE TABLE IF NOT EXISTS sandboxes (
        id TEXT PRIMARY KEY, idempotency_key TEXT UNIQUE, body TEXT NOT NULL, status TEXT NOT NULL,
        readiness TEXT NOT NULL, ready_at INTEGER, created_at INTEGER NOT NULL, error TEXT
      );
      CREATE TABLE IF NOT EXISTS executions (
        id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, session_id TEXT NOT NULL, turn_id TEXT,
        status TEXT NOT NULL, script_input TEXT NOT NULL, step INTEGER NOT NULL, next_at INTEGER,
        frame_delay_ms INTEGER NOT NULL, created_at INTEGER NOT NULL, finished_at INTEGER,
        final_text TEXT, usage TEXT, cost REAL, error TEXT, request TEXT,
        waiting_for TEXT, answers TEXT NOT NULL DEFAULT '{}'
      );
      CREATE TABLE IF NOT EXISTS asks (
        interaction_id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, session_id TEXT NOT NULL,
        request TEXT NOT NULL, status TEXT NOT NULL, answer TEXT
      );
      CREATE INDEX IF NOT EXISTS executions_session ON executions (sandbox_id, session_id);
      CREATE TABLE IF NOT EXISTS frames (
        execution_id TEXT NOT NULL, id INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (execution_id, id)
      );
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    `);
  }

  private count(name: string, by = 1): void {
    this.sql.exec(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
      name,
      by,
    );
  }

  private faults(): EmulatorFaults {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM settings WHERE name = 'faults'").toArray()[0];
    return row ? EmulatorFaults.parse(JSON.parse(row.value)) : {};
  }

  private setFaults(faults: EmulatorFaults): void {
    this.sql.exec(
      "INSERT INTO settings (name, value) VALUES ('faults', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
      JSON.stringify(faults),
    );
  }

  private frameDelayMs(): number {
    const override = this.faults().frameDelayMs;
    if (override !== undefined) return override;
    const configured = Number((this.env as unknown as Record<string, string | undefined>).EMULATOR_FRAME_DELAY_MS);
    return Number.isFinite(configured) && configured >= 0 ? configured : 40;
  }

  private provisionMs(): number {
    const configured = Number((this.env as unknown as Record<string, string | undefined>).EMULATOR_PROVISION_MS);
    return Number.isFinite(configured) && configured >= 0 ? configured : 300;
  }

  // ---------------------------------------------------------------- sandboxes

  /** Reads a sandbox, advancing its lifecycle by the clock (provisioning → running, readiness → ready). */
  private sandbox(id: string): SandboxRow | undefined {
    const row = this.sql.exec<SandboxRow>("SELECT * FROM sandboxes WHERE id = ?", id).toArray()[0];
    if (!row || row.status === "deleted") return undefined;
    const now = Date.now();
    if ((row.status === "provisioning" || row.status === "pending") && row.ready_at !== null && now >= row.ready_at) {
      const outcome = this.faults().provisionOutcome ?? "running";
      row.status = outcome;
      row.error = outcome === "running" ? null : `scripted provisioning outcome: ${outcome}`;
      const lag = this.faults().readinessLagMs ?? 0;
      row.readiness = outcome === "running" && lag === 0 ? "ready" : "transitioning";
      row.ready_at = outcome === "running" && lag > 0 ? now + lag : null;
      this.sql.exec("UPDATE sandboxes SET status = ?, readiness = ?, ready_at = ?, error = ? WHERE id = ?", row.status, row.readiness, row.ready_at, row.error, id);
    } else if (row.status === "running" && row.readiness === "transitioning" && row.ready_at !== null && now >= row.ready_at) {
      row.readiness = "ready";
      row.ready_at = null;
      this.sql.exec("UPDATE sandboxes SET readiness = 'ready', ready_at = NULL WHERE id = ?", id);
    }
    return row;
  }

  private sandboxJson(row: SandboxRow): Sandbox {
    const body = CreateSandboxBody.parse(JSON.parse(row.body));
    return {
      id: row.id,
      name: body.name,
      status: row.status,
      metadata: body.metadata,
      createdAt: new Date(row.created_at).toISOString(),
      filesystemIncarnationReadiness: row.readiness as "ready" | "transitioning",
      ...(row.error ? { error: row.error } : {}),
    };
  }

  private runningSandbox(c: Context): SandboxRow | Response {
    const row = this.sandbox(c.req.param("id") ?? "");
    if (!row) return errorResponse(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
    if (row.status !== "running") return errorResponse(c, 409, "SANDBOX_NOT_RUNNING", `sandbox is ${row.status}`);
    return row;
  }

  // ---------------------------------------------------------------- runs

  private execution(id: string): ExecutionRow | undefined {
    return this.sql.exec<ExecutionRow>("SELECT * FROM executions WHERE id = ?", id).toArray()[0];
  }

  private lastFrameId(executionId: string): number {
    const row = this.sql.exec<{ last: number | null }>("SELECT MAX(id) AS last FROM frames WHERE execution_id = ?", executionId).one();
    return row.last ?? 0;
  }

  private appendFrame(exe: ExecutionRow, frame: ScriptFrame): void {
    const id = this.lastFrameId(exe.id) + 1;
    const corrupt = this.faults().corruptFrames?.find((c) => c.id === id)?.kind;
    const data =
      corrupt === "not_json"
        ? "{not json"
        : corrupt === "invalid"
          ? JSON.stringify({ ...frame.data, part: { type: "text", text: "a part without an id" }, status: 42 })
          : corrupt === "oversize"
            ? JSON.stringify({ ...frame.data, padding: "x".repeat(1024 * 1024 + 10) })
            : JSON.stringify(frame.data);
    this.sql.exec("INSERT INTO frames (execution_id, id, type, data) VALUES (?, ?, ?, ?)", exe.id, id, frame.type, data);
    const text = encodeSseFrame({ id, event: frame.type, data });
    for (const stream of this.streams.get(exe.id) ?? []) this.send(stream, text);
  }

  /** Queues one frame on a stream; frames queued in one synchronous burst leave as one chunk. */
  private send(stream: LiveStream, text: string): void {
    if (stream.closed) return;
    stream.pending += stream.repeat ? text + text : text;
    stream.sent++;
    if (stream.dropAfter !== undefined && stream.sent >= stream.dropAfter) {
      this.closeStream(stream);
      return;
    }
    if (!stream.flushQueued) {
      stream.flushQueued = true;
      queueMicrotask(() => this.flush(stream));
    }
  }

  private flush(stream: LiveStream): void {
    stream.flushQueued = false;
    if (stream.pending === "") return;
    const text = stream.pending;
    stream.pending = "";
    try {
      stream.controller.enqueue(encoder.encode(text));
    } catch {
      stream.closed = true;
    }
  }

  private closeStream(stream: LiveStream): void {
    if (stream.closed) return;
    this.flush(stream);
    stream.closed = true;
    try {
      stream.controller.close();
    } catch {
      // already closed by the reader
    }
  }

  private finishExecution(exe: ExecutionRow, status: string, fields: { finalText?: string; usage?: unknown; cost?: number; error?: string }): void {
    this.sql.exec(
      "UPDATE executions SET status = ?, next_at = NULL, finished_at = ?, final_text = COALESCE(?, final_text), usage = COALESCE(?, usage), cost = COALESCE(?, cost), error = COALESCE(?, error) WHERE id = ?",
      status,
      Date.now(),
      fields.finalText ?? null,
      fields.usage === undefined ? null : JSON.stringify(fields.usage),
      fields.cost ?? null,
      fields.error ?? null,
      exe.id,
    );
    this.sql.exec("UPDATE asks SET status = 'cancelled' WHERE execution_id = ? AND status = 'outstanding'", exe.id);
    for (const stream of this.streams.get(exe.id) ?? []) this.closeStream(stream);
    this.streams.delete(exe.id);
    this.scripts.delete(exe.id);
  }

  /** Emits every frame that is due, for every running execution, then schedules the next tick. */
  private tick(): void {
    const now = Date.now();
    const due = this.sql.exec<ExecutionRow>("SELECT * FROM executions WHERE status = 'running' AND next_at IS NOT NULL AND next_at <= ?", now).toArray();
    for (const exe of due) this.advance(exe, now);
    this.schedule();
  }

  /** Emits every frame of one execution that is due by `now` (with a zero delay, all of them). */
  private script(exe: ExecutionRow): ScriptFrame[] {
    let script = this.scripts.get(exe.id);
    if (!script) {
      script = buildScript({ ...(JSON.parse(exe.script_input) as ScriptInput), answers: JSON.parse(exe.answers) as Record<string, AskAnswer> });
      this.scripts.set(exe.id, script);
    }
    return script;
  }

  private advance(exe: ExecutionRow, now: number): void {
    if (exe.waiting_for !== null) {
      // The ask's deadline passed with no answer: it expires and the run goes on with defaults.
      this.resolveAsk(exe, exe.waiting_for, "expired", { outcome: "timeout" });
      exe = this.execution(exe.id)!;
    }
    const script = this.script(exe);
    let step = exe.step;
    let nextAt: number | null = exe.next_at;
    while (nextAt !== null && nextAt <= now) {
      const frame = script[step];
      if (!frame) {
        this.finishExecution(exe, "completed", {});
        return;
      }
      this.appendFrame(exe, frame);
      step++;
      if (frame.waitFor) {
        // The run waits for a person: no next frame until the ask is answered or expires.
        const request = (frame.data as { request: unknown }).request;
        this.sql.exec(
          "INSERT OR IGNORE INTO asks (interaction_id, execution_id, session_id, request, status) VALUES (?, ?, ?, ?, 'outstanding')",
          frame.waitFor,
          exe.id,
          exe.session_id,
          JSON.stringify(request),
        );
        const expiresAt = frame.timeoutMs ? now + frame.timeoutMs : null;
        this.sql.exec("UPDATE executions SET step = ?, next_at = ?, waiting_for = ? WHERE id = ?", step, expiresAt, frame.waitFor, exe.id);
        return;
      }
      const next = script[step];
      nextAt = next ? now + exe.frame_delay_ms * (next.delayFactor ?? 1) : null;
      this.sql.exec("UPDATE executions SET step = ?, next_at = ? WHERE id = ?", step, nextAt, exe.id);
      if (frame.type === "result") {
        this.sql.exec(
          "UPDATE executions SET final_text = ?, usage = ?, cost = ? WHERE id = ?",
          (frame.data.finalText as string | undefined) ?? null,
          frame.data.tokenUsage === undefined ? null : JSON.stringify(frame.data.tokenUsage),
          (frame.data.totalCostUsd as number | undefined) ?? null,
          exe.id,
        );
      }
      if (!next) {
        const last = frame.type === "error" ? "failed" : frame.type === "done" || frame.type === "result" ? this.resultStatus(exe.id) : "completed";
        this.finishExecution(exe, last, frame.type === "error" ? { error: String(frame.data.message) } : {});
        return;
      }
    }
  }

  /** Records an ask's end and lets its run continue according to the answer. */
  private resolveAsk(exe: ExecutionRow, interactionId: string, status: "answered" | "expired", answer: AskAnswer): void {
    const answers = { ...(JSON.parse(exe.answers) as Record<string, AskAnswer>), [interactionId]: answer };
    this.sql.exec("UPDATE asks SET status = ?, answer = ? WHERE interaction_id = ?", status, JSON.stringify(answer), interactionId);
    this.sql.exec(
      "UPDATE executions SET answers = ?, waiting_for = NULL, next_at = ? WHERE id = ?",
      JSON.stringify(answers),
      Date.now() + exe.frame_delay_ms,
      exe.id,
    );
    this.scripts.delete(exe.id);
  }

  private resultStatus(executionId: string): string {
    const row = this.sql
      .exec<{ data: string }>("SELECT data FROM frames WHERE execution_id = ? AND type = 'result' ORDER BY id DESC LIMIT 1", executionId)
      .toArray()[0];
    if (!row) return "completed";
    const status = (JSON.parse(row.data) as { status?: string }).status;
    return status === "success" || status === undefined ? "completed" : status === "cancelled" ? "cancelled" : "failed";
  }

  private schedule(): void {
    const row = this.sql.exec<{ next: number | null }>("SELECT MIN(next_at) AS next FROM executions WHERE status = 'running'").one();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (row.next === null) return;
    const wait = Math.max(0, row.next - Date.now());
    this.timer = setTimeout(() => this.tick(), wait);
    // Backstop: if this object is evicted, the alarm wakes it and the runs go on.
    this.ctx.storage.setAlarm(row.next + ALARM_BACKSTOP_MS).catch(() => {
      // The object is shutting down; its constructor re-arms the runs when it next wakes.
    });
  }

  private startExecution(sandboxId: string, body: z.infer<typeof RunStreamBody>, backend: string): ExecutionRow {
    const faults = this.faults();
    const requested = body.executionId ?? `exec_${crypto.randomUUID()}`;
    const id = faults.admitWrongExecutionId ? `${requested}-other` : requested;
    const input: ScriptInput = {
      message: body.message,
      sessionId: body.sessionId,
      executionId: id,
      turnId: body.turnId,
      backend,
      environmentId: sandboxId,
      ...(body.interactions ? { interactions: body.interactions } : {}),
      ...(faults.foreignBinding ? { foreignBinding: true } : {}),
    };
    const script = buildScript(input);
    this.scripts.set(id, script);
    const now = Date.now();
    const delay = this.frameDelayMs();
    this.sql.exec(
      `INSERT INTO executions (id, sandbox_id, session_id, turn_id, status, script_input, step, next_at, frame_delay_ms, created_at, request)
       VALUES (?, ?, ?, ?, 'running', ?, 0, ?, ?, ?, ?)`,
      id,
      sandboxId,
      body.sessionId,
      body.turnId ?? null,
      JSON.stringify(input),
      now + delay * (script[0]?.delayFactor ?? 1),
      delay,
      now,
      JSON.stringify(body),
    );
    const exe = this.execution(id)!;
    this.appendFrame(exe, { type: "execution.started", data: { executionId: id, sessionId: body.sessionId, ...(body.turnId ? { turnId: body.turnId } : {}) } });
    this.count("runs.started");
    this.schedule();
    return exe;
  }

  /** Opens an SSE stream of one execution: frames after `cursor` (inclusive on an old deployment), then live ones. */
  private openStream(exe: ExecutionRow, cursor: number, prefix?: string): Response {
    const faults = this.faults();
    let dropAfter: number | undefined;
    if (faults.dropStreamAfterFrames !== undefined && (faults.dropStreams ?? 1) > 0) {
      dropAfter = faults.dropStreamAfterFrames;
      const remaining = (faults.dropStreams ?? 1) - 1;
      const { dropStreams: _n, dropStreamAfterFrames: _after, ...rest } = faults;
      this.setFaults(remaining > 0 ? { ...rest, dropStreams: remaining, dropStreamAfterFrames: dropAfter } : rest);
    }
    const from = faults.inclusiveReplay && cursor > 0 ? cursor : cursor + 1;
    this.count("streams.opened");
    let live: LiveStream | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        live = { controller, sent: 0, dropAfter, repeat: faults.repeatFrames ?? false, closed: false, pending: "", flushQueued: false };
        if (prefix) controller.enqueue(encoder.encode(prefix));
        const backlog = this.sql
          .exec<{ id: number; type: string; data: string }>("SELECT id, type, data FROM frames WHERE execution_id = ? AND id >= ? ORDER BY id", exe.id, from)
          .toArray();
        for (const f of backlog) this.send(live, encodeSseFrame({ id: f.id, event: f.type, data: f.data }));
        const current = this.execution(exe.id);
        if (live.closed) return;
        if (!current || current.status !== "running") {
          this.closeStream(live);
          return;
        }
        let set = this.streams.get(exe.id);
        if (!set) this.streams.set(exe.id, (set = new Set()));
        set.add(live);
      },
      cancel: () => {
        if (live) {
          live.closed = true;
          this.streams.get(exe.id)?.delete(live);
        }
      },
    });
    return new Response(body, { headers: SSE_HEADERS });
  }

  private promptResult(exe: ExecutionRow): Record<string, unknown> {
    const status = exe.status === "completed" ? "success" : exe.status;
    return {
      success: status === "success",
      status,
      durationMs: (exe.finished_at ?? Date.now()) - exe.created_at,
      executionId: exe.id,
      ...(exe.final_text !== null ? { response: exe.final_text } : {}),
      ...(exe.error !== null ? { error: exe.error } : {}),
      ...(exe.usage !== null ? { usage: JSON.parse(exe.usage) } : {}),
      ...(exe.cost !== null ? { costUsd: exe.cost } : {}),
    };
  }

  private cancelExecution(exe: ExecutionRow, reason: string): void {
    this.appendFrame(exe, { type: "status", data: { status: "cancelled", detail: reason } });
    const text = this.partialText(exe.id);
    this.appendFrame(exe, { type: "result", data: { finalText: text, sessionId: exe.session_id, executionId: exe.id, status: "cancelled" } });
    this.appendFrame(exe, { type: "done", data: {} });
    this.finishExecution(exe, "cancelled", { finalText: text, error: reason });
  }

  private partialText(executionId: string): string {
    const texts = new Map<string, string>();
    for (const row of this.sql.exec<{ data: string }>("SELECT data FROM frames WHERE execution_id = ? AND type = 'message.part.updated' ORDER BY id", executionId)) {
      const part = (JSON.parse(row.data) as { part?: { id?: string; type?: string; text?: string } }).part;
      if (part?.type === "text" && part.id && part.text !== undefined) texts.set(part.id, part.text);
    }
    return [...texts.values()].join("\n\n");
  }

  // ---------------------------------------------------------------- routes

  private routes(): Hono {
    const app = new Hono();

    // Emulator control: not part of the Sandbox API. Tests and benchmarks use it.
    app.get("/_emulator/counters", (c) => {
      const counters: Record<string, number> = {};
      for (const row of this.sql.exec<{ name: string; value: number }>("SELECT name, value FROM counters")) counters[row.name] = row.value;
      let open = 0;
      for (const set of this.streams.values()) open += set.size;
      return c.json({ counters, openStreams: open });
    });
    app.post("/_emulator/faults", async (c) => {
      const parsed = EmulatorFaults.safeParse(await c.req.json().catch(() => undefined));
      if (!parsed.success) return errorResponse(c, 400, "INVALID_FAULTS", z.prettifyError(parsed.error));
      this.setFaults(parsed.data);
      return c.json({ faults: parsed.data });
    });
    app.get("/_emulator/faults", (c) => c.json({ faults: this.faults() }));
    app.get("/_emulator/executions/:id", (c) => {
      const exe = this.execution(c.req.param("id"));
      if (!exe) return errorResponse(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
      return c.json({ id: exe.id, sandboxId: exe.sandbox_id, sessionId: exe.session_id, turnId: exe.turn_id, status: exe.status, request: exe.request ? JSON.parse(exe.request) : null });
    });
    // The raw frames of one execution, as the Sandbox would replay them: the benchmarks' baseline.
    app.get("/_emulator/executions/:id/stream", (c) => {
      const exe = this.execution(c.req.param("id"));
      if (!exe) return errorResponse(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
      return this.openStream(exe, Number(c.req.query("after") ?? 0) || 0);
    });
    app.get("/_emulator/sandboxes/:id", (c) => {
      const row = this.sql.exec<SandboxRow>("SELECT * FROM sandboxes WHERE id = ?", c.req.param("id")).toArray()[0];
      return row ? c.json({ id: row.id, status: row.status, idempotencyKey: row.idempotency_key, body: JSON.parse(row.body) }) : errorResponse(c, 404, "SANDBOX_NOT_FOUND", "no such sandbox");
    });
    app.post("/_emulator/sandboxes/:id/status", async (c) => {
      const body = z.strictObject({ status: z.enum(["stopped", "failed", "expired", "deleted"]) }).safeParse(await c.req.json().catch(() => undefined));
      if (!body.success) return errorResponse(c, 400, "INVALID_STATUS", z.prettifyError(body.error));
      this.sql.exec("UPDATE sandboxes SET status = ? WHERE id = ?", body.data.status, c.req.param("id"));
      return c.json({ ok: true });
    });
    app.post("/_emulator/reset", (c) => {
      this.sql.exec("DELETE FROM sandboxes; DELETE FROM executions; DELETE FROM frames; DELETE FROM counters; DELETE FROM settings;");
      for (const set of this.streams.values()) for (const s of set) this.closeStream(s);
      this.streams.clear();
      return c.json({ ok: true });
    });

    // Everything below is the Sandbox API: authenticated, counted, and subject to injected failures.
    app.use("/v1/*", async (c, next) => {
      const auth = c.req.header("authorization") ?? "";
      if (!/^Bearer \S+$/.test(auth)) return errorResponse(c, 401, "UNAUTHORIZED", "missing or malformed bearer token");
      const route = routeKey(c.req.method, c.req.path);
      this.count(`requests.${route}`);
      const faults = this.faults();
      const fail = faults.failNext;
      if (fail && fail.count > 0 && (!fail.route || route.startsWith(fail.route))) {
        this.setFaults({ ...faults, failNext: fail.count > 1 ? { ...fail, count: fail.count - 1 } : undefined });
        this.count("faults.injected");
        const headers: Record<string, string> = {};
        if (fail.retryAfterSeconds !== undefined) headers["retry-after"] = String(fail.retryAfterSeconds);
        if (fail.nonJson) return c.html("<html><body><h1>502 Bad Gateway</h1></body></html>", fail.status as 502, headers);
        return c.json({ error: { code: "INJECTED_FAILURE", message: `injected ${fail.status}` } }, fail.status as 500, headers);
      }
      await next();
    });

    app.post("/v1/sandboxes", async (c) => {
      const parsed = CreateSandboxBody.safeParse(await c.req.json().catch(() => undefined));
      if (!parsed.success) return errorResponse(c, 400, "VALIDATION_ERROR", z.prettifyError(parsed.error));
      const key = parsed.data.idempotencyKey;
      if (key) {
        const existing = this.sql.exec<{ id: string }>("SELECT id FROM sandboxes WHERE idempotency_key = ?", key).toArray()[0];
        if (existing) {
          const row = this.sandbox(existing.id);
          if (row) return c.json(this.sandboxJson(row), 201);
        }
      }
      const id = `sbx_${crypto.randomUUID().replaceAll("-", "")}`;
      const now = Date.now();
      // A deleted sandbox frees its key, so a later create with the same key makes a new one.
      if (key) this.sql.exec("UPDATE sandboxes SET idempotency_key = NULL WHERE idempotency_key = ?", key);
      this.sql.exec(
        "INSERT INTO sandboxes (id, idempotency_key, body, status, readiness, ready_at, created_at) VALUES (?, ?, ?, 'provisioning', 'transitioning', ?, ?)",
        id,
        key ?? null,
        JSON.stringify(parsed.data),
        now + this.provisionMs(),
        now,
      );
      this.count("sandboxes.created");
      return c.json(this.sandboxJson(this.sandbox(id)!), 201);
    });

    app.get("/v1/sandboxes", (c) => {
      const status = c.req.query("status");
      const limit = Math.min(Number(c.req.query("limit") ?? 100) || 100, 1000);
      const offset = Number(c.req.query("offset") ?? 0) || 0;
      const ids = this.sql.exec<{ id: string }>("SELECT id FROM sandboxes WHERE status != 'deleted' ORDER BY created_at LIMIT ? OFFSET ?", limit, offset).toArray();
      const sandboxes = ids.map((r) => this.sandbox(r.id)).filter((r): r is SandboxRow => !!r && (!status || r.status === status));
      return c.json({ sandboxes: sandboxes.map((r) => this.sandboxJson(r)) });
    });

    app.get("/v1/sandboxes/:id", (c) => {
      const row = this.sandbox(c.req.param("id"));
      return row ? c.json(this.sandboxJson(row)) : errorResponse(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
    });

    app.post("/v1/sandboxes/:id/resume", (c) => {
      const row = this.sandbox(c.req.param("id"));
      if (!row) return errorResponse(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
      if (row.status === "stopped") {
        this.sql.exec("UPDATE sandboxes SET status = 'provisioning', readiness = 'transitioning', ready_at = ? WHERE id = ?", Date.now() + this.provisionMs(), row.id);
        this.count("sandboxes.resumed");
      } else if (row.status !== "running" && row.status !== "provisioning") {
        return errorResponse(c, 409, "INVALID_STATE", `cannot resume a ${row.status} sandbox`);
      }
      return c.json(this.sandboxJson(this.sandbox(row.id)!));
    });

    app.post("/v1/sandboxes/:id/stop", (c) => {
      const row = this.sandbox(c.req.param("id"));
      if (!row) return errorResponse(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
      this.sql.exec("UPDATE sandboxes SET status = 'stopped', readiness = 'transitioning' WHERE id = ?", row.id);
      return c.json(this.sandboxJson(this.sandbox(row.id)!));
    });

    app.delete("/v1/sandboxes/:id", (c) => {
      const row = this.sandbox(c.req.param("id"));
      if (!row) return errorResponse(c, 404, "SANDBOX_NOT_FOUND", "sandbox not found");
      this.sql.exec("UPDATE sandboxes SET status = 'deleted', idempotency_key = NULL WHERE id = ?", row.id);
      for (const exe of this.sql.exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND status = 'running'", row.id).toArray()) {
        this.finishExecution(exe, "cancelled", { error: "sandbox deleted" });
      }
      this.count("sandboxes.deleted");
      return c.json({ success: true });
    });

    const rt = "/v1/sandboxes/:id/runtime";

    app.get(`${rt}/capabilities`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const faults = this.faults();
      if (faults.capabilitiesFail) return errorResponse(c, 500, "INTERNAL", "capability discovery failed");
      const doc: Record<string, unknown> = {
        schema: 1,
        agentInterface: "1.6.0",
        sidecarVersion: "emulator",
        dispatch: { runControlRef: true, executionIdOnAdmission: true },
        cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
        runs: { executionScopedStatus: true, eventReplay: true },
        interactions: { responseDedupe: true },
      };
      for (const [group, flags] of Object.entries(faults.capabilities ?? {})) {
        const current = (doc[group] as Record<string, boolean> | undefined) ?? {};
        const merged: Record<string, boolean> = { ...current };
        for (const [flag, value] of Object.entries(flags)) {
          if (value) merged[flag] = true;
          else delete merged[flag];
        }
        doc[group] = merged;
      }
      return c.json(doc);
    });

    app.post(`${rt}/agents/run/stream`, async (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const parsed = RunStreamBody.safeParse(await c.req.json().catch(() => undefined));
      if (!parsed.success) return errorResponse(c, 400, "VALIDATION_ERROR", z.prettifyError(parsed.error));
      const body = parsed.data;
      const replayId = c.req.header("x-execution-id");
      const lastEventId = c.req.header("last-event-id");

      if (body.message === "" && replayId) {
        // Exact replay of one execution; never starts work.
        this.count("runs.replays");
        const exe = this.execution(replayId);
        if (!exe || exe.sandbox_id !== sb.id || exe.session_id !== body.sessionId) return errorResponse(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
        const cursor = lastEventId === undefined || lastEventId === "" ? 0 : Number(lastEventId);
        const last = this.lastFrameId(exe.id);
        if (!Number.isInteger(cursor) || cursor < 0 || cursor > last) {
          return errorResponse(c, 409, "INVALID_CURSOR", `cursor ${lastEventId} is not in this execution`, { firstAvailableEventId: "1", lastEventId: String(last) });
        }
        return this.openStream(exe, cursor);
      }
      if (body.message === "") return errorResponse(c, 400, "VALIDATION_ERROR", "message is required to start a run");
      this.count("runs.dispatches");

      // Idempotent dispatch: the same execution id or the same (session, turn) attaches to the existing run.
      const existing =
        (body.executionId ? this.execution(body.executionId) : undefined) ??
        (body.turnId
          ? this.sql
              .exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND turn_id = ?", sb.id, body.sessionId, body.turnId)
              .toArray()[0]
          : undefined);
      if (existing) {
        this.count("runs.attached");
        const prefix = encodeSseFrame({
          event: "execution.started",
          data: JSON.stringify({ executionId: existing.id, sessionId: existing.session_id, turnId: existing.turn_id ?? undefined, alreadyExisted: true }),
        });
        return this.openStream(existing, this.lastFrameId(existing.id), prefix);
      }
      const busy = this.sql
        .exec<{ id: string }>("SELECT id FROM executions WHERE sandbox_id = ? AND session_id = ? AND status = 'running'", sb.id, body.sessionId)
        .toArray()[0];
      if (busy) return errorResponse(c, 409, "SESSION_BUSY", `session ${body.sessionId} is running execution ${busy.id}`);

      const backendType = body.backend?.type ?? (JSON.parse(sb.body) as { backend?: { type?: string } }).backend?.type ?? "opencode";
      const exe = this.startExecution(sb.id, body, backendType);
      return this.openStream(exe, 0);
    });

    const sess = `${rt}/agents/sessions`;

    app.get(sess, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const rows = this.sql
        .exec<{ session_id: string; running: number; updated: number }>(
          "SELECT session_id, MAX(status = 'running') AS running, MAX(created_at) AS updated FROM executions WHERE sandbox_id = ? GROUP BY session_id",
          sb.id,
        )
        .toArray();
      return c.json({ data: { sessions: rows.map((r) => ({ id: r.session_id, state: r.running ? "running" : "idle", updatedAt: new Date(r.updated).toISOString() })) } });
    });

    app.get(`${sess}/:sid`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const rows = this.sql
        .exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? ORDER BY created_at DESC", sb.id, c.req.param("sid"))
        .toArray();
      if (rows.length === 0) return errorResponse(c, 404, "SESSION_NOT_FOUND", "session not found");
      const active = rows.find((r) => r.status === "running");
      return c.json({ data: { session: { state: active ? "running" : "idle", activeExecutionId: active?.id, latestExecutionId: rows[0]!.id } } });
    });

    app.post(`${sess}/:sid/abort`, async (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const body = z.looseObject({ executionId: z.string().optional() }).safeParse(await c.req.json().catch(() => ({})));
      if (!body.success) return errorResponse(c, 400, "VALIDATION_ERROR", z.prettifyError(body.error));
      const running = this.sql
        .exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND status = 'running'", sb.id, c.req.param("sid"))
        .toArray()[0];
      if (!running || (body.data.executionId && body.data.executionId !== running.id)) {
        return c.json({ data: { cancelled: false, reason: "not_running" } });
      }
      this.cancelExecution(running, "interrupted");
      this.schedule();
      return c.json({ data: { cancelled: true } });
    });

    app.get(`${sess}/:sid/interactions`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const rows = this.sql
        .exec<{ request: string }>(
          "SELECT a.request FROM asks a JOIN executions e ON e.id = a.execution_id WHERE e.sandbox_id = ? AND a.session_id = ? AND a.status = 'outstanding'",
          sb.id,
          c.req.param("sid"),
        )
        .toArray();
      return c.json({ data: { interactions: rows.map((r) => JSON.parse(r.request)) } });
    });

    app.post(`${sess}/:sid/interactions`, async (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const parsed = z
        .strictObject({ id: z.string().min(1), outcome: z.enum(["accepted", "declined", "cancelled"]), data: z.record(z.string(), z.unknown()).optional() })
        .safeParse(await c.req.json().catch(() => undefined));
      if (!parsed.success) return errorResponse(c, 400, "INVALID_INTERACTION_ANSWER", z.prettifyError(parsed.error));
      const answer = parsed.data;
      const known = this.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM executions WHERE sandbox_id = ? AND session_id = ?", sb.id, c.req.param("sid"))
        .one().n;
      if (known === 0) return errorResponse(c, 404, "SESSION_NOT_FOUND", "no such session");
      const ask = this.sql
        .exec<{ execution_id: string; session_id: string; request: string; status: string; answer: string | null }>(
          "SELECT * FROM asks WHERE interaction_id = ?",
          answer.id,
        )
        .toArray()[0];
      const exe = ask ? this.execution(ask.execution_id) : undefined;
      if (!ask || !exe || exe.sandbox_id !== sb.id || ask.session_id !== c.req.param("sid")) {
        return errorResponse(c, 404, "INTERACTION_NOT_FOUND", "no such interaction in this session");
      }
      this.count("interactions.answers");
      const given: AskAnswer = { outcome: answer.outcome, ...(answer.data ? { data: answer.data } : {}) };
      if (ask.status === "answered") {
        // The deployment records answers: the same answer again is acknowledged, another is refused.
        if (canonicalJson(JSON.parse(ask.answer!)) === canonicalJson(given)) return c.json({ data: { status: "already_resolved_same" } });
        return errorResponse(c, 409, "ALREADY_ANSWERED", "this interaction was already answered differently");
      }
      if (ask.status !== "outstanding") return errorResponse(c, 404, "INTERACTION_GONE", `this interaction is ${ask.status}`);
      const request = JSON.parse(ask.request) as { answerSpec?: { fields?: Array<{ name: string; required?: boolean }> } };
      if (answer.outcome === "accepted") {
        const missing = (request.answerSpec?.fields ?? []).filter((f) => f.required && answer.data?.[f.name] === undefined).map((f) => f.name);
        if (missing.length) return errorResponse(c, 400, "INVALID_INTERACTION_ANSWER", `missing required fields: ${missing.join(", ")}`);
      }
      this.count("interactions.delivered");
      this.resolveAsk(exe, answer.id, "answered", given);
      this.schedule();
      const faults = this.faults();
      if (faults.answerDeliveryUnknown) {
        const left = faults.answerDeliveryUnknown - 1;
        const { answerDeliveryUnknown: _n, ...rest } = faults;
        this.setFaults(left > 0 ? { ...rest, answerDeliveryUnknown: left } : rest);
        return errorResponse(c, 503, "UNAVAILABLE", "the answer was recorded but its delivery could not be confirmed");
      }
      return c.json({ data: { status: "accepted" } });
    });

    app.get(`${sess}/:sid/turns/:turnId`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const exe = this.sql
        .exec<ExecutionRow>(
          "SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND turn_id = ? AND status != 'running'",
          sb.id,
          c.req.param("sid"),
          c.req.param("turnId"),
        )
        .toArray()[0];
      if (!exe) return errorResponse(c, 404, "TURN_NOT_FOUND", "no completed turn with this id");
      return c.json({ turnId: exe.turn_id, sessionId: exe.session_id, executionId: exe.id, result: this.promptResult(exe) });
    });

    app.get(`${sess}/:sid/executions/:eid/result`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const exe = this.execution(c.req.param("eid"));
      if (!exe || exe.sandbox_id !== sb.id || exe.session_id !== c.req.param("sid")) return errorResponse(c, 404, "EXECUTION_NOT_FOUND", "execution not found");
      if (exe.status === "running") return errorResponse(c, 409, "NOT_FINISHED", "execution is still running");
      return c.json(this.promptResult(exe));
    });

    app.delete(`${sess}/:sid`, (c) => {
      const sb = this.runningSandbox(c);
      if (sb instanceof Response) return sb;
      const sid = c.req.param("sid");
      for (const exe of this.sql.exec<ExecutionRow>("SELECT * FROM executions WHERE sandbox_id = ? AND session_id = ? AND status = 'running'", sb.id, sid).toArray()) {
        this.finishExecution(exe, "cancelled", { error: "session deleted" });
      }
      this.sql.exec("DELETE FROM frames WHERE execution_id IN (SELECT id FROM executions WHERE sandbox_id = ? AND session_id = ?)", sb.id, sid);
      this.sql.exec("DELETE FROM asks WHERE execution_id IN (SELECT id FROM executions WHERE sandbox_id = ? AND session_id = ?)", sb.id, sid);
      this.sql.exec("DELETE FROM executions WHERE sandbox_id = ? AND session_id = ?", sb.id, sid);
      return c.json({ data: { deleted: true } });
    });

    app.notFound((c) => errorResponse(c, 404, "NOT_FOUND", `no route ${c.req.method} ${c.req.path}`));
    return app;
  }
}

/** A stable name for a route, for counters and targeted fault injection. */
export function routeKey(method: string, path: string): string {
  const p = path.replace(/^\/v1\/sandboxes/, "");
  if (p === "" || p === "/") return method === "POST" ? "sandboxes.create" : "sandboxes.list";
  const runtime = p.match(/^\/[^/]+\/runtime(\/.*)$/);
  if (!runtime) {
    const action = p.match(/^\/[^/]+\/(resume|stop)$/);
    if (action) return `sandboxes.${action[1]}`;
    return method === "DELETE" ? "sandboxes.delete" : "sandboxes.get";
  }
  const rest = runtime[1]!;
  if (rest === "/capabilities") return "runtime.capabilities";
  if (rest === "/agents/run/stream") return "runtime.run";
  if (rest === "/agents/sessions") return "runtime.sessions.list";
  const m = rest.match(/^\/agents\/sessions\/[^/]+(?:\/(abort|interactions|turns|executions))?/);
  if (m) return m[1] ? `runtime.session.${m[1]}` : method === "DELETE" ? "runtime.session.delete" : "runtime.session.get";
  return "runtime.other";
}
