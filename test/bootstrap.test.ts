/**
 * GET /v1/conversations/:cid/bootstrap (docs/api.md#opening-a-conversation): what a page needs
 * before it follows a conversation's stream, in one request instead of five; and GET …/events?snapshot=1,
 * the same content as the stream's first event, then every event after it (what the chat page opens with). It answers exactly what
 * the separate routes answer (summary, messages, branches, usage) and a stream token that opens this
 * conversation's events and no other's; a conversation the user does not have is a 404 like theirs.
 */
import { describe, expect, it } from "vitest";
import { api, collect, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

async function finished(token: string, cid: string, message: string, extra: Record<string, unknown> = {}) {
  const turnId = uid("t");
  expect((await sendTurn(token, cid, turnId, message, extra)).status).toBe(202);
  expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
  return turnId;
}

describe("GET …/bootstrap", () => {
  it("answers the summary, messages, branches and usage as their own routes do, with an ask held open", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await finished(token, cid, "first");
    // A second branch (a regenerate of the first answer), then a turn that waits on an ask: held
    // still, nothing changes between the reads below.
    await finished(token, cid, "first", { parentTurnId: null });
    const asking = uid("t");
    expect((await sendTurn(token, cid, asking, "set it up [ask]")).status).toBe(202);
    await collect(await api(`/v1/conversations/${cid}/events`, { token }), (e) => e.type === "interaction.requested");

    const res = await api(`/v1/conversations/${cid}/bootstrap`, { token });
    expect(res.status).toBe(200);
    const { streamToken, ...shown } = await json(res);
    const path = `/v1/conversations/${cid}`;
    const separate = {
      summary: await json(await api(path, { token })),
      messages: await json(await api(`${path}/messages`, { token })),
      branches: await json(await api(`${path}/branches`, { token })),
      usage: await json(await api(`${path}/usage`, { token })),
    };
    expect(shown).toEqual(separate);
    // What the comparison covers: two branches (the second active), the open ask, the running turn waiting for it.
    expect(shown.branches.branches).toHaveLength(2);
    expect(shown.summary.interactions).toHaveLength(1);
    expect(shown.summary.activeTurn).toMatchObject({ turnId: asking, waitingFor: "awaiting_question" });
    expect(shown.messages.lastEventId).toBe(shown.summary.lastEventId);
    expect(shown.messages.messages.some((m: { turnId: string }) => m.turnId === asking)).toBe(true);

    // The stream token opens this conversation's events, strictly after the messages' last event.
    expect(streamToken).toMatchObject({ expiresIn: 300 });
    const events = await api(`${streamToken.eventsUrl}&after=${shown.messages.lastEventId - 1}`);
    expect(events.status).toBe(200);
    const { events: read } = await collect(events, () => true);
    expect(read[0]!.seq).toBe(shown.messages.lastEventId);
    // …and no other conversation's.
    const other = await api(`/v1/conversations/${uid("conv")}/events?access_token=${streamToken.token}`);
    expect(other.status).toBe(401);
    expect((await json(other)).error.code).toBe("token_claim_invalid");
    await api(`${path}/cancel`, { token, body: { operationId: uid("op") } });
  });

  it("refuses a conversation the user does not have (404), another user's included, and a request without a token (401)", async () => {
    const owner = await tokenFor(uid("user"));
    const cid = uid("conv");
    await finished(owner, cid, "mine");
    const stranger = await tokenFor(uid("user"));
    for (const token of [owner, stranger]) {
      const unknown = await api(`/v1/conversations/${token === owner ? uid("never") : cid}/bootstrap`, { token });
      expect(unknown.status).toBe(404);
      expect((await json(unknown)).error.code).toBe("conversation_not_found");
    }
    const anonymous = await api(`/v1/conversations/${cid}/bootstrap`);
    expect(anonymous.status).toBe(401);
    await anonymous.arrayBuffer();
    const bad = await api("/v1/conversations/bad%20id/bootstrap", { token: owner });
    expect(bad.status).toBe(400);
    expect((await json(bad)).error.code).toBe("invalid_request");
  });
});

describe("GET …/events?snapshot=1", () => {
  it("opens with the bootstrap's content as its first event, then every event after it, live, once", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await finished(token, cid, "first");
    // A turn held on an ask: nothing changes until it is answered below.
    const asking = uid("t");
    expect((await sendTurn(token, cid, asking, "set it up [ask]")).status).toBe(202);
    await collect(
      await api(`/v1/conversations/${cid}/events`, { token }),
      (e) => e.type === "turn.waiting" && (e.data as { waitingFor?: string }).waitingFor === "awaiting_question",
    );
    const { streamToken: _, ...bootstrap } = await json(await api(`/v1/conversations/${cid}/bootstrap`, { token }));

    const res = await api(`/v1/conversations/${cid}/events?snapshot=1`, { token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reading = collect(res, (e) => e.type === "turn.cancelled");
    await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    const { frames, events } = await reading;
    const snapshot = frames.find((f) => f.data !== undefined)!;
    expect(snapshot.event).toBe("conversation.snapshot");
    const last = bootstrap.messages.lastEventId;
    expect(snapshot.id).toBe(String(last));
    expect(JSON.parse(snapshot.data!)).toEqual({ type: "conversation.snapshot", data: bootstrap });
    // Then exactly what a stream strictly after the snapshot's last event brings.
    const after = events.filter((e) => e.type !== "conversation.snapshot");
    expect(after[0]!.seq).toBeGreaterThan(last);
    const { events: plain } = await collect(
      await api(`/v1/conversations/${cid}/events?after=${last}`, { token }),
      (e) => e.type === "turn.cancelled",
    );
    expect(after.map((e) => e.seq)).toEqual(plain.map((e) => e.seq));
  });

  it("a reconnect's Last-Event-ID resumes without the snapshot", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await finished(token, cid, "first");
    const res = await api(`/v1/conversations/${cid}/events?snapshot=1`, {
      token,
      headers: { "last-event-id": "1" },
    });
    const { frames, events } = await collect(res, (e) => e.type === "turn.completed");
    expect(frames.some((f) => f.event === "conversation.snapshot")).toBe(false);
    expect(events[0]!.seq).toBe(2);
  });

  it("refuses a conversation the user does not have (404), a bad snapshot value and one with a cursor or a branch (400)", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await finished(token, cid, "mine");
    const unknown = await api(`/v1/conversations/${uid("never")}/events?snapshot=1`, { token });
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error.code).toBe("conversation_not_found");
    for (const query of ["snapshot=2", "snapshot=1&after=0", "snapshot=1&branch=0"]) {
      const bad = await api(`/v1/conversations/${cid}/events?${query}`, { token });
      expect(bad.status).toBe(400);
      expect((await json(bad)).error.code).toBe("invalid_request");
    }
  });
});
