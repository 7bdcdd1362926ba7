/**
 * Rows written per relayed frame (SQLite rows are billed per row written): a streamed answer's text
 * deltas are stored several to a row write (the held tail), each counted once.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { DELTA_EVENT } from "../public/lib/frames.js";
import { describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/objects/session";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

async function rowsWritten(stub: DurableObjectStub<SessionObject>): Promise<number> {
  return runInDurableObject(stub, (instance: SessionObject) => (instance as unknown as { storeInstance: { rowsWritten: number } | null }).storeInstance?.rowsWritten ?? 0);
}

/** Rows written per relayed frame, at most (issue 24, item 2). */
const MAX_ROWS_PER_FRAME = 0.15;

describe("rows written per relayed frame", () => {
  it("a 200-word answer streamed one word a frame writes far fewer rows than frames: deltas are stored several to a row write", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm up");
    await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd);
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(secret, user, cid)));
    const before = await rowsWritten(stub);
    const accepted = await json(await sendTurn(token, cid, uid("turn"), "long [words:200]"));
    const events = (await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd, { timeoutMs: 20_000 })).events;
    // Relayed frames: the events that carry an upstream frame (not the gateway's own).
    const gateway = ["turn.", "usage.updated", "budget.", "interaction.requested", "interaction.resolved", "warning"];
    const frames = events.filter((e) => !gateway.some((prefix) => e.type.startsWith(prefix))).length;
    expect(frames).toBeGreaterThanOrEqual(200);
    const written = (await rowsWritten(stub)) - before;
    const perFrame = written / frames;
    console.log(JSON.stringify({ frames, written, perFrame }));
    // The held tail stores up to 64 deltas in one row write (src/objects/held-tail.ts): about one
    // row per 64 deltas (or 2 s of them), plus the turn's own rows (its record, its start and end, usage reports,
    // each part's first update). One row per frame would be over 200.
    expect(written).toBeLessThan(frames * MAX_ROWS_PER_FRAME);
  });
});

describe("bytes linear in the answer", () => {
  it("a 1,000-word answer in one growing part: stored and sent bytes are a few times the answer, not its square; a reader joining mid-answer rebuilds it exactly", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "one long part [words:1000]"));
    // A reader joins mid-answer: the transcript so far, then the stream strictly after it.
    await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), (_e, all) => all.length >= 300, { timeoutMs: 20_000 });
    const partial = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const textSoFar = (partial.messages.at(-1).parts as Array<{ type: string; text?: string }>).filter((p) => p.type === "text").map((p) => p.text ?? "");
    expect(textSoFar.join("").length).toBeGreaterThan(0);
    const rest = await collect(await api(`/v1/conversations/${cid}/events?after=${partial.lastEventId}`, { token }), isTurnEnd, { timeoutMs: 20_000 });
    const texts = new Map<string, string>();
    for (const p of partial.messages.at(-1).parts as Array<{ id: string; type: string; text?: string }>) if (p.type === "text") texts.set(p.id, p.text ?? "");
    for (const e of rest.events) {
      if (e.type !== "message.part.updated") continue;
      const part = e.data.part as { id: string; type: string; text?: string };
      if (part.type !== "text") continue;
      texts.set(part.id, typeof part.text === "string" ? part.text : (texts.get(part.id) ?? "") + ((e.data.delta as string | undefined) ?? ""));
    }
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    const answer = [...texts.values()].at(-1)!;
    expect(answer.split(" ")).toHaveLength(1000);
    expect(turn.result.text.endsWith(answer)).toBe(true);

    // The whole turn as a reader from its start receives it, and as the log stores it.
    const all = await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd, { timeoutMs: 20_000 });
    const encoder = new TextEncoder();
    const wire = all.frames.reduce((n, f) => n + encoder.encode(`id: ${f.id}\nevent: ${f.event}\ndata: ${f.data}\n\n`).byteLength, 0);
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(secret, user, cid)));
    const stored = await runInDurableObject(stub, (_i: SessionObject, state) =>
      state.storage.sql.exec<{ bytes: number }>("SELECT SUM(LENGTH(CAST(envelope AS BLOB))) AS bytes FROM events WHERE turn_id = ?", turnId).one().bytes,
    );
    const answerBytes = encoder.encode(turn.result.text).byteLength;
    const frames = all.frames.length;
    console.log(JSON.stringify({ answerBytes, frames, stored, wire }));
    // Each word's frame costs its envelope (ids, type, time: a constant) plus the word once. The
    // whole text repeated on every frame would be about 1,000 × 3,000 bytes here.
    const PER_FRAME = 400;
    expect(stored).toBeLessThanOrEqual(3 * answerBytes + PER_FRAME * frames);
    // On the wire the deltas after a part's first go lean (docs/sse-protocol.md §11): the frame is
    // its seq, the word and the time, at most 120 bytes with its SSE lines.
    expect(all.frames.filter((f) => f.event === DELTA_EVENT).length).toBeGreaterThanOrEqual(990);
    expect(wire).toBeLessThanOrEqual(3 * answerBytes + 120 * frames);
    expect(stored).toBeLessThan(answerBytes * 100);
  });
});
