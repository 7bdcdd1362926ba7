/**
 * Rows written per relayed frame (SQLite rows are billed per row written): a streamed answer's text
 * deltas are stored several to a row write (the held tail), each counted once.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DELTA_EVENT } from "../public/wire/frames.js";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/session/session";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

async function rowsWritten(stub: DurableObjectStub<SessionObject>): Promise<{ all: number; compaction: number }> {
  return runInDurableObject(stub, async (instance: SessionObject) => {
    const info = await instance.instanceInfo();
    return { all: info.rowsWritten, compaction: info.compactionRowsWritten };
  });
}

/** Rows written per relayed frame, at most (issue 24, item 2). */
const MAX_ROWS_PER_FRAME = 0.15;

describe("rows written per relayed frame", () => {
  it("a 200-word answer streamed one word a frame writes far fewer rows than frames, its compaction included: part updates are stored several to a row write", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const warm = uid("turn");
    await sendTurn(token, cid, warm, "warm up");
    await collect(await api(`/v1/conversations/${cid}/events`, { token }), isTurnEnd);
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(secret, user, cid)));
    const before = await rowsWritten(stub);
    const accepted = await json(await sendTurn(token, cid, uid("turn"), "long [words:200]"));
    const events = (
      await collect(await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }), isTurnEnd, {
        timeoutMs: 20_000,
      })
    ).events;
    // Relayed frames: the events that carry an upstream frame (not the gateway's own).
    const gateway = ["turn.", "usage.updated", "budget.", "interaction.requested", "interaction.resolved", "warning"];
    const frames = events.filter((e) => !gateway.some((prefix) => e.type.startsWith(prefix))).length;
    expect(frames).toBeGreaterThanOrEqual(200);
    const after = await rowsWritten(stub);
    const compaction = after.compaction - before.compaction;
    const written = after.all - before.all - compaction;
    const perFrame = written / frames;
    console.log(JSON.stringify({ frames, written, perFrame, compaction }));
    // The held tail stores up to 64 part updates in one row write (src/session/store/held-tail.ts): about
    // one row per 64 updates (or 2 s of them), plus the turn's own rows (its record, its start and
    // end, usage reports, relayed frames that are not part updates). One row per frame would be over 200.
    // The turn's end compacts its deltas (docs/sse-protocol.md §13): one row written per row it
    // rewrites (a chunk row, an answer copy), and two for its mark. All of it together stays under
    // the bound.
    expect(compaction).toBeGreaterThan(0);
    expect(written + compaction).toBeLessThan(frames * MAX_ROWS_PER_FRAME);
  });
});

describe("bytes linear in the answer", () => {
  it("a 1,000-word answer in one growing part: stored and sent bytes are a few times the answer, not its square; a reader joining mid-answer rebuilds it exactly", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await json(await sendTurn(token, cid, turnId, "one long part [words:1000]"));
    // A reader from the turn's start, live: what the wire carries while the turn runs. Mid-answer
    // (its 300th event), another reader loads the transcript so far; once the turn ended (its
    // deltas compacted, docs/sse-protocol.md §13) it follows the stream strictly after it.
    let loaded: Promise<any> | undefined;
    const all = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e, seen) => {
        if (seen.length === 300) loaded = api(`/v1/conversations/${cid}/messages`, { token }).then(json);
        return isTurnEnd(e);
      },
      { timeoutMs: 20_000 },
    );
    const partial = await loaded!;
    const textSoFar = (partial.messages.at(-1).parts as Array<{ type: string; text?: string }>)
      .filter((p) => p.type === "text")
      .map((p) => p.text ?? "");
    expect(textSoFar.join("").length).toBeGreaterThan(0);
    const rest = await collect(
      await api(`/v1/conversations/${cid}/events?after=${partial.lastEventId}`, { token }),
      isTurnEnd,
      { timeoutMs: 20_000 },
    );
    const texts = new Map<string, string>();
    for (const p of partial.messages.at(-1).parts as Array<{ id: string; type: string; text?: string }>)
      if (p.type === "text") texts.set(p.id, p.text ?? "");
    for (const e of rest.events) {
      if (e.type !== "message.part.updated") continue;
      const part = e.data.part as { id: string; type: string; text?: string };
      if (part.type !== "text") continue;
      texts.set(
        part.id,
        typeof part.text === "string"
          ? part.text
          : (texts.get(part.id) ?? "") + ((e.data.delta as string | undefined) ?? ""),
      );
    }
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    const answer = [...texts.values()].at(-1)!;
    expect(answer.split(" ")).toHaveLength(1000);
    expect(turn.result.text.endsWith(answer)).toBe(true);

    // The whole turn as a reader from its start received it live, and as the log keeps it once the
    // turn ended (its deltas compacted, docs/sse-protocol.md §13).
    const encoder = new TextEncoder();
    const wire = all.frames.reduce(
      (n, f) => n + encoder.encode(`id: ${f.id}\nevent: ${f.event}\ndata: ${f.data}\n\n`).byteLength,
      0,
    );
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(await deriveSessionId(secret, user, cid)));
    const kept = await runInDurableObject(stub, (_i: SessionObject, state) =>
      state.storage.sql
        .exec<{ bytes: number; events: number }>(
          "SELECT SUM(LENGTH(CAST(envelope AS BLOB))) AS bytes, COUNT(*) AS events FROM events WHERE turn_id = ?",
          turnId,
        )
        .one(),
    );
    const answerBytes = encoder.encode(turn.result.text).byteLength;
    const frames = all.frames.length;
    console.log(JSON.stringify({ answerBytes, frames, kept, wire }));
    // A finished turn keeps its answer once (the final state of each part) plus each kept event's
    // envelope (ids, type, time: a constant): not a frame per word, nor the answer again in its end.
    const PER_EVENT = 400;
    expect(kept.events).toBeLessThan(frames / 10);
    expect(kept.bytes).toBeLessThanOrEqual(1.5 * answerBytes + PER_EVENT * kept.events);
    // On the wire the deltas after a part's first go lean (docs/sse-protocol.md §11): the frame is
    // its seq, the word and the time, at most 120 bytes with its SSE lines.
    expect(all.frames.filter((f) => f.event === DELTA_EVENT).length).toBeGreaterThanOrEqual(990);
    expect(wire).toBeLessThanOrEqual(3 * answerBytes + 120 * frames);
  });
});
