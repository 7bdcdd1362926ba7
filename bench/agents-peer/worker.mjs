// The bench's agents peer: a minimal AIChatAgent (@cloudflare/ai-chat, on the agents package) whose
// onChatMessage streams a scripted answer, no model: `[words:N] [ms:M]` in the last user message
// gives N one-word text deltas ("w1 ", "w2 ", …), one every M ms, as the AI SDK's UI message stream
// (createUIMessageStream). Everything else — storing the chunks, the WebSocket protocol, resuming a
// stream — is the package's own. bench/agents.mjs measures it beside the gateway in the same run.
//
// GET /agents/bench-chat/<name>/bench-stats answers what the measurements need from storage: rows
// written (the sum of every SQL cursor's rowsWritten, plus one per key put or deleted through the
// KV API, each of which writes one row of the object's SQLite), the database's size and each
// table's row count, and the free pages' bytes (freelist_count × page_size) where the runtime allows the pragmas.
import { AIChatAgent } from "@cloudflare/ai-chat";
import { routeAgentRequest } from "agents";
import { createUIMessageStream, createUIMessageStreamResponse } from "ai";

/** Counts the rows this object's storage writes: wraps its SQL and KV calls once, before the agent's constructor uses them. */
function countWrites(storage) {
  const counter = { sqlRowsWritten: 0, kvKeysWritten: 0, cursors: [] };
  const sql = storage.sql;
  const exec = sql.exec.bind(sql);
  sql.exec = (...args) => {
    const cursor = exec(...args);
    counter.cursors.push(cursor);
    return cursor;
  };
  const keys = (k) => (Array.isArray(k) ? k.length : typeof k === "object" && k !== null ? Object.keys(k).length : 1);
  const put = storage.put.bind(storage);
  storage.put = (k, ...rest) => ((counter.kvKeysWritten += keys(k)), put(k, ...rest));
  const del = storage.delete.bind(storage);
  storage.delete = (k, ...rest) => ((counter.kvKeysWritten += keys(k)), del(k, ...rest));
  counter.settle = () => {
    // A cursor's rowsWritten is final once it has run; the agent's writes run when issued.
    for (const c of counter.cursors) counter.sqlRowsWritten += c.rowsWritten;
    counter.cursors = [];
    return counter.sqlRowsWritten + counter.kvKeysWritten;
  };
  return counter;
}

const instanceId = () => crypto.randomUUID();

export class BenchChat extends AIChatAgent {
  constructor(ctx, env) {
    const counter = countWrites(ctx.storage);
    super(ctx, env);
    this.benchCounter = counter;
    this.benchInstance = instanceId();
  }

  async onChatMessage() {
    const last = [...this.messages].reverse().find((m) => m.role === "user");
    const text = (last?.parts ?? []).map((p) => (p.type === "text" ? p.text : "")).join(" ");
    const words = Number(/\[words:(\d+)\]/.exec(text)?.[1] ?? 10);
    const ms = Number(/\[ms:(\d+)\]/.exec(text)?.[1] ?? 0);
    const stream = createUIMessageStream({
      execute: async ({ writer }) => {
        writer.write({ type: "text-start", id: "answer" });
        for (let i = 1; i <= words; i++) {
          writer.write({ type: "text-delta", id: "answer", delta: `w${i} ` });
          if (ms > 0) await new Promise((r) => setTimeout(r, ms));
        }
        writer.write({ type: "text-end", id: "answer" });
      },
    });
    return createUIMessageStreamResponse({ stream });
  }

  async onRequest(request) {
    if (new URL(request.url).pathname.endsWith("/bench-stats")) {
      const rowsWritten = this.benchCounter.settle();
      const sql = this.ctx.storage.sql;
      const tables = {};
      const names = [...sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'")].map((r) => String(r.name));
      this.benchCounter.cursors = []; // the stats' own reads are not the agent's writes
      for (const name of names) {
        try {
          tables[name] = Number([...sql.exec(`SELECT COUNT(*) AS n FROM "${name.replace(/"/g, '""')}"`)][0]?.n ?? 0);
        } catch {
          tables[name] = null; // a table this connection may not read (the runtime's own)
        }
      }
      // Pages the database holds free (deleted rows' space, counted in databaseSize): null where the runtime refuses the pragma.
      let freeBytes = null;
      try {
        const pages = Number([...sql.exec("PRAGMA freelist_count")][0]?.freelist_count);
        const size = Number([...sql.exec("PRAGMA page_size")][0]?.page_size);
        if (Number.isFinite(pages) && Number.isFinite(size)) freeBytes = pages * size;
      } catch {
        // not allowed here
      }
      this.benchCounter.cursors = [];
      return Response.json({
        instance: this.benchInstance,
        rowsWritten,
        sqlRowsWritten: this.benchCounter.sqlRowsWritten,
        kvKeysWritten: this.benchCounter.kvKeysWritten,
        databaseSize: sql.databaseSize,
        freeBytes,
        tables,
        messages: this.messages.length,
      });
    }
    return super.onRequest(request);
  }
}

export default {
  async fetch(request, env) {
    if (new URL(request.url).pathname === "/healthz") return new Response("ok");
    return (await routeAgentRequest(request, env)) ?? new Response("not found", { status: 404 });
  },
};
