/**
 * Answering the agent's asks (README "When the agent waits for a person"): checked against the
 * exact outstanding request and delivered upstream once. Mounted at `/v1/conversations`.
 */
import { Hono } from "hono";
import { forbiddenPaths } from "../../lib/forbidden-names";
import { AnswerBody } from "../../schemas/api";
import { Id } from "../../schemas/common";
import type { InteractionAcknowledgement } from "../../schemas/contracts";
import { session, type AppEnv } from "../app-context";
import { invalid, readJsonBody } from "../body";
import { ACK_HTTP_STATUS, unwrapRpc } from "../errors";

export const interactionRoutes = new Hono<AppEnv>();

interactionRoutes.post("/:cid/interactions/:iid", async (c) => {
  const { stub, conversationId } = await session(c);
  const iid = Id.safeParse(c.req.param("iid"));
  if (!iid.success) throw invalid("interaction id", iid.error);
  let forbidden: string[] = [];
  const body = await readJsonBody(c, AnswerBody, 256 * 1024, (raw) => {
    forbidden = forbiddenPaths((raw as { data?: unknown } | null)?.data, "data");
  });
  // RPC typing drops the acknowledgement's loose binding (an index signature); the shape is the session's.
  const ack = unwrapRpc(await stub.answer(conversationId, iid.data, { ...body, ...(forbidden.length ? { forbidden } : {}) })) as InteractionAcknowledgement;
  return c.json(ack, ACK_HTTP_STATUS[ack.status]);
});
