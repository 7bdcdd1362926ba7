/**
 * Webhooks through the public API (docs/webhooks.md#webhooks), delivered to a real HTTP receiver on
 * loopback (./receiver.mjs) that verifies each delivery with the `standardwebhooks` package.
 * This project's bindings (vitest.config.ts) make retries come after 100–400 ms and give up
 * after 4 s, with a 1.5 s timeout per attempt.
 */
import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { deriveOwnerKey, deriveSessionId } from "../../src/auth/ids";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";
import {
  bindings,
  completedTurn,
  createWebhook,
  DOWN,
  deliveries,
  heldOpen,
  holding,
  inbox,
  RECEIVER,
  subscribed,
  until,
} from "./support";

describe("the endpoints", () => {
  it("create shows the secret once; list and read never do; delete forgets the endpoint", async () => {
    const token = await tokenFor(uid("user"));
    const created = await createWebhook(token, {
      url: `${RECEIVER}/hooks/crud`,
      events: ["turn.completed", "interaction.requested"],
      description: "my phone",
    });
    expect(created).toMatchObject({
      id: expect.stringMatching(/^wh_[0-9a-f]{32}$/),
      url: `${RECEIVER}/hooks/crud`,
      events: ["turn.completed", "interaction.requested"],
      description: "my phone",
      secretRotatedAt: null,
      previousSecretExpiresAt: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = await json(await api("/v1/webhooks", { token }));
    expect(listed.webhooks).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(created.secret.slice(6));
    const one = await json(await api(`/v1/webhooks/${created.id}`, { token }));
    expect(one.secret).toBeUndefined();
    expect(one.id).toBe(created.id);
    // Another user's endpoint is not found.
    const other = await tokenFor(uid("user"));
    expect((await api(`/v1/webhooks/${created.id}`, { token: other })).status).toBe(404);
    expect((await api(`/v1/webhooks/${created.id}`, { token: other, method: "DELETE" })).status).toBe(404);
    expect(await json(await api(`/v1/webhooks/${created.id}`, { token, method: "DELETE" }))).toEqual({ deleted: true });
    const gone = await api(`/v1/webhooks/${created.id}`, { token });
    expect(gone.status).toBe(404);
    expect((await json(gone)).error.code).toBe("webhook_not_found");
    expect((await json(await api("/v1/webhooks", { token }))).webhooks).toEqual([]);
  });

  it("bad input is a 4xx naming the problem, and nothing is stored", async () => {
    const token = await tokenFor(uid("user"));
    const cases: Array<[unknown, number, string, string]> = [
      [{ url: `${RECEIVER}/hooks/x`, events: ["turn.exploded"] }, 400, "invalid_request", "events.0"],
      [{ url: `${RECEIVER}/hooks/x`, events: [] }, 400, "invalid_request", "at least one event"],
      [{ url: `${RECEIVER}/hooks/x`, events: ["turn.completed", "turn.completed"] }, 400, "invalid_request", "twice"],
      [
        { url: `${RECEIVER}/hooks/x`, events: ["turn.completed"], secret: "mine" },
        400,
        "invalid_request",
        "unknown field",
      ],
      [{ events: ["turn.completed"] }, 400, "invalid_request", "url"],
      [{ url: "not a url", events: ["turn.completed"] }, 422, "webhook_target_refused", "not an absolute URL"],
      [{ url: "http://example.com/hook", events: ["turn.completed"] }, 422, "webhook_target_refused", "https"],
      [{ url: "ftp://example.com/hook", events: ["turn.completed"] }, 422, "webhook_target_refused", "https"],
      [{ url: "https://10.1.2.3/hook", events: ["turn.completed"] }, 422, "webhook_target_refused", "private"],
      [
        { url: "https://169.254.169.254/latest/meta-data", events: ["turn.completed"] },
        422,
        "webhook_target_refused",
        "metadata",
      ],
      [
        { url: "https://[::ffff:192.168.0.1]/hook", events: ["turn.completed"] },
        422,
        "webhook_target_refused",
        "private",
      ],
      [{ url: "https://[fe80::1]/hook", events: ["turn.completed"] }, 422, "webhook_target_refused", "link-local"],
      [
        { url: "https://printer.local/hook", events: ["turn.completed"] },
        422,
        "webhook_target_refused",
        "local-network name",
      ],
      [
        { url: "https://user:pw@example.com/hook", events: ["turn.completed"] },
        422,
        "webhook_target_refused",
        "credentials",
      ],
    ];
    for (const [body, status, code, says] of cases) {
      const res = await api("/v1/webhooks", { token, body });
      const answer = await json(res);
      expect({ body, status: res.status, code: answer.error.code }).toEqual({ body, status, code });
      expect(answer.error.message).toContain(says);
    }
    expect(
      (
        await api("/v1/webhooks", {
          token,
          body: "url=x",
          headers: { "content-type": "application/x-www-form-urlencoded" },
        })
      ).status,
    ).toBe(415);
    expect((await api("/v1/webhooks/wh_nope", { token })).status).toBe(400);
    expect((await api("/v1/webhooks")).status).toBe(401);
    expect((await json(await api("/v1/webhooks", { token }))).webhooks).toEqual([]);
  });

  it("a user has at most 10 endpoints", async () => {
    const token = await tokenFor(uid("user"));
    for (let i = 0; i < 10; i++)
      await createWebhook(token, { url: `${RECEIVER}/hooks/limit-${i}`, events: ["turn.completed"] });
    const res = await api("/v1/webhooks", {
      token,
      body: { url: `${RECEIVER}/hooks/limit-10`, events: ["turn.completed"] },
    });
    expect(res.status).toBe(409);
    expect((await json(res)).error.code).toBe("webhook_limit_reached");
  });
});

describe("deliveries", () => {
  it("a finished turn is delivered, signed as Standard Webhooks say, with ids, the status and links and nothing else", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"]);
    const { cid, turnId, turn } = await completedTurn(token, "a secret plan: hello webhooks");
    expect(turn.status).toBe("completed");
    const [received] = await until("the delivery", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    expect(received!.verified).toBe(true);
    expect(received!.webhookId).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(received!.payload).toEqual({
      type: "turn.completed",
      timestamp: expect.any(String),
      data: {
        conversationId: cid,
        conversationTitle: expect.any(String),
        turnId,
        status: "completed",
        links: {
          conversation: `http://127.0.0.1:8787/?c=${cid}`,
          api: `http://127.0.0.1:8787/v1/conversations/${cid}`,
        },
      },
    });
    // The answer's text, the account key and the endpoint's secret are nowhere in what was sent.
    expect(received!.body).not.toContain(turn.result.text);
    expect(received!.body).not.toContain(endpoint.secret);
    const [log] = await until("the delivery recorded", async () => {
      const all = await deliveries(token, endpoint.id);
      return all[0]?.status === "delivered" ? all : undefined;
    });
    expect(log).toMatchObject({
      webhookId: received!.webhookId,
      type: "turn.completed",
      status: "delivered",
      attempts: 1,
      lastStatus: 204,
      lastError: null,
      nextAttemptAt: null,
    });
  });

  it("an ask waiting and an ask expired are delivered with its kind and title, never an answer", async () => {
    const { token, name } = await subscribed(["interaction.requested", "interaction.expired"]);
    const { cid } = await completedTurn(token, "expire [ask-timeout]");
    const received = await until("both deliveries", async () => {
      const all = await inbox(name);
      return all.length >= 2 ? all : undefined;
    });
    expect(received.every((r) => r.verified)).toBe(true);
    const [asked, expired] = received.map((r) => r.payload);
    expect(asked).toMatchObject({
      type: "interaction.requested",
      data: { conversationId: cid, interactionId: expect.any(String), kind: "question", title: expect.any(String) },
    });
    expect(expired).toMatchObject({
      type: "interaction.expired",
      data: { conversationId: cid, interactionId: asked.data.interactionId, kind: "question", title: asked.data.title },
    });
    for (const r of received)
      expect(Object.keys(r.payload.data).sort()).toEqual([
        "conversationId",
        "conversationTitle",
        "interactionId",
        "kind",
        "links",
        "title",
        "turnId",
      ]);
  });

  it("only the events an endpoint asked for reach it, and only those after it was created", async () => {
    const { token, name, endpoint } = await subscribed(["turn.failed"]);
    await completedTurn(token, "a plain turn");
    await completedTurn(token, "this one fails [fail]");
    const [received] = await until("the failed turn", async () =>
      (await inbox(name)).length ? inbox(name) : undefined,
    );
    expect(received!.payload).toMatchObject({
      type: "turn.failed",
      data: { status: "failed", errorCode: expect.any(String) },
    });
    expect(await inbox(name)).toHaveLength(1);
    expect((await deliveries(token, endpoint.id)).map((d) => d.type)).toEqual(["turn.failed"]);
  });

  it("a receiver answering 500 gets the same webhook-id again until it answers 2xx", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"], { mode: "fail", status: 500 });
    await completedTurn(token);
    await until("two failed attempts", async () => ((await inbox(name)).length >= 2 ? true : undefined));
    const failing = (await deliveries(token, endpoint.id))[0];
    expect(failing).toMatchObject({
      status: "pending",
      lastStatus: 500,
      lastError: expect.stringContaining("the receiver answered 500"),
    });
    expect(failing.attempts).toBeGreaterThanOrEqual(2);
    await inbox(name, { mode: "ok" });
    const done = await until("the delivery", async () => {
      const [d] = await deliveries(token, endpoint.id);
      return d.status === "delivered" ? d : undefined;
    });
    const received = await inbox(name);
    expect(new Set(received.map((r) => r.webhookId))).toEqual(new Set([done.webhookId]));
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(received.every((r) => r.verified)).toBe(true);
    expect(done.attempts).toBe(received.length);
  });

  it("a receiver that answers 200 and leaves its body open has the delivery: once, not retried until the give-up", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"], { mode: "open" });
    await completedTurn(token);
    const done = await until("the delivery", async () => {
      const [d] = await deliveries(token, endpoint.id);
      return d?.status === "delivered" ? d : undefined;
    });
    expect(done).toMatchObject({ attempts: 1, lastStatus: 200, lastError: null });
    const received = await inbox(name);
    expect(received).toHaveLength(1);
    expect(received[0]!.verified).toBe(true);
    // The sender let go of the answer it did not need to read.
    await until("the answer let go", async () => ((await heldOpen(name)) === 0 ? true : undefined));
  });

  it("a receiver that is down is retried, then given up after the give-up time and marked so", async () => {
    const token = await tokenFor(uid("user"));
    const endpoint = await createWebhook(token, { url: `${DOWN}/hooks/nobody`, events: ["turn.completed"] });
    await completedTurn(token);
    const failed = await until(
      "the give-up",
      async () => {
        const [d] = await deliveries(token, endpoint.id);
        return d?.status === "failed" ? d : undefined;
      },
      12_000,
    );
    expect(failed).toMatchObject({
      status: "failed",
      lastStatus: null,
      lastError: expect.stringContaining("could not reach the receiver"),
      nextAttemptAt: null,
      givenUpAt: expect.any(String),
    });
    expect(failed.attempts).toBeGreaterThan(1);
  });

  it("a receiver that answers 410 is given up at once", async () => {
    const { token, endpoint } = await subscribed(["turn.completed"], { mode: "fail", status: 410 });
    await completedTurn(token);
    const failed = await until("the give-up", async () => {
      const [d] = await deliveries(token, endpoint.id);
      return d?.status === "failed" ? d : undefined;
    });
    expect(failed).toMatchObject({ attempts: 1, lastStatus: 410 });
  });

  it("a slow receiver times out and is retried, and never slows a turn: the next turn ends while it holds the request", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"], { mode: "slow", delayMs: 10_000 });
    const { cid } = await completedTurn(token);
    await until("the held attempt", async () => ((await holding(name)) > 0 ? true : undefined));
    // The receiver holds every attempt (each retry after a timeout too): another turn of the same
    // user runs to its end meanwhile, and the receiver is still holding one when it has.
    const second = uid("turn");
    expect((await sendTurn(token, cid, second, "and again")).status).toBe(202);
    expect((await waitForTurn(token, cid, second)).status).toBe("completed");
    expect(await holding(name)).toBeGreaterThan(0);
    expect((await deliveries(token, endpoint.id)).some((d) => d.status === "delivered")).toBe(false);
    const timedOut = await until("the timeout", async () => {
      const all = await deliveries(token, endpoint.id);
      return all.find((d) => d.lastError?.includes("no answer within 1500 ms"));
    });
    expect(timedOut.status).toBe("pending");
    await inbox(name, { mode: "ok" });
    await until("both delivered", async () =>
      (await deliveries(token, endpoint.id)).every((d) => d.status === "delivered") ? true : undefined,
    );
  });

  it("a redirect is followed to a target that passes the checks, and refused to a private or metadata address", async () => {
    const target = await subscribed(["turn.completed"]);
    const { token, name, endpoint } = await subscribed(["turn.completed"], {
      mode: "redirect",
      location: "https://169.254.169.254/latest/meta-data/",
    });
    await completedTurn(token);
    const refused = await until("the refused redirect", async () => {
      const [d] = await deliveries(token, endpoint.id);
      return d?.lastError ? d : undefined;
    });
    expect(refused).toMatchObject({
      status: "pending",
      lastStatus: null,
      lastError: expect.stringContaining("redirect refused: the location must not be a link-local or metadata address"),
    });
    // Pointed at another inbox (loopback is allowed in local development): followed, and verified there.
    await inbox(target.name, { secrets: [endpoint.secret] });
    await inbox(name, { location: `${RECEIVER}/hooks/${target.name}` });
    const done = await until("the delivery", async () => {
      const [d] = await deliveries(token, endpoint.id);
      return d?.status === "delivered" ? d : undefined;
    });
    const arrived = await inbox(target.name);
    expect(arrived.map((r) => [r.webhookId, r.verified])).toEqual([[done.webhookId, true]]);
  });

  it("a restart of every object between attempts loses nothing: the same webhook-id arrives", {
    timeout: 40_000,
  }, async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"], { mode: "fail", status: 503 });
    await completedTurn(token);
    const first = await until("a failed attempt", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    await abortAllDurableObjects();
    await inbox(name, { mode: "ok" });
    // An attempt cut off mid-flight comes due again at its check-back time (the attempt's timeout
    // plus 5 s), later than a retry: the wait is long enough for that on a loaded machine.
    const done = await until(
      "the delivery",
      async () => {
        const [d] = await deliveries(token, endpoint.id);
        return d?.status === "delivered" ? d : undefined;
      },
      30_000,
    );
    expect(done.webhookId).toBe(first[0]!.webhookId);
    expect((await inbox(name)).at(-1)).toMatchObject({ webhookId: first[0]!.webhookId, verified: true });
  });
});

