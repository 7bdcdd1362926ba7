// PATCH /v1/conversations/:cid { title } (README.md#public-api-v1): a conversation renamed is listed and
// summarised under its new title, which later turns keep (the first message's title never comes
// back); bad titles are 400s naming the field; a conversation the user does not have is a 404 that
// changes nothing.
import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { migrateUserSchema } from "../src/user/schema";
import type { UserObject } from "../src/user/user";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const rename = (token: string, cid: string, body: unknown, headers?: Record<string, string>) =>
  api(`/v1/conversations/${cid}`, { token, method: "PATCH", body, ...(headers ? { headers } : {}) });

const listed = async (token: string) =>
  (await json(await api("/v1/conversations", { token }))).conversations as Array<{
    conversationId: string;
    title: string;
  }>;

async function conversationWithOneTurn(message = "the first message") {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  await sendTurn(token, cid, turnId, message);
  await waitForTurn(token, cid, turnId);
  return { token, cid };
}

describe("renaming a conversation", () => {
  it("sets the title listed and summarised; later turns keep it", async () => {
    const { token, cid } = await conversationWithOneTurn();
    expect((await listed(token))[0]?.title).toBe("the first message");

    const res = await rename(token, cid, { title: "  Release notes draft  " });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ conversationId: cid, title: "Release notes draft", state: "idle" });
    expect((await listed(token)).map((c) => c.title)).toEqual(["Release notes draft"]);
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).title).toBe("Release notes draft");

    // A new turn touches the list (state, last event) but not the title.
    const next = uid("turn");
    await sendTurn(token, cid, next, "another message");
    await waitForTurn(token, cid, next);
    expect((await listed(token))[0]).toMatchObject({
      conversationId: cid,
      title: "Release notes draft",
      state: "idle",
    });
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).title).toBe("Release notes draft");

    // Renamed again: the latest wins.
    expect((await json(await rename(token, cid, { title: "Release notes v2" }))).title).toBe("Release notes v2");
    expect((await listed(token))[0]?.title).toBe("Release notes v2");
  });

  it("keeps the new title when renamed while a turn runs", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "a slow one [slow]");
    expect((await rename(token, cid, { title: "Renamed mid-turn" })).status).toBe(200);
    await waitForTurn(token, cid, turnId);
    expect((await listed(token))[0]).toMatchObject({ title: "Renamed mid-turn", state: "idle" });
  });

  it("refuses bad titles with 400 invalid_request naming the title, and changes nothing", async () => {
    const { token, cid } = await conversationWithOneTurn();
    for (const body of [
      { title: "" },
      { title: "   " },
      { title: "x".repeat(201) },
      { title: "two\nlines" },
      { title: "a\u0007bell" },
      { title: "sep\u2028arated" },
      { title: 42 },
      {},
      { title: "ok", extra: 1 },
    ]) {
      const res = await rename(token, cid, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const { error } = await json(res);
      expect(error.code, JSON.stringify(body)).toBe("invalid_request");
      expect(error.message, JSON.stringify(body)).toMatch(/title|extra/);
    }
    expect((await rename(token, cid, "{not json")).status).toBe(400);
    expect((await rename(token, cid, "title=x", { "content-type": "text/plain" })).status).toBe(415);
    // 200 characters is the limit, and fits.
    expect((await rename(token, cid, { title: "y".repeat(200) })).status).toBe(200);
    expect((await listed(token))[0]?.title).toBe("y".repeat(200));
  });

  it("answers 404 for a conversation the user does not have, another user's included, and leaves it as it was", async () => {
    const { token: owner, cid } = await conversationWithOneTurn("the owner's title");
    const other = await tokenFor(uid("user"));
    const res = await rename(other, cid, { title: "taken over" });
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe("conversation_not_found");
    expect(await listed(other)).toEqual([]);
    expect((await listed(owner))[0]?.title).toBe("the owner's title");
    expect((await json(await api(`/v1/conversations/${cid}`, { token: owner }))).title).toBe("the owner's title");
    // One that was never created: 404 too, and nothing is created.
    const never = uid("conv");
    expect((await rename(owner, never, { title: "ghost" })).status).toBe(404);
    expect((await listed(owner)).map((c) => c.conversationId)).toEqual([cid]);
    expect((await api(`/v1/conversations/${cid}`, { method: "PATCH", body: { title: "ok" } })).status).toBe(401);
  });
});

describe("the user index before renames were kept (schema 8)", () => {
  it("upgrades to the current schema: its conversations are listed (and admitted) as before, not renamed, and a rename then holds", async () => {
    const stub = env.USERS.get(env.USERS.idFromName(uid("schema8")));
    const read = await runInDurableObject(stub, async (instance: UserObject, state) => {
      const sql = state.storage.sql;
      // The table as schema 8 left it, with one conversation.
      sql.exec("ALTER TABLE conversations DROP COLUMN renamed");
      sql.exec("ALTER TABLE conversations DROP COLUMN agent");
      sql.exec("UPDATE schema_version SET version = 8");
      sql.exec(
        "INSERT INTO conversations (conversation_id, title, state, last_event_id, created_at, updated_at) VALUES ('c-old', 'from its first message', 'idle', 3, 1, 1)",
      );
      migrateUserSchema(sql);
      const version = sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version;
      const listed = await instance.listConversations(10);
      const before = listed.map((c) => c.title);
      // Its agent is not known until its next turn says it (v11).
      const agent = listed[0]?.agent;
      const touch = {
        conversationId: "c-old",
        state: "idle" as const,
        waitingFor: null,
        lastEventId: 4,
        updatedAt: 2,
        usage: { used: 0, complete: true, provenance: "measured" as const },
      };
      await instance.touchConversation({ ...touch, title: "a touch may still set it" });
      const touched = (await instance.listConversations(10))[0]?.title;
      await instance.renameConversation("c-old", "Renamed");
      // A touch from before the rename (same log position, the old title) does not undo it.
      await instance.touchConversation({ ...touch, title: "a touch may still set it" });
      return { version, before, agent, touched, after: (await instance.listConversations(10))[0]?.title };
    });
    expect(read).toEqual({
      version: 12,
      agent: null,
      before: ["from its first message"],
      touched: "a touch may still set it",
      after: "Renamed",
    });
  });
});
