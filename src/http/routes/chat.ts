/**
 * The AI SDK's routes (docs/ai-sdk.md#use-it-from-the-ai-sdk): `POST /v1/chat` is what
 * `DefaultChatTransport` sends, `GET /v1/chat/:id/stream` what `reconnectToStream` (`resume:
 * true`) asks, `GET /v1/chat/:id/messages` the conversation as `UIMessage[]`. A chat is an
 * ordinary conversation (the chat id is the conversation id): the same turns, asks and log as
 * the native routes, read through the mapping of src/ai-sdk/. Mounted at `/v1/chat`; each route
 * declared once (../route-declaration.ts).
 */
import type { Context } from "hono";
import { z } from "zod";
import { TurnResponse } from "../../ai-sdk/chunks";
import {
  type AskShape,
  answerBody,
  type ChatAction,
  ChatRequestBody,
  ChatRequestError,
  chatAction,
  editedTurnId,
  regeneratedTurnId,
  UiMessagesSchema,
} from "../../ai-sdk/request";
import { ApiError, type RpcResult } from "../../errors";
import { ConversationId } from "../../schemas/common";
import type { InteractionAcknowledgement } from "../../schemas/contracts";
import type { ConversationSummary } from "../../session/session";
import { turnAgentRequest } from "../agent-options";
import {
  type AppEnv,
  knownConversation,
  knownSession,
  limitedTurn,
  rateLimit,
  requireConversation,
  session,
} from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, eventStream, json, noContent } from "../route-declaration";
import { openSubscription } from "../sse-relay";
import { followTurn, uiStreamResponse } from "../ui-stream";
import { checkTurnSettings } from "./agent-settings";
import { attachFile, derivedAttachmentId } from "./attachments";
import { BranchQuery, branchOf } from "./conversations";

/** The SDK sends the whole history with every request; only the last message is read. */
const CHAT_MAX_BODY_BYTES = 4 * 1024 * 1024;

type Session = Awaited<ReturnType<typeof session>>;

/** An outstanding ask as the summary lists it. */
type OpenAsk = AskShape & { id: string; turnId: string };

/** The conversation's summary (RPC typing drops its asks' loose shapes; the shape is the session's own). */
async function summaryOf(s: Session): Promise<RpcResult<ConversationSummary>> {
  return (await s.stub.summary(s.conversationId)) as unknown as RpcResult<ConversationSummary>;
}

/** What a UI message stream's frames hold (documented inline: the chunks are the AI SDK's). */
const UiMessageStream = z
  .string()
  .describe(
    "SSE: each data line is one UIMessageChunk of the AI SDK's UI message stream protocol as JSON; the stream ends with data: [DONE]",
  );

export const chatRoutes = new DeclaredRoutes();

function refused(err: ChatRequestError): ApiError {
  return new ApiError(400, "invalid_request", `the body is invalid: ${err.path}: ${err.message}`, {
    issues: [{ path: err.path, message: err.message }],
  });
}

function checkSize(c: Context<AppEnv>, message: string): void {
  const limit = c.get("config").MAX_MESSAGE_BYTES;
  const bytes = new TextEncoder().encode(message).length;
  if (bytes > limit)
    throw new ApiError(413, "message_too_large", `the message is ${bytes} bytes; the limit is ${limit}`);
}

/** The response about one turn: a finished turn from its record, a running one followed live. */
async function respondWithTurn(
  c: Context<AppEnv>,
  s: Session,
  turnId: string,
  continueAfterAsks: string[] = [],
): Promise<Response> {
  const replay = unwrapRpc(await s.stub.chatReplay(s.conversationId, turnId, continueAfterAsks));
  if (replay !== null) return uiStreamResponse(replay);
  const summary = unwrapRpc(await summaryOf(s));
  const turn = unwrapRpc(await s.stub.getTurn(turnId));
  // Asks outstanding now, and any asked after this point, are where the response waits for the user.
  const outstanding = new Set((summary.interactions as OpenAsk[]).map((i) => i.id));
  const seen = summary.lastEventId;
  const response = new TurnResponse(turnId, {
    continueAfterAsks,
    pauseAt: (id, seq) => seq > seen || outstanding.has(id),
  });
  const config = c.get("config");
  const source = await openSubscription(s.stub, config.SSE_MAX_PENDING_BYTES, turn.after ?? seen);
  return followTurn(source, response, {
    pingIntervalMs: config.SSE_PING_INTERVAL_MS,
    maxPendingBytes: config.SSE_MAX_PENDING_BYTES,
  });
}