describe("an attempt cut off", () => {
  it("mid-flight by a restart (the receiver still holding it) is made again at its check-back time, same webhook-id, even past the give-up time", {
    timeout: 40_000,
  }, async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"], { mode: "slow", delayMs: 5000 });
    await completedTurn(token);
    const [held] = await until("the held attempt", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    await abortAllDurableObjects();
    await inbox(name, { mode: "ok" });
    // The check-back time is the attempt's timeout (1.5 s) plus 5 s: past this project's 4 s give-up.
    const done = await until(
      "the delivery",
      async () => {
        const [d] = await deliveries(token, endpoint.id);
        return d?.status !== "pending" ? d : undefined;
      },
      30_000,
    );
    expect(done).toMatchObject({ status: "delivered", attempts: 2, webhookId: held!.webhookId });
    expect((await inbox(name)).map((r) => [r.webhookId, r.verified])).toEqual([
      [held!.webhookId, true],
      [held!.webhookId, true],
    ]);
  });
});

describe("the hand-off from the conversation", () => {
  it("an event handed over again (the session restarted before it knew it was taken) makes no second delivery", async () => {
    const { user, token, name, endpoint } = await subscribed(["turn.completed"]);
    const { cid } = await completedTurn(token);
    await until("the delivery", async () => ((await inbox(name)).some((r) => r.verified) ? true : undefined));
    const sessionId = await deriveSessionId(bindings.SESSION_ID_SECRET!, user, cid);
    // A new stub each time: one made before abortAllDurableObjects() is dead after it.
    const session = () => env.SESSIONS.get(env.SESSIONS.idFromName(sessionId));
    const cursor = () =>
      runInDurableObject(
        session(),
        (_i, state) =>
          state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'webhooksHandedOff'").one()
            .value,
      );
    const handedOff = await cursor();
    expect(Number(handedOff)).toBeGreaterThan(0);
    // As if the user object's answer had been lost: the cursor is back before the event, and the object restarts.
    await runInDurableObject(session(), (_i, state) =>
      state.storage.sql.exec("UPDATE meta SET value = '0' WHERE key = 'webhooksHandedOff'"),
    );
    await abortAllDurableObjects();
    expect((await api(`/v1/conversations/${cid}`, { token })).status).toBe(200);
    await until("the hand-off again", async () => ((await cursor()) === handedOff ? true : undefined));
    const log = await deliveries(token, endpoint.id);
    expect(log.map((d) => d.status)).toEqual(["delivered"]);
    expect(await inbox(name)).toHaveLength(1);
  });
});

