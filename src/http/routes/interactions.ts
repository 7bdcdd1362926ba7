/**
 * Answering the agent's asks (docs/api.md#when-the-agent-waits-for-a-person): checked against the
 * exact outstanding request and delivered upstream once. Mounted at `/v1/conversations`; declared
 * once (../route-declaration.ts).
 */
import { forbiddenPaths } from "../../lib/forbidden-names";
import { AnswerBody, InteractionAckSchema } from "../../schemas/api";
import { ConversationId, Id } from "../../schemas/common";
import type { InteractionAcknowledgement } from "../../schemas/contracts";
import { session } from "../app-context";
import { invalid } from "../body";
import { ACK_HTTP_STATUS, unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

export const interactionRoutes = new DeclaredRoutes();

interactionRoutes.serve(
  {
    method: "post",
    path: "/:cid/interactions/:iid",
    summary: "Answer an interaction (retry-safe under its operationId); delivered upstream exactly once",
    params: { cid: ConversationId, iid: Id },
    body: AnswerBody,
    answers: {
      200: json(InteractionAckSchema, "accepted, or already_resolved_same"),
      404: json(InteractionAckSchema, "unknown_interaction / unknown_run"),
      409: json(InteractionAckSchema, "already_resolved_different, binding_mismatch, cancelled"),
      410: json(InteractionAckSchema, "expired"),
      422: json(InteractionAckSchema, "invalid_response: the message names each field"),
      502: json(InteractionAckSchema, "transport_failure: delivery unconfirmed, retryable"),
    },
    errors: [400, 401, 501],
  },
  async (c, readBody) => {
    const { stub, conversationId } = await session(c);
    const iid = Id.safeParse(c.req.param("iid"));
    if (!iid.success) throw invalid("interaction id", iid.error);
    let forbidden: string[] = [];
    const body = await readBody(256 * 1024, (raw) => {
      forbidden = forbiddenPaths((raw as { data?: unknown } | null)?.data, "data");
    });
    // RPC typing drops the acknowledgement's loose binding (an index signature); the shape is the session's.
    const ack = unwrapRpc(
      await stub.answer(conversationId, iid.data, { ...body, ...(forbidden.length ? { forbidden } : {}) }),
    ) as InteractionAcknowledgement;
    return c.json(ack, ACK_HTTP_STATUS[ack.status]);
  },
);