/** Delivers the answers a continued assistant message carries, through the interactions' own checks. */
async function deliverAnswers(s: Session, action: Extract<ChatAction, { kind: "answer" }>): Promise<void> {
  unwrapRpc(await s.stub.getTurn(action.turnId));
  const summary = unwrapRpc(await summaryOf(s));
  const open = new Map((summary.interactions as OpenAsk[]).map((i) => [i.id, i]));
  for (const answer of action.answers) {
    const ask = open.get(answer.interactionId);
    // Answered already (here, in another tab, by the native route): the stream shows how it ended.
    if (!ask || ask.turnId !== action.turnId) continue;
    const body = answerBody(answer, ask);
    const ack = unwrapRpc(
      await s.stub.answer(s.conversationId, answer.interactionId, {
        operationId: `chat:${answer.interactionId}`,
        ...body,
      }),
    ) as InteractionAcknowledgement;
    switch (ack.status) {
      case "accepted":
      case "already_resolved_same":
      case "already_resolved_different":
      case "expired":
      case "cancelled":
        continue;
      case "invalid_response":
        throw new ApiError(
          422,
          "invalid_response",
          `the answer to ${answer.interactionId} does not fit the ask: ${ack.message ?? "invalid"}; the ask stays open`,
          { interactionId: answer.interactionId, acknowledgement: ack },
        );
      case "transport_failure":
        throw new ApiError(
          502,
          "upstream_error",
          `the answer to ${answer.interactionId} could not be confirmed; send it again`,
          { interactionId: answer.interactionId, retryable: true },
        );
      default:
        throw new ApiError(
          409,
          ack.status,
          ack.message ?? `the answer to ${answer.interactionId} was refused (${ack.status})`,
          { interactionId: answer.interactionId },
        );
    }
  }
}

