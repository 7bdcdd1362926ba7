import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
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
    for (const answer of answers) expect(answer).toMatchObject({ ok: false, refusal: { code: "conversation_not_found" } });
    expect(await stub.getTurn("t1")).toMatchObject({ ok: false, refusal: { code: "turn_not_found" } });
    const tables = await runInDurableObject(stub, (_instance: SessionObject, state) => state.storage.sql.exec("SELECT name FROM sqlite_master").toArray());
    expect(tables).toEqual([]);
  });
});
