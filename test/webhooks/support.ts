/**
 * What the webhook tests share: the receiver's inboxes (./receiver.mjs, which verifies with the
 * `standardwebhooks` package), polling, and endpoints created through the public API.
 */
import { env } from "cloudflare:test";
import { expect } from "vitest";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

export const bindings = env as unknown as Record<string, string>;
export const RECEIVER = bindings.WEBHOOK_RECEIVER_URL!;
export const DOWN = bindings.WEBHOOK_DOWN_URL!;

export interface Received {
  webhookId: string;
  timestamp: string;
  signature: string;
  body: string;
  verified: boolean;
  payload: any;
  error: string | null;
}

export async function inbox(name: string, settings?: Record<string, unknown>): Promise<Received[]> {
  const res = await fetch(
    `${RECEIVER}/_control/${name}`,
    settings ? { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify(settings) } : {},
  );
  return ((await res.json()) as { received: Received[] }).received;
}

/** How many requests the inbox holds unanswered now. */
export async function holding(name: string): Promise<number> {
  return ((await (await fetch(`${RECEIVER}/_control/${name}`)).json()) as { holding: number }).holding;
}

/** How many answers the inbox holds open now (mode "open"): their sender has not let go. */
export async function heldOpen(name: string): Promise<number> {
  return ((await (await fetch(`${RECEIVER}/_control/${name}`)).json()) as { open: number }).open;
}

/** Polls until `check` answers a value (not undefined); fails after `timeoutMs` naming `what`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function createWebhook(token: string, body: Record<string, unknown>) {
  const res = await api("/v1/webhooks", { token, body });
  expect(res.status, await res.clone().text()).toBe(201);
  return json(res);
}

/** A user with one endpoint on a fresh inbox whose secret the receiver knows. */
export async function subscribed(events: string[], settings: Record<string, unknown> = {}) {
  const user = uid("user");
  const token = await tokenFor(user);
  const name = uid("inbox").replace(/[^\w-]/g, "-");
  const endpoint = await createWebhook(token, { url: `${RECEIVER}/hooks/${name}`, events });
  await inbox(name, { secrets: [endpoint.secret], ...settings });
  return { user, token, name, endpoint };
}

export async function deliveries(token: string, id: string): Promise<any[]> {
  const res = await api(`/v1/webhooks/${id}/deliveries`, { token });
  expect(res.status).toBe(200);
  return (await json(res)).deliveries;
}

export async function completedTurn(token: string, message = "hello webhooks") {
  const cid = uid("conv");
  const turnId = uid("turn");
  expect((await sendTurn(token, cid, turnId, message)).status).toBe(202);
  const turn = await waitForTurn(token, cid, turnId);
  return { cid, turnId, turn };
}
