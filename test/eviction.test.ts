import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deriveSessionId } from "../src/auth/ids";
import type { SessionObject } from "../src/session/session";
import { compacted, expectedUpstream, seenUpstream } from "./expected";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;

describe("the session object survives losing its memory mid-run", () => {
  it("a new instance, reading only storage, resumes the exact run from its alarm and nothing is lost", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const turnId = uid("turn");
    const message = "survive an eviction [long] [slow]";
    const accepted = await json(await sendTurn(token, cid, turnId, message));
    const early = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (_e, all) => all.length >= 5,
    );
    expect(early.events).toHaveLength(5);

    // Every object loses its in-memory state (the upstream reader included), as on an eviction.
    await abortAllDurableObjects();

    const sessionId = await deriveSessionId(secret, user, cid);
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
    // The new instance has no reader: the stored control ref is all it has.
    const stored = await runInDurableObject(stub, async (_instance: SessionObject, state) =>
      state.storage.sql
        .exec<{ status: string; control_ref: string }>(
          "SELECT status, control_ref FROM turns WHERE turn_id = ?",
          turnId,
        )
        .one(),
    );
    expect(stored.status).toBe("running");
    expect(JSON.parse(stored.control_ref)).toMatchObject({
      executionId: accepted.executionId,
      sessionId,
      provider: "tangle-sandbox",
    });

    // The watchdog alarm is set while a run is live, and it brings the reader back.
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    // With no request arriving at all, the run completes: poll storage, not a route.
    const deadline = Date.now() + 20_000;
    let status = "running";
    while (status === "running" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      status = await runInDurableObject(
        stub,
        (_i: SessionObject, state) =>
          state.storage.sql.exec<{ status: string }>("SELECT status FROM turns WHERE turn_id = ?", turnId).one().status,
      );
    }
    expect(status).toBe("completed");
    const rest = await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": early.lastId! } }),
      isTurnEnd,
      { timeoutMs: 20_000 },
    );
    const all = [...early.events, ...rest.events];
    expect(all.at(-1)!.type).toBe("turn.completed");
    expect(new Set(all.map((e) => e.seq)).size).toBe(all.length);
    // The rest is read after the turn ended, so its deltas are compacted (docs/sse-protocol.md §13):
    // compared as the log keeps a finished turn, every part's text and every other frame. Part
    // updates the lost instance held unstored come again from the new one as each part's whole
    // state (§12): the same state twice, which a reader applies once.
    const seen = seenUpstream(all, turnId);
    const once = seen.filter((e, i) => seen.findIndex((x) => x.type === e.type && x.key === e.key) === i);
    expect(compacted(once)).toEqual(compacted(expectedUpstream(message, accepted.executionId)));
    const turn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    expect(turn.status).toBe("completed");
  });

  it("a turn left pending by an object evicted mid-dispatch is cleared by the alarm, and the same turn id works again", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "first");
    await waitForTurn(token, cid, first);
    const sessionId = await deriveSessionId(secret, user, cid);
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
    const stuck = uid("turn");
    // As an eviction between "recorded" and "dispatched" would leave it: pending, no control ref.
    await runInDurableObject(stub, async (_i: SessionObject, state) => {
      const old = Date.now() - 60_000;
      state.storage.sql.exec(
        "INSERT INTO turns (turn_id, ordinal, request_digest, request, execution_id, status, created_at, updated_at) VALUES (?, 99, 'd', ?, ?, 'pending', ?, ?)",
        stuck,
        JSON.stringify({ message: "stuck" }),
        `exe_${stuck}`,
        old,
        old,
      );
      await state.storage.setAlarm(Date.now() + 60_000);
    });
    expect((await sendTurn(token, cid, uid("turn"), "blocked")).status).toBe(409);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await api(`/v1/conversations/${cid}/turns/${stuck}`, { token })).status).toBe(404);
    expect((await sendTurn(token, cid, stuck, "stuck")).status).toBe(202);
    expect((await waitForTurn(token, cid, stuck)).status).toBe("completed");
  });
});
