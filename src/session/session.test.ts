import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, collect, json, sendTurn, tokenFor, uid, waitForTurn } from "../../test/helpers";
import { deriveSessionId } from "../auth/ids";
import type { SessionObject } from "./session";

describe("the session shell: a conversation this object does not hold", () => {
  it("every read and command on it is refused as not found, and none creates storage", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`shell-${crypto.randomUUID()}`));
    const cid = "conv-absent";
    const answers = [
      await stub.summary(cid),
      await stub.messages(cid),
      await stub.usage(cid),
      await stub.chatMessages(cid),
      await stub.chatReplay(cid, "t1", []),
      await stub.cancel(cid, "op-1"),
      await stub.answer(cid, "ask-1", { operationId: "op-2", outcome: "accepted" }),
    ];
    for (const answer of answers)
      expect(answer).toMatchObject({ ok: false, refusal: { code: "conversation_not_found" } });
    expect(await stub.getTurn("t1")).toMatchObject({ ok: false, refusal: { code: "turn_not_found" } });
    const tables = await runInDurableObject(stub, (_instance: SessionObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master").toArray(),
    );
    expect(tables).toEqual([]);
  });
});

describe("the session shell: a conversation it held, deleted", () => {
  it("the same instance then refuses every read as not found and stores nothing (the bound session it kept goes with the rest)", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "hello");
    await waitForTurn(token, cid, turnId);
    const stub = env.SESSIONS.get(
      env.SESSIONS.idFromName(
        await deriveSessionId((env as unknown as Record<string, string>).SESSION_ID_SECRET!, user, cid),
      ),
    );
    // Read while bound: the instance has read (and kept) its bound session.
    expect(await stub.usage(cid)).toMatchObject({ ok: true });
    const instance = (await stub.instanceInfo()).instance;
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBeLessThan(300);
    expect((await stub.instanceInfo()).instance).toBe(instance);
    for (const answer of [await stub.usage(cid), await stub.summary(cid), await stub.messages(cid)])
      expect(answer).toMatchObject({ ok: false, refusal: { code: "conversation_not_found" } });
    const tables = await runInDurableObject(stub, (_instance: SessionObject, state) =>
      state.storage.sql.exec("SELECT name FROM sqlite_master").toArray(),
    );
    expect(tables).toEqual([]);
  });
});

describe("an operation id names one command, whatever its kind", () => {
  it("a cancel under an answer's operation id conflicts, and its acknowledgement carries nothing of the answer's record", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const accepted = await json(await sendTurn(token, cid, uid("turn"), "set up tests [ask]"));
    const asked = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    const interaction = asked.events.at(-1)!.data.interaction as { id: string };
    const operationId = uid("op");
    const answered = await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, {
      token,
      body: { operationId, outcome: "declined" },
    });
    expect((await json(answered)).status).toBe("accepted");

    const cancelled = await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId } });
    expect(cancelled.status).toBe(409);
    const ack = await json(cancelled);
    expect(ack).toMatchObject({ operationId, status: "conflict", effect: "unknown" });
    // The answer's record is a keyed hash of the answer: no acknowledgement may carry it.
    expect(ack).not.toHaveProperty("existingRequestDigest");
  });
});
