/**
 * Conversations and their turns (README "Public API"): the list, sending a turn (retry-safe under
 * its turn id), one turn, the summary, the transcript, usage, cancel and delete. Mounted at
 * `/v1/conversations`, authenticated by the app.
 */
import { Hono } from "hono";
import { knownSession, rateLimit, session, type AppEnv } from "../app-context";
import { invalid, readJsonBody } from "../body";
import { ApiError, unwrapRpc } from "../errors";
import { TurnId } from "../../schemas/common";
import { CancelBody, SubmitTurnBody } from "../../schemas/api";

/** JSON envelope around the message: the body limit is the message limit plus this. */
const BODY_OVERHEAD_BYTES = 16 * 1024;

export const conversationRoutes = new Hono<AppEnv>();

conversationRoutes.get("/", async (c) => {
  const raw = c.req.query("limit");
  const limit = raw === undefined ? 50 : Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError(400, "invalid_request", "limit must be an integer from 1 to 200");
  const { ownerKey } = c.get("identity");
  const user = c.env.USERS.get(c.env.USERS.idFromName(ownerKey));
  return c.json({ conversations: await user.listConversations(limit) });
});

conversationRoutes.post("/:cid/turns", async (c) => {
  const config = c.get("config");
  const { stub, context } = await session(c);
  const body = await readJsonBody(c, SubmitTurnBody, config.MAX_MESSAGE_BYTES + BODY_OVERHEAD_BYTES);
  const header = c.req.header("idempotency-key");
  if (header !== undefined) {
    const parsed = TurnId.safeParse(header);
    if (!parsed.success) throw invalid("Idempotency-Key", parsed.error);
    if (body.turnId !== undefined && body.turnId !== header) {
      throw new ApiError(400, "turn_id_mismatch", "turnId in the body and the Idempotency-Key header differ");
    }
  }
  const turnId = body.turnId ?? header;
  if (!turnId) throw new ApiError(400, "turn_id_required", "a turnId (in the body or as Idempotency-Key) is required so a retry never runs twice");
  const messageBytes = new TextEncoder().encode(body.message).length;
  if (messageBytes > config.MAX_MESSAGE_BYTES) {
    throw new ApiError(413, "message_too_large", `the message is ${messageBytes} bytes; the limit is ${config.MAX_MESSAGE_BYTES}`);
  }
  // Only a request that passed validation counts against the user's limit.
  await rateLimit(c, "turn");
  const request = {
    message: body.message,
    ...(body.model !== undefined ? { model: body.model } : {}),
    ...(body.interactions !== undefined ? { interactions: body.interactions } : {}),
  };
  const { outcome, turn } = unwrapRpc(await stub.submitTurn(context, turnId, request));
  // 202: accepted now or still running under this id; 200: the cached result of a finished turn.
  return outcome === "cached" ? c.json({ ...turn, cached: true }, 200) : c.json(turn, 202);
});

conversationRoutes.get("/:cid/turns/:turnId", async (c) => {
  const { stub } = await knownSession(c);
  const turnId = TurnId.safeParse(c.req.param("turnId"));
  if (!turnId.success) throw invalid("turn id", turnId.error);
  return c.json(unwrapRpc(await stub.getTurn(turnId.data)));
});

conversationRoutes.get("/:cid", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.summary(conversationId)));
});

conversationRoutes.get("/:cid/messages", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.messages(conversationId)));
});

conversationRoutes.get("/:cid/usage", async (c) => {
  const { stub, conversationId } = await knownSession(c);
  return c.json(unwrapRpc(await stub.usage(conversationId)));
});

conversationRoutes.post("/:cid/cancel", async (c) => {
  const { stub, conversationId } = await session(c);
  const body = await readJsonBody(c, CancelBody, 8 * 1024);
  const ack = unwrapRpc(await stub.cancel(conversationId, body.operationId, body.reason));
  // conflict: the operation id was used for another command; unknown: whether the run stopped could not be confirmed.
  return c.json(ack, ack.status === "conflict" ? 409 : ack.status === "unknown" ? 502 : 200);
});

conversationRoutes.delete("/:cid", async (c) => {
  const { stub, conversationId } = await session(c);
  return c.json(unwrapRpc(await stub.deleteConversation(conversationId)));
});