chatRoutes.serve(
  {
    method: "post",
    path: "/",
    summary:
      "The AI SDK's chat route (DefaultChatTransport): one turn as a UI message stream; a retried message never runs twice",
    body: ChatRequestBody,
    answers: {
      200: eventStream(
        UiMessageStream,
        "The turn as a UI message stream (x-vercel-ai-ui-message-stream: v1), to its end or to an ask it waits on",
      ),
    },
    errors: [400, 401, 404, 409, 410, 413, 415, 422, 429, 501, 502, 503, 504],
  },
  async (c, readBody) => {
    const body = await readBody(CHAT_MAX_BODY_BYTES);
    let action: ChatAction;
    try {
      action = chatAction(body);
    } catch (err) {
      if (err instanceof ChatRequestError) throw refused(err);
      throw err;
    }
    const s = await session(c, body.id);
    // Checked before anything else happens: a refused agent choice stores and sends nothing.
    const options = turnAgentRequest(body, c.get("config").provider === "cli-bridge" ? "cli-bridge" : "tangle");
    await checkTurnSettings(c, options);
    if (action.kind === "answer") {
      await requireConversation(c, s.conversationId);
      await deliverAnswers(s, action);
      return respondWithTurn(c, s, action.turnId, action.askIds);
    }
    checkSize(c, action.message);
    let turnId: string;
    // The turn this one follows (docs/api.md#branches); undefined: the active branch's latest turn.
    let parentTurnId: string | null | undefined;
    if (action.kind === "submit") {
      turnId = action.turnId;
      const known = await s.stub.getTurn(action.turnId);
      if (known.ok && known.value.message !== action.message) {
        // The SDK's edit (sendMessage with the id of an earlier message): the message again, with
        // its new text, after the turn it followed: a branch.
        turnId = await editedTurnId(action.turnId, action.message);
        parentTurnId = known.value.parentTurnId;
      } else if (action.after !== undefined) {
        // A new message, or this one again (a retry): after the answer the history names, as first sent.
        parentTurnId = action.after;
      }
    } else {
      // Regenerate: a new turn with the same message, its id derived from the answer it replaces,
      // so a retried request is the same turn. Without the SDK's messageId, that is the latest answer.
      const summary = await summaryOf(s);
      const latest = summary.ok ? summary.value.lastTurn : null;
      const active = summary.ok ? summary.value.activeTurn : null;
      if (action.of === null && active && active.turnId.startsWith("regen-") && active.message === action.message) {
        // A regenerate of this message is running: this request is its retry.
        return respondWithTurn(c, s, active.turnId);
      }
      const of = action.of ?? latest?.turnId ?? action.userMessageId;
      turnId = await regeneratedTurnId(action.userMessageId, of);
      // The answer again, after the turn the answered one followed: a branch beside it.
      const answered = await s.stub.getTurn(of);
      if (answered.ok) parentTurnId = answered.value.parentTurnId;
      else if (action.of !== null)
        throw new ApiError(404, "turn_not_found", `messageId names no answer of this conversation (${action.of})`);
    }
    // The message's files, attached as POST …/attachments would (bounded the same way), under ids
    // derived from the message: a retry names the same ones.
    // Those uploaded before (POST …/attachments) come first, named by the body's `attachments`.
    const attachments: string[] = [...(body.attachments ?? [])];
    for (const [index, file] of action.files.entries()) {
      const id = await derivedAttachmentId(turnId, index, file.bytes);
      const attached = (await attachFile(c, s, file, id)).id;
      if (!attachments.includes(attached)) attachments.push(attached);
    }
    const request = {
      message: action.message,
      ...options,
      ...(attachments.length > 0 ? { attachments } : {}),
      ...(parentTurnId !== undefined ? { parentTurnId } : {}),
    };
    const send = () => s.stub.submitTurn(s.context, turnId, request, "refuse", c.get("identity").issuedAt);
    const { turn } = unwrapRpc(await limitedTurn(c, send));
    return respondWithTurn(c, s, turn.turnId);
  },
);

chatRoutes.serve(
  {
    method: "get",
    path: "/:cid/stream",
    summary:
      "Resume (reconnectToStream, useChat's resume: true): the running turn's whole stream from its start, then live",
    params: { cid: ConversationId },
    answers: {
      200: eventStream(UiMessageStream, "The running turn's UI message stream, from its start"),
      204: noContent("No turn is running: nothing to resume"),
    },
    errors: [400, 401, 429],
  },
  async (c) => {
    const s = await session(c);
    await rateLimit(c, "stream");
    // No conversation yet (asked without waking a session object), or no turn running: nothing to resume.
    if (!(await knownConversation(c, s.conversationId))) return c.body(null, 204);
    const summary = await summaryOf(s);
    if (!summary.ok && summary.refusal.code === "conversation_not_found") return c.body(null, 204);
    const active = unwrapRpc(summary).activeTurn;
    if (!active) return c.body(null, 204);
    return respondWithTurn(c, s, active.turnId);
  },
);

chatRoutes.serve(
  {
    method: "get",
    path: "/:cid/messages",
    summary:
      "The conversation as the AI SDK's UIMessage[] (seed useChat's messages after a reload): the active branch's, or ?branch='s",
    params: { cid: ConversationId },
    query: { branch: BranchQuery.optional() },
    answers: { 200: json(UiMessagesSchema, "Each turn's user message and answer") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const branch = branchOf(c.req.query("branch"));
    const s = await knownSession(c);
    const messages = unwrapRpc(await s.stub.chatMessages(s.conversationId, branch));
    return c.body(messages, 200, { "content-type": "application/json; charset=utf-8" });
  },
);