describe("the signing secret", () => {
  it("rotated with a grace period, deliveries carry both signatures: either secret verifies", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"]);
    const rotated = await json(
      await api(`/v1/webhooks/${endpoint.id}/rotate-secret`, { token, body: { graceSeconds: 600 } }),
    );
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    expect(rotated.previousSecretExpiresAt).toEqual(expect.any(String));
    // The receiver knows only the old secret: the delivery still verifies.
    await completedTurn(token);
    const [old] = await until("the delivery", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    expect(old!.verified).toBe(true);
    expect(old!.signature.split(" ")).toHaveLength(2);
    // And with only the new one.
    await inbox(name, { secrets: [rotated.secret], received: [] });
    await completedTurn(token);
    const [fresh] = await until("the second delivery", async () =>
      (await inbox(name)).length ? inbox(name) : undefined,
    );
    expect(fresh!.verified).toBe(true);
  });

  it("rotated with no grace period, the old secret no longer verifies", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"]);
    const rotated = await json(
      await api(`/v1/webhooks/${endpoint.id}/rotate-secret`, { token, body: { graceSeconds: 0 } }),
    );
    expect(rotated.previousSecretExpiresAt).toBeNull();
    // The receiver still holds the old secret only: it refuses (401), the delivery is retried.
    await completedTurn(token);
    const [refused] = await until("the attempt", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    expect(refused!.verified).toBe(false);
    expect(refused!.signature.split(" ")).toHaveLength(1);
    await inbox(name, { secrets: [rotated.secret] });
    await until("the delivery", async () => ((await inbox(name)).some((r) => r.verified) ? true : undefined));
    expect((await api(`/v1/webhooks/${endpoint.id}/rotate-secret`, { token, body: { graceSeconds: -1 } })).status).toBe(
      400,
    );
  });
});

