/**
 * The user's webhook endpoints (docs/webhooks.md#webhooks): create (the signing secret is in that answer
 * only), list, read, delete, rotate the secret, and the delivery log. Mounted at `/v1/webhooks`,
 * authenticated by the app; declared once (../route-declaration.ts). The target is checked here
 * before anything is stored (../../webhooks/target.ts) and again before every attempt.
 */

import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../errors";
import { DeletedAnswer } from "../../schemas/api";
import {
  CreateWebhookBody,
  RotateWebhookSecretBody,
  WebhookDeliveriesAnswer,
  WebhookEndpointId,
  WebhookEndpointView,
  WebhookListAnswer,
  WebhookSecretAnswer,
} from "../../schemas/webhooks";
import { checkTarget } from "../../webhooks/target";
import { type AppEnv, userObject } from "../app-context";
import { invalid } from "../body";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

const BODY_MAX_BYTES = 8 * 1024;
const Limit = z.coerce.number().int().min(1).max(100).default(50).describe("How many deliveries to list, newest first");
const id = { id: WebhookEndpointId };

const user = userObject;

function endpointId(c: Context<AppEnv>): string {
  const parsed = WebhookEndpointId.safeParse(c.req.param("id"));
  if (!parsed.success) throw invalid("webhook id", parsed.error);
  return parsed.data;
}

const notFound = (id: string) => new ApiError(404, "webhook_not_found", `no webhook endpoint ${id}`);

export const webhookRoutes = new DeclaredRoutes();

webhookRoutes.serve(
  {
    method: "post",
    path: "/",
    summary: "Register a webhook endpoint for some events; the answer holds its signing secret, shown only this once",
    body: CreateWebhookBody,
    answers: { 201: json(WebhookSecretAnswer, "Created") },
    errors: [400, 401, 409, 410, 413, 415, 422],
  },
  async (c, readBody) => {
    const body = await readBody(BODY_MAX_BYTES);
    const target = checkTarget(body.url, c.get("config").local);
    if (!target.ok) throw new ApiError(422, "webhook_target_refused", `url ${target.reason}`, { field: "url" });
    const input = {
      url: target.url.href,
      events: body.events,
      ...(body.description !== undefined ? { description: body.description } : {}),
      linkOrigin: new URL(c.req.url).origin,
    };
    // The token's issue time goes with the write: an account deleted since this request began takes none
    // (docs/api.md#deleting-an-account).
    const outcome = unwrapRpc(await user(c).createWebhook(input, c.get("identity").issuedAt));
    if (!outcome.ok) throw new ApiError(409, outcome.code, outcome.message);
    return c.json({ ...outcome.endpoint, secret: outcome.secret }, 201);
  },
);

webhookRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's webhook endpoints (never their secrets)",
    answers: { 200: json(WebhookListAnswer, "Oldest first") },
    errors: [401],
  },
  async (c) => c.json({ webhooks: await user(c).listWebhooks() }),
);

webhookRoutes.serve(
  {
    method: "get",
    path: "/:id",
    summary: "One webhook endpoint",
    params: id,
    answers: { 200: json(WebhookEndpointView, "The endpoint") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const wid = endpointId(c);
    const endpoint = await user(c).getWebhook(wid);
    if (!endpoint) throw notFound(wid);
    return c.json(endpoint);
  },
);

webhookRoutes.serve(
  {
    method: "delete",
    path: "/:id",
    summary: "Delete a webhook endpoint; its pending deliveries are never sent",
    params: id,
    answers: { 200: json(DeletedAnswer, "Deleted") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const wid = endpointId(c);
    if (!(await user(c).deleteWebhook(wid))) throw notFound(wid);
    return c.json({ deleted: true as const });
  },
);

webhookRoutes.serve(
  {
    method: "post",
    path: "/:id/rotate-secret",
    summary:
      "A new signing secret (shown only in this answer); the previous one also signs deliveries for graceSeconds",
    params: id,
    body: RotateWebhookSecretBody,
    answers: { 200: json(WebhookSecretAnswer, "Rotated") },
    errors: [400, 401, 404, 409, 413, 415],
  },
  async (c, readBody) => {
    const wid = endpointId(c);
    const body = await readBody(BODY_MAX_BYTES);
    const rotated = await user(c).rotateWebhookSecret(wid, body.graceSeconds);
    if (!rotated) {
      if (await user(c).getWebhook(wid))
        throw new ApiError(
          409,
          "webhook_rotation_conflict",
          "another rotation of this endpoint's secret happened at the same time; its secret stands",
        );
      throw notFound(wid);
    }
    return c.json({ ...rotated.endpoint, secret: rotated.secret });
  },
);

webhookRoutes.serve(
  {
    method: "get",
    path: "/:id/deliveries",
    summary: "The endpoint's delivery log: each delivery's status, attempts and last error, newest first",
    params: id,
    query: { limit: Limit },
    answers: { 200: json(WebhookDeliveriesAnswer, "Newest first") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const wid = endpointId(c);
    const limit = Limit.safeParse(c.req.query("limit"));
    if (!limit.success) throw new ApiError(400, "invalid_request", "limit must be an integer from 1 to 100");
    const deliveries = await user(c).webhookDeliveries(wid, limit.data);
    if (!deliveries) throw notFound(wid);
    return c.json({ deliveries });
  },
);
