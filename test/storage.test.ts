/**
 * Reading a conversation that does not exist stores nothing (docs/api.md#errors-and-limits): no
 * route of an unknown conversation wakes a session object, whose storage would exist from then on.
 * `listDurableObjectIds` lists the objects that have storage.
 */
import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deriveOwnerKey } from "../src/auth/ids";
import type { UserObject } from "../src/user/user";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const secret = (env as unknown as Record<string, string>).SESSION_ID_SECRET!;
const until = async (ok: () => Promise<boolean>) => {
  while (!(await ok())) await new Promise((r) => setTimeout(r, 10));
};

const sessions = async () => (await listDurableObjectIds(env.SESSIONS)).length;

describe("reads of a conversation that does not exist", () => {
  it("answer 404 (or 204, or a waiting stream) and leave no session object's storage behind", async () => {
    const token = await tokenFor(uid("user"));
    const before = await sessions();
    const cid = uid("never");
    for (const path of [
      `/v1/conversations/${cid}`,
      `/v1/conversations/${cid}/messages`,
      `/v1/conversations/${cid}/usage`,
      `/v1/conversations/${cid}/bootstrap`,
      `/v1/conversations/${cid}/turns/t1`,
      `/v1/chat/${cid}/messages`,
    ]) {
      const res = await api(path, { token });
      expect({ path, status: res.status, code: (await json(res)).error?.code }).toEqual({
        path,
        status: 404,
        code: "conversation_not_found",
      });
    }
    expect((await api(`/v1/chat/${cid}/stream`, { token })).status).toBe(204);
    // The event stream answers and waits, as for an empty log.
    const stream = await api(`/v1/conversations/${cid}/events`, { token });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("retry: 2000\n\n");
    await reader.cancel();
    expect(await sessions()).toBe(before);
  });

  it("a cursor into a conversation that is gone (deleted elsewhere) is reset, as a cursor ahead of an empty log", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "soon gone");
    await waitForTurn(token, cid, turnId);
    expect((await api(`/v1/conversations/${cid}`, { token, method: "DELETE" })).status).toBe(200);
    const before = await sessions();
    const stream = await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": "12" } });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = "";
    while (!text.includes("stream.reset")) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('"reason":"cursor_ahead"');
    await reader.cancel();
    expect(await sessions()).toBe(before);
  });

  it("a stream opened before the conversation's first turn waits on the user's object (no asking again) and gets that turn once it exists", async () => {
    const user = uid("user");
    const token = await tokenFor(user);
    const cid = uid("conv");
    const stream = await api(`/v1/conversations/${cid}/events`, { token });
    expect(stream.status).toBe(200);
    // The wait is one socket the user's object holds (it hibernates with it), tagged with the id.
    const userObject = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(secret, user)));
    const waiting = () =>
      runInDurableObject(userObject, (_o: UserObject, state) => state.getWebSockets(`await:${cid}`).length);
    await until(async () => (await waiting()) === 1);
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "first")).status).toBe(202);
    const { events } = await collect(stream, isTurnEnd, { timeoutMs: 10_000 });
    expect(events[0]).toMatchObject({ seq: 1, type: "turn.accepted", turnId });
    expect(events.at(-1)!.type).toBe("turn.completed");
    // The conversation in the index released it.
    expect(await waiting()).toBe(0);
  });

  it("a stream waiting for a conversation ends when the account is deleted", async () => {
    const token = await tokenFor(uid("user"));
    const stream = await api(`/v1/conversations/${uid("conv")}/events`, { token });
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("retry: 2000\n\n");
    expect((await api("/v1/me", { token, method: "DELETE" })).status).toBeLessThan(300);
    let read = await reader.read();
    while (!read.done) read = await reader.read();
    expect(read.done).toBe(true);
  });
});