describe("the signing secret's grace period", () => {
  it("ends: once past it, the rotated-out secret no longer signs, and the endpoint no longer shows it", async () => {
    const { token, name, endpoint } = await subscribed(["turn.completed"]);
    const rotated = await json(
      await api(`/v1/webhooks/${endpoint.id}/rotate-secret`, { token, body: { graceSeconds: 1 } }),
    );
    const expires = Date.parse(rotated.previousSecretExpiresAt);
    expect(expires).toBeGreaterThan(Date.now() - 1000);
    // Past the grace period (no clock to move: its second is waited out).
    while (Date.now() <= expires + 50) await new Promise((r) => setTimeout(r, 50));
    expect((await json(await api(`/v1/webhooks/${endpoint.id}`, { token }))).previousSecretExpiresAt).toBeNull();
    // The receiver still holds only the old secret: the delivery carries the new one's signature alone.
    await completedTurn(token);
    const [refused] = await until("the attempt", async () => ((await inbox(name)).length ? inbox(name) : undefined));
    expect(refused!.verified).toBe(false);
    expect(refused!.signature.split(" ")).toHaveLength(1);
    await inbox(name, { secrets: [rotated.secret] });
    await until("the delivery", async () => ((await inbox(name)).some((r) => r.verified) ? true : undefined));
  });
});

