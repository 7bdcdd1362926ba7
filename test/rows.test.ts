/**
 * Rows written per relayed frame (SQLite rows are billed per row written): at most about one per
 * frame for a streamed answer, with every frame made durable and each counted once.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/objects/session";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

async function rowsWritten(stub: DurableObjectStub<SessionObject>): Promise<number> {
  return runInDurableObject(stub, (instance: SessionObject) => (instance as unknown as { storeInstance: { rowsWritten: number } | null }).storeInstance?.rowsWritten ?? 0);
}

describe("rows written per relayed frame", () => {
  it("a 200-word answer streamed one word a frame writes one row per relayed frame, plus a few for the turn itself", async () => {
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
    // One row per frame (the event itself), plus a few per turn (its record, its start and end, and
    // three per usage report): amortized, 1.0 per frame as answers grow.
    expect(written).toBeGreaterThanOrEqual(frames);
    expect(written - frames).toBeLessThanOrEqual(30);
  });
});
