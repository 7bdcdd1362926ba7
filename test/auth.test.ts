import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

async function code(response: Response): Promise<[number, string]> {
  return [response.status, (await json(response)).error.code];
}

describe("authentication", () => {
  it("no token, a malformed header, a bad signature, an expired token, a wrong audience: 401 with a code", async () => {
    const path = `/v1/conversations/${uid("conv")}`;
    expect(await code(await api(path))).toEqual([401, "token_missing"]);
    expect(await code(await api(path, { headers: { authorization: "Basic abc" } }))).toEqual([401, "token_malformed"]);
    expect(await code(await api(path, { token: "not.a.jwt" }))).toEqual([401, "token_invalid"]);
    const forged = await tokenFor("mallory", { secret: "another-secret-that-is-long-enough-0123456789" });
    expect(await code(await api(path, { token: forged }))).toEqual([401, "token_signature_invalid"]);
    const now = Math.floor(Date.now() / 1000);
    const expired = await tokenFor("alice", { issuedAt: now - 7200, expiresAt: now - 3600 });
    expect(await code(await api(path, { token: expired }))).toEqual([401, "token_expired"]);
    const wrongAudience = await tokenFor("alice", { audience: "someone-else" });
    expect(await code(await api(path, { token: wrongAudience }))).toEqual([401, "token_claim_invalid"]);
    const noSubject = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setAudience("gateway-test")
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode("test-jwt-secret-0123456789abcdef0123456789"));
    expect(await code(await api(path, { token: noSubject }))).toEqual([401, "token_claim_invalid"]);
    // An empty or overlong sub names no user.
    for (const sub of ["", "u".repeat(257)]) {
      expect(await code(await api(path, { token: await tokenFor(sub) }))).toEqual([401, "token_claim_invalid"]);
    }
    expect((await api("/v1/conversations", { token: await tokenFor("u".repeat(256)) })).status).toBe(200);
    const noneAlg = `${btoa(JSON.stringify({ alg: "none" }))}.${btoa(JSON.stringify({ sub: "alice", aud: "gateway-test" }))}.`;
    expect((await api(path, { token: noneAlg })).status).toBe(401);
    // Every data route is behind the token.
    for (const p of ["/v1/conversations", `${path}/events`, `${path}/messages`, `${path}/turns/t1`]) {
      expect((await api(p)).status).toBe(401);
    }
    expect((await api(`${path}/turns`, { body: { turnId: "t", message: "hi" } })).status).toBe(401);
    expect((await api(path, { method: "DELETE" })).status).toBe(401);
  });

  it("user B cannot read or write user A's conversation with the same conversation id", async () => {
    const alice = await tokenFor(uid("alice"));
    const bob = await tokenFor(uid("bob"));
    const cid = uid("shared-name");
    const turnId = uid("turn");
    const a = await json(await sendTurn(alice, cid, turnId, "alice's secret plan"));
    await waitForTurn(alice, cid, turnId);

    // Bob sees nothing under the same conversation id: it is a different session.
    expect((await api(`/v1/conversations/${cid}`, { token: bob })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}/messages`, { token: bob })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}/turns/${turnId}`, { token: bob })).status).toBe(404);
    expect((await api(`/v1/conversations/${cid}`, { token: bob, method: "DELETE" })).status).toBe(404);
    expect((await json(await api("/v1/conversations", { token: bob }))).conversations).toEqual([]);

    // Bob's turn with the same ids runs in his own session and never touches Alice's.
    const b = await json(await sendTurn(bob, cid, turnId, "bob's message"));
    expect(b.executionId).not.toBe(a.executionId);
    const bobEvents = await collect(await api(`/v1/conversations/${cid}/events`, { token: bob }), isTurnEnd);
    expect(JSON.stringify(bobEvents.events)).not.toContain("alice's secret plan");
    const aliceTurn = await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token: alice }));
    expect(aliceTurn.message).toBe("alice's secret plan");
    const aliceList = await json(await api("/v1/conversations", { token: alice }));
    expect(aliceList.conversations.map((c: any) => c.conversationId)).toEqual([cid]);
  });

  it("a stream token works for EventSource on that conversation's events route, and nowhere else", async () => {
    const token = await tokenFor(uid("alice"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "hello");
    await waitForTurn(token, cid, turnId);
    const minted = await json(await api(`/v1/conversations/${cid}/stream-token`, { token, method: "POST" }));
    expect(minted.expiresIn).toBe(300);
    const stream = await api(minted.eventsUrl);
    expect(stream.status).toBe(200);
    const { events } = await collect(stream, isTurnEnd);
    expect(events.at(-1)!.turnId).toBe(turnId);
    // Not for another conversation, not on another route, not as a bearer token.
    expect((await api(`/v1/conversations/${uid("other")}/events?access_token=${minted.token}`)).status).toBe(401);
    expect((await api(`/v1/conversations/${cid}?access_token=${minted.token}`)).status).toBe(401);
    expect(await code(await api(`/v1/conversations/${cid}/events`, { token: minted.token }))).toEqual([
      401,
      "token_use_invalid",
    ]);
    // A user token is not a stream token either.
    expect(await code(await api(`/v1/conversations/${cid}/events?access_token=${token}`))).toEqual([
      401,
      "token_use_invalid",
    ]);
  });

  it("dev login issues a working token only on a loopback host", async () => {
    const login = await api("/v1/dev/login", { body: { user: "dev-user" } });
    expect(login.status).toBe(200);
    const { token } = await json(login);
    expect((await api("/v1/conversations", { token })).status).toBe(200);
    const { SELF } = await import("cloudflare:test");
    const remote = await SELF.fetch("https://gateway.example.com/v1/dev/login", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ user: "dev-user" }),
    });
    expect(remote.status).toBe(404);
    expect((await api("/v1/dev/login", { body: { user: "bad user!" } })).status).toBe(400);
  });
});