describe("secrets at rest", () => {
  it("no row of the user's object holds a signing secret, current or previous, in clear", async () => {
    const { user, token, name, endpoint } = await subscribed(["turn.completed"]);
    const rotated = await json(await api(`/v1/webhooks/${endpoint.id}/rotate-secret`, { token, body: {} }));
    await inbox(name, { secrets: [rotated.secret] });
    await completedTurn(token);
    await until("the delivery", async () => ((await inbox(name)).some((r) => r.verified) ? true : undefined));
    const stub = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(bindings.SESSION_ID_SECRET!, user)));
    const dump = await runInDurableObject(stub, (_instance, state) => {
      const tables = state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'")
        .toArray();
      return tables
        .map(({ name }) => JSON.stringify(state.storage.sql.exec(`SELECT * FROM "${name}"`).toArray()))
        .join("\n");
    });
    expect(dump).toContain(endpoint.id);
    for (const secret of [endpoint.secret, rotated.secret]) {
      expect(dump).not.toContain(secret.slice(6));
      expect(dump).not.toContain(secret.slice(6, 26));
    }
  });
});

describe("forgetting", () => {
  it("a deleted endpoint's pending deliveries are never sent", async () => {
    const { user, token, name, endpoint } = await subscribed(["turn.completed"], { mode: "fail", status: 500 });
    await completedTurn(token);
    await until("a failed attempt", async () => ((await inbox(name)).length ? true : undefined));
    expect(await deliveryRows(user)).toBe(1);
    expect((await api(`/v1/webhooks/${endpoint.id}`, { token, method: "DELETE" })).status).toBe(200);
    // Nothing is left to send: the user object holds no delivery at all.
    expect(await deliveryRows(user)).toBe(0);
  });

  it("forgetWebhooks (account deletion) forgets every endpoint and pending delivery of the user", async () => {
    const { user, token, name } = await subscribed(["turn.completed"], { mode: "fail", status: 500 });
    await createWebhook(token, { url: `${RECEIVER}/hooks/${name}-2`, events: ["turn.failed"] });
    await completedTurn(token);
    await until("a failed attempt", async () => ((await inbox(name)).length ? true : undefined));
    const ownerKey = await deriveOwnerKey(bindings.SESSION_ID_SECRET!, user);
    const stub = env.USERS.get(env.USERS.idFromName(ownerKey));
    expect(await stub.forgetWebhooks()).toEqual({ endpoints: 2, deliveries: 1 });
    expect(await stub.forgetWebhooks()).toEqual({ endpoints: 0, deliveries: 0 });
    expect((await json(await api("/v1/webhooks", { token }))).webhooks).toEqual([]);
    expect(await deliveryRows(user)).toBe(0);
  });
});

/** How many delivery rows the user's object holds. */
async function deliveryRows(user: string): Promise<number> {
  const stub = env.USERS.get(env.USERS.idFromName(await deriveOwnerKey(bindings.SESSION_ID_SECRET!, user)));
  return runInDurableObject(
    stub,
    (_instance, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries").one().n,
  );
}
