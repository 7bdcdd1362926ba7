/**
 * Conversations and their turns (README.md#public-api-v1): the list, renaming one, sending a turn (retry-safe under
 * its turn id, queued while another runs when asked), one turn, editing and removing a queued turn,
 * clearing the queue, the summary, the transcript, usage, cancel and delete. Mounted at
 * `/v1/conversations`, authenticated by the app. Each route is declared once (../route-declaration.ts):
 * the declaration registers it and documents it.
 */
import type { Context } from "hono";
import { z } from "zod";
import { ApiError } from "../../errors";
import {
  BranchListSchema,
  CancelAckSchema,
  CancelBody,
  ConversationEntrySchema,
  ConversationListSchema,
  ConversationSummarySchema,
  ConversationUsageSchema,
  DeletedAnswer,
  EditQueuedTurnBody,
  MessagesSchema,
  QueueClearedAnswer,
  RenameConversationBody,
  SubmitTurnBody,
  SwitchBranchBody,
  TurnViewSchema,
} from "../../schemas/api";
import { ConversationId, TurnId } from "../../schemas/common";
import { turnAgentRequest } from "../agent-options";
import { type AppEnv, knownSession, limitedTurn, session } from "../app-context";
import { invalid } from "../body";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";
import { checkTurnSettings } from "./agent-settings";
import { dropAgentTerminal } from "./interactive";

/** JSON envelope around the message: the body limit is the message limit plus this. */
const BODY_OVERHEAD_BYTES = 16 * 1024;

/** How many conversations the list answers. */
const Limit = z.coerce
  .number()
  .int()
  .min(1)
  .max(200)
  .default(50)
  .describe("How many conversations to list, newest first");

/** Which branch a read is of (docs/api.md#branches); absent: the active one. */
export const BranchQuery = z.coerce
  .number()
  .int()
  .nonnegative()
  .max(1_000_000)
  .describe("The branch to read (GET …/branches lists them); absent: the active branch");

/** The `?branch=` of a read, parsed; undefined when absent. */
export function branchOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = BranchQuery.safeParse(value);
  if (!parsed.success)
    throw new ApiError(
      400,
      "invalid_request",
      "branch must be a non-negative integer (a branch id from GET …/branches)",
    );
  return parsed.data;
}

/** The conversation id of every `/:cid` route, parsed by app-context's `conversationIdOf`. */
const cid = { cid: ConversationId };

export const conversationRoutes = new DeclaredRoutes();

conversationRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's conversations",
    query: { limit: Limit },
    answers: { 200: json(ConversationListSchema, "Newest first") },
    errors: [401],
  },
  async (c) => {
    const limit = Limit.safeParse(c.req.query("limit"));
    if (!limit.success) throw new ApiError(400, "invalid_request", "limit must be an integer from 1 to 200");
    const { ownerKey } = c.get("identity");
    const user = c.env.USERS.get(c.env.USERS.idFromName(ownerKey));
    return c.json({ conversations: await user.listConversations(limit.data) });
  },
);

