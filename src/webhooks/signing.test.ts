import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newSigningSecret, newWebhookId, openSecret, sealSecret, signatureHeader, signatureOf } from "./signing";

const SERVER_SECRET = "a-server-secret-of-more-than-32-characters";

describe("Standard Webhooks signatures", () => {
  it("a secret is whsec_ and the base64 of 32 random bytes; ids carry no dot", () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(atob(secret.slice(6))).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
    expect(newWebhookId()).toMatch(/^msg_[0-9a-f]{32}$/);
  });

  it("signs as the standardwebhooks library does, and the library verifies it", async () => {
    const secret = newSigningSecret();
    const id = newWebhookId();
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: "turn.completed", data: { turnId: "t1", text: "ünïcode ✓" } });
    const ours = await signatureOf(secret, id, timestamp, body);
    expect(ours).toBe(new Webhook(secret).sign(id, new Date(timestamp * 1000), body));
    const headers = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": ours };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace("t1", "t2"), headers)).toThrow();
    expect(() => new Webhook(newSigningSecret()).verify(body, headers)).toThrow();
  });

  it("during a rotation both secrets sign, space-separated, and either verifies", async () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const id = newWebhookId();
    const timestamp = Math.floor(Date.now() / 1000);
    const header = await signatureHeader([current, previous], id, timestamp, "{}");
    expect(header.split(" ")).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect(
        new Webhook(secret).verify("{}", {
          "webhook-id": id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": header,
        }),
      ).toEqual({});
    }
  });
});

describe("secrets at rest", () => {
  it("are sealed: the stored text holds no trace of the secret, and opens only for its endpoint and server secret", async () => {
    const secret = newSigningSecret();
    const sealed = await sealSecret(SERVER_SECRET, "wh_a", secret);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(await openSecret(SERVER_SECRET, "wh_a", sealed)).toBe(secret);
    await expect(openSecret(SERVER_SECRET, "wh_b", sealed)).rejects.toThrow();
    await expect(openSecret(`${SERVER_SECRET}-rotated`, "wh_a", sealed)).rejects.toThrow();
  });
});