conversationRoutes.serve(
  {
    method: "post",
    path: "/:cid/turns",
    summary: "Send a message (retry-safe under its turnId)",
    params: cid,
    headers: { "Idempotency-Key": TurnId.optional() },
    body: SubmitTurnBody,
    answers: {
      200: json(TurnViewSchema, "The cached result of a finished turn with this id"),
      202: json(
        TurnViewSchema,
        "Accepted (or already running): follow the event stream; with whenBusy queue, possibly queued (status queued) to start after the turns before it",
      ),
    },
    errors: [400, 401, 409, 410, 413, 415, 429, 501, 502, 503, 504],
  },
  async (c, readBody) => {
    const config = c.get("config");
    const { stub, context } = await session(c);
    const body = await readBody(config.MAX_MESSAGE_BYTES + BODY_OVERHEAD_BYTES);
    const header = c.req.header("idempotency-key");
    if (header !== undefined) {
      const parsed = TurnId.safeParse(header);
      if (!parsed.success) throw invalid("Idempotency-Key", parsed.error);
      if (body.turnId !== undefined && body.turnId !== header) {
        throw new ApiError(400, "turn_id_mismatch", "turnId in the body and the Idempotency-Key header differ");
      }
    }
    const turnId = body.turnId ?? header;
    if (!turnId)
      throw new ApiError(
        400,
        "turn_id_required",
        "a turnId (in the body or as Idempotency-Key) is required so a retry never runs twice",
      );
    const messageBytes = new TextEncoder().encode(body.message).length;
    if (messageBytes > config.MAX_MESSAGE_BYTES) {
      throw new ApiError(
        413,
        "message_too_large",
        `the message is ${messageBytes} bytes; the limit is ${config.MAX_MESSAGE_BYTES}`,
      );
    }
    const agent = turnAgentRequest(body, config.provider === "cli-bridge" ? "cli-bridge" : "tangle");
    await checkTurnSettings(c, agent);
    const request = {
      message: body.message,
      ...agent,
      // The conversation's attachments it names: checked (and the message told where each is) at dispatch.
      ...(body.attachments !== undefined && body.attachments.length > 0 ? { attachments: body.attachments } : {}),
      // The branch point is part of the request: a retry names it again, another one is a conflict.
      ...(body.parentTurnId !== undefined ? { parentTurnId: body.parentTurnId } : {}),
    };
    // Only a request that passed validation takes a place in the user's limit, and keeps it only if it did work.
    const send = () => stub.submitTurn(context, turnId, request, body.whenBusy ?? "refuse", c.get("identity").issuedAt);
    const { outcome, turn } = unwrapRpc(await limitedTurn(c, send));
    // 202: accepted now, queued, or still running under this id; 200: the cached result of a finished turn.
    return outcome === "cached" ? c.json({ ...turn, cached: true }, 200) : c.json(turn, 202);
  },
);

conversationRoutes.serve(
  {
    method: "get",
    path: "/:cid/turns/:turnId",
    summary: "One turn: status, result, usage",
    params: { ...cid, turnId: TurnId },
    answers: { 200: json(TurnViewSchema, "The turn") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub } = await knownSession(c);
    const turnId = TurnId.safeParse(c.req.param("turnId"));
    if (!turnId.success) throw invalid("turn id", turnId.error);
    return c.json(unwrapRpc(await stub.getTurn(turnId.data)));
  },
);

/** The turn id of a `/:cid/turns/:turnId` route. */
function turnIdOf(c: Context<AppEnv>): string {
  const turnId = TurnId.safeParse(c.req.param("turnId"));
  if (!turnId.success) throw invalid("turn id", turnId.error);
  return turnId.data;
}

conversationRoutes.serve(
  {
    method: "patch",
    path: "/:cid/turns/:turnId",
    summary: "Edit a queued turn's message before it starts",
    params: { ...cid, turnId: TurnId },
    body: EditQueuedTurnBody,
    answers: { 200: json(TurnViewSchema, "The queued turn, with its new message") },
    errors: [400, 401, 404, 409, 413, 415],
  },
  async (c, readBody) => {
    const config = c.get("config");
    const turnId = turnIdOf(c);
    const { stub, conversationId } = await knownSession(c);
    const body = await readBody(config.MAX_MESSAGE_BYTES + BODY_OVERHEAD_BYTES);
    const messageBytes = new TextEncoder().encode(body.message).length;
    if (messageBytes > config.MAX_MESSAGE_BYTES) {
      throw new ApiError(
        413,
        "message_too_large",
        `the message is ${messageBytes} bytes; the limit is ${config.MAX_MESSAGE_BYTES}`,
      );
    }
    return c.json(unwrapRpc(await stub.editQueued(conversationId, turnId, body.message)));
  },
);

conversationRoutes.serve(
  {
    method: "delete",
    path: "/:cid/turns/:turnId",
    summary: "Remove a queued turn before it starts (again: the same answer)",
    params: { ...cid, turnId: TurnId },
    answers: { 200: json(TurnViewSchema, "The removed turn: status cancelled, with its cancelReason") },
    errors: [400, 401, 404, 409],
  },
  async (c) => {
    const turnId = turnIdOf(c);
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.removeQueued(conversationId, turnId)));
  },
);

conversationRoutes.serve(
  {
    method: "delete",
    path: "/:cid/queue",
    summary: "Remove every queued turn (the running turn runs on)",
    params: cid,
    answers: { 200: json(QueueClearedAnswer, "The turns removed") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.clearQueue(conversationId)));
  },
);

conversationRoutes.serve(
  {
    method: "get",
    path: "/:cid",
    summary: "Conversation summary",
    params: cid,
    answers: { 200: json(ConversationSummarySchema, "Summary") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.summary(conversationId)));
  },
);

conversationRoutes.serve(
  {
    method: "patch",
    path: "/:cid",
    summary: "Rename the conversation: its title in the list and the summary, on every device; later turns keep it",
    params: cid,
    body: RenameConversationBody,
    answers: { 200: json(ConversationEntrySchema, "The conversation as listed, with its new title") },
    errors: [400, 401, 404, 413, 415],
  },
  async (c, readBody) => {
    const { stub, conversationId } = await knownSession(c);
    const body = await readBody(4 * 1024);
    return c.json(unwrapRpc(await stub.rename(conversationId, body.title)));
  },
);

conversationRoutes.serve(
  {
    method: "get",
    path: "/:cid/messages",
    summary: "The transcript rebuilt from the log: the conversation of the active branch, or of ?branch=",
    params: cid,
    query: { branch: BranchQuery.optional() },
    answers: { 200: json(MessagesSchema, "Messages") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const branch = branchOf(c.req.query("branch"));
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.messages(conversationId, branch)));
  },
);

conversationRoutes.serve(
  {
    method: "get",
    path: "/:cid/branches",
    summary: "The conversation's branches (each its own agent session) and which one is active",
    params: cid,
    answers: { 200: json(BranchListSchema, "Branches, oldest first") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.branches(conversationId)));
  },
);

const SwitchedAnswer = z
  .object({ branch: z.number().int().nonnegative(), previous: z.number().int().nonnegative(), tipTurnId: TurnId })
  .meta({
    id: "BranchSwitched",
    description:
      "The branch now active, the one before, and its latest turn (every stream of the conversation hears branch.switched)",
  });

conversationRoutes.serve(
  {
    method: "post",
    path: "/:cid/branches/active",
    summary: "Switch the active branch (by branch id, or by a turn it goes through); safe to repeat",
    params: cid,
    body: SwitchBranchBody,
    answers: { 200: json(SwitchedAnswer, "Active") },
    errors: [400, 401, 404],
  },
  async (c, readBody) => {
    const body = await readBody(4 * 1024);
    if ((body.branch === undefined) === (body.turnId === undefined))
      throw new ApiError(400, "invalid_request", "name exactly one of branch and turnId");
    const { stub, conversationId } = await knownSession(c);
    return c.json(
      unwrapRpc(
        await stub.switchBranch(conversationId, {
          ...(body.branch !== undefined ? { branch: body.branch } : {}),
          ...(body.turnId !== undefined ? { turnId: body.turnId } : {}),
        }),
      ),
    );
  },
);

conversationRoutes.serve(
  {
    method: "get",
    path: "/:cid/usage",
    summary: "The usage fold: per turn and in total, with unknowns, conflicts and the budget",
    params: cid,
    answers: { 200: json(ConversationUsageSchema, "Usage") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    return c.json(unwrapRpc(await stub.usage(conversationId)));
  },
);

conversationRoutes.serve(
  {
    method: "post",
    path: "/:cid/cancel",
    summary:
      "Cancel the running turn (retry-safe under its operationId; queue clear removes the queued turns too); a browser disconnect never cancels",
    params: cid,
    body: CancelBody,
    answers: {
      200: json(CancelAckSchema, "accepted (effect cancelled, cancel_requested or not_live) or replayed"),
      409: json(CancelAckSchema, "conflict: the operationId was used for another request"),
      502: json(CancelAckSchema, "unknown: whether the run stopped could not be confirmed"),
    },
    errors: [400, 401, 404, 501],
  },
  async (c, readBody) => {
    const { stub, conversationId } = await session(c);
    const body = await readBody(8 * 1024);
    const ack = unwrapRpc(await stub.cancel(conversationId, body.operationId, body.reason, body.queue));
    // conflict: the operation id was used for another command; unknown: whether the run stopped could not be confirmed.
    return c.json(ack, ack.status === "conflict" ? 409 : ack.status === "unknown" ? 502 : 200);
  },
);

conversationRoutes.serve(
  {
    method: "delete",
    path: "/:cid",
    summary: "Delete the session upstream and every local record of it",
    params: cid,
    answers: { 200: json(DeletedAnswer, "Deleted") },
    errors: [400, 401, 404, 502],
  },
  async (c) => {
    const { stub, conversationId } = await session(c);
    const deleted = unwrapRpc(await stub.deleteConversation(conversationId));
    // The agent's terminal UI stopped with the session; the gateway's socket to it goes too.
    await dropAgentTerminal(c, conversationId);
    return c.json(deleted);
  },
);
