/**
 * What a chat frontend sends to `POST /v1/chat`: the body the AI SDK's `DefaultChatTransport`
 * builds (`{ id, messages, trigger, messageId, ...body }`), validated, and read as one action on
 * the conversation. Pure. Only the last message is taken: the agent keeps the history upstream,
 * and the client's earlier messages are never trusted.
 */

import { z } from "zod";
import { yesOrNo } from "../../public/wire/grants.js";
import { ProviderOptions, TurnSettingsFields } from "../schemas/agents";
import { ConversationId, TurnId } from "../schemas/common";
import { RequestedInteractions } from "../schemas/contracts";
import { TurnAttachments } from "../schemas/workspace";
import { ASK_TOOL, turnOfAssistantMessage } from "./chunks";

const Part = z.looseObject({ type: z.string().min(1).max(256) });

const UiMessageBody = z
  .looseObject({
    id: z.string().min(1).max(512),
    role: z.enum(["system", "user", "assistant"]),
    metadata: z.unknown().optional(),
    parts: z.array(Part).max(10_000),
  })
  .meta({
    id: "UIMessage",
    description:
      "The AI SDK's UIMessage: its parts as the SDK defines them (text, reasoning, dynamic-tool, step-start, data-*, file)",
  });

/** `GET /v1/chat/:id/messages`: the conversation as the SDK's messages. */
export const UiMessagesSchema = z.array(UiMessageBody).meta({ id: "UIMessages" });

export const ChatRequestBody = z
  .strictObject({
    id: ConversationId.describe("The chat id: the conversation id"),
    messages: z.array(UiMessageBody).min(1, "must hold at least the message to send").max(100_000),
    trigger: z.enum(["submit-message", "regenerate-message"]),
    messageId: z.string().min(1).max(512).optional(),
    model: z.string().min(1).max(256).optional(),
    interactions: RequestedInteractions.optional(),
    providerOptions: ProviderOptions.optional(),
    ...TurnSettingsFields,
    attachments: TurnAttachments,
  })
  .meta({
    id: "ChatRequest",
    description: "The body the AI SDK's DefaultChatTransport sends (UIMessage[] as `messages`)",
  });
export type ChatRequestBody = z.infer<typeof ChatRequestBody>;

const TextPart = z.looseObject({ type: z.literal("text"), text: z.string() });

/** A tool part of the assistant message: the client's answer to an ask rides on it. */
const ToolPart = z.looseObject({
  type: z.string(),
  toolCallId: z.string().min(1).max(512),
  state: z.string(),
  toolName: z.string().optional(),
  approval: z
    .looseObject({ id: z.string(), approved: z.boolean().optional(), reason: z.string().max(2048).optional() })
    .optional(),
  output: z.unknown().optional(),
  errorText: z.string().optional(),
});

export interface AskAnswer {
  interactionId: string;
  outcome: "accepted" | "declined";
  /** `approval`: a permission or plan approved or denied; `output`: a question's answer. */
  via: "approval" | "output";
  approved?: boolean;
  reason?: string;
  data?: Record<string, unknown>;
}

/** A file the user's message carries (an AI SDK `file` part, its bytes from its data: URL): attached to the turn. */
interface ChatFile {
  name: string;
  bytes: Uint8Array;
}

/** The most file parts one message may carry. */
const CHAT_FILES_MAX = 10;

export type ChatAction =
  /** `after`: the turn the message before it answers (the client's history goes on from there); undefined when the history names none. */
  | { kind: "submit"; turnId: string; message: string; after: string | undefined; files: ChatFile[] }
  | { kind: "regenerate"; userMessageId: string; message: string; of: string | null; files: ChatFile[] }
  | { kind: "answer"; turnId: string; answers: AskAnswer[]; askIds: string[] };

export class ChatRequestError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

const FilePart = z.looseObject({
  type: z.literal("file"),
  mediaType: z.string().max(256).optional(),
  filename: z.string().max(1024).optional(),
  url: z.string(),
});

/** `data:[<type>][;base64],<data>` → its bytes; null for any other URL. */
function dataUrlBytes(url: string): Uint8Array | null {
  const match = /^data:([^,]*),(.*)$/s.exec(url);
  if (!match) return null;
  const base64 = match[1]!.split(";").includes("base64");
  const data = match[2]!;
  if (!base64) {
    try {
      return new TextEncoder().encode(decodeURIComponent(data));
    } catch {
      return null;
    }
  }
  let binary: string;
  try {
    binary = atob(data);
  } catch {
    return null;
  }
  return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
}

/** The message's `file` parts, each a data: URL, as files to attach (their type is sniffed later, never taken from the part). */
function userFiles(message: z.infer<typeof UiMessageBody>, at: string): ChatFile[] {
  const files: ChatFile[] = [];
  message.parts.forEach((raw, i) => {
    if (raw.type !== "file") return;
    const part = FilePart.safeParse(raw);
    if (!part.success) throw new ChatRequestError(`${at}.parts.${i}.url`, "a file part needs its url");
    const bytes = dataUrlBytes(part.data.url);
    if (!bytes)
      throw new ChatRequestError(
        `${at}.parts.${i}.url`,
        "a file part's url must be a data: URL holding the file (this gateway fetches no other URL)",
      );
    files.push({ name: part.data.filename ?? `file-${i}`, bytes });
  });
  if (files.length > CHAT_FILES_MAX)
    throw new ChatRequestError(`${at}.parts`, `a message carries at most ${CHAT_FILES_MAX} files`);
  return files;
}

function userText(message: z.infer<typeof UiMessageBody>, at: string): string {
  const texts: string[] = [];
  message.parts.forEach((part, i) => {
    if (part.type === "file") return;
    if (part.type === "text") {
      const parsed = TextPart.safeParse(part);
      if (!parsed.success) throw new ChatRequestError(`${at}.parts.${i}.text`, "a text part needs its text");
      texts.push(parsed.data.text);
    } else if (part.type !== "step-start") {
      throw new ChatRequestError(
        `${at}.parts.${i}.type`,
        `a ${part.type} part cannot be sent to the agent: only text and files`,
      );
    }
  });
  const text = texts.join("\n\n");
  if (!text.trim()) throw new ChatRequestError(`${at}.parts`, "the message has no text");
  return text;
}

const isToolPart = (type: string) => type === "dynamic-tool" || type.startsWith("tool-");

/** The answers an assistant message carries: approval responses and the outputs of question tools. */
function answersOf(message: z.infer<typeof UiMessageBody>, at: string): { answers: AskAnswer[]; askIds: string[] } {
  const answers: AskAnswer[] = [];
  const askIds: string[] = [];
  message.parts.forEach((raw, i) => {
    if (!isToolPart(raw.type)) return;
    const parsed = ToolPart.safeParse(raw);
    if (!parsed.success)
      throw new ChatRequestError(
        `${at}.parts.${i}`,
        `a tool part needs toolCallId and state (${parsed.error.issues[0]?.message ?? "invalid"})`,
      );
    const part = parsed.data;
    const toolName = part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
    const approval = part.approval;
    if (approval) askIds.push(approval.id);
    else if (toolName === ASK_TOOL.question) askIds.push(part.toolCallId);
    if (part.state === "approval-responded") {
      if (!approval || approval.approved === undefined)
        throw new ChatRequestError(`${at}.parts.${i}.approval`, "an approval-responded part needs approval.approved");
      answers.push({
        interactionId: approval.id,
        via: "approval",
        outcome: "accepted",
        approved: approval.approved,
        ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
      });
    } else if (toolName === ASK_TOOL.question && (part.state === "output-available" || part.state === "output-error")) {
      if (part.state === "output-error") {
        answers.push({ interactionId: part.toolCallId, via: "output", outcome: "declined" });
      } else {
        const output = part.output;
        if (typeof output !== "object" || output === null || Array.isArray(output)) {
          throw new ChatRequestError(
            `${at}.parts.${i}.output`,
            "a question's output must be an object of the ask's fields",
          );
        }
        answers.push({
          interactionId: part.toolCallId,
          via: "output",
          outcome: "accepted",
          data: output as Record<string, unknown>,
        });
      }
    }
  });
  return { answers, askIds };
}

/** Reads the request as one action; a body the SDK would never send is a ChatRequestError naming the field. */
export function chatAction(body: ChatRequestBody): ChatAction {
  const lastIndex = body.messages.length - 1;
  const last = body.messages[lastIndex]!;
  const at = `messages.${lastIndex}`;
  if (body.trigger === "regenerate-message") {
    if (last.role !== "user")
      throw new ChatRequestError(
        `${at}.role`,
        "regenerate-message sends the history up to the user message to answer again",
      );
    const id = TurnId.safeParse(last.id);
    if (!id.success)
      throw new ChatRequestError(`${at}.id`, `the message id is the turn id: ${id.error.issues[0]?.message}`);
    const of = body.messageId !== undefined ? turnOfAssistantMessage(body.messageId) : null;
    if (body.messageId !== undefined && of === null)
      throw new ChatRequestError("messageId", "names no answer of this conversation (answers' ids end in :answer)");
    return { kind: "regenerate", userMessageId: id.data, message: userText(last, at), of, files: userFiles(last, at) };
  }
  if (last.role === "user") {
    const id = TurnId.safeParse(last.id);
    if (!id.success)
      throw new ChatRequestError(`${at}.id`, `the message id is the turn id: ${id.error.issues[0]?.message}`);
    // The history the client holds: the answer before this message names the turn it goes on from
    // (an earlier one than the active branch's latest is a branch: docs/api.md#branches).
    const previous = body.messages[lastIndex - 1];
    const after = previous?.role === "assistant" ? (turnOfAssistantMessage(previous.id) ?? undefined) : undefined;
    return { kind: "submit", turnId: id.data, message: userText(last, at), after, files: userFiles(last, at) };
  }
  if (last.role === "assistant") {
    const turnId = turnOfAssistantMessage(last.id);
    if (turnId === null || !TurnId.safeParse(turnId).success)
      throw new ChatRequestError(`${at}.id`, "names no answer of this conversation (answers' ids end in :answer)");
    if (body.messageId !== undefined && body.messageId !== last.id)
      throw new ChatRequestError("messageId", "must be the id of the last message when it continues an answer");
    const { answers, askIds } = answersOf(last, at);
    if (askIds.length === 0)
      throw new ChatRequestError(
        `${at}.parts`,
        "an assistant message continues a turn only with its answers to the agent's asks (approvals or tool outputs)",
      );
    return { kind: "answer", turnId, answers, askIds };
  }
  throw new ChatRequestError(
    `${at}.role`,
    "the last message must be the user's message (or the answer being continued)",
  );
}

/** The ask an answer goes to, as far as the answer needs it: its kind, its fields and its scopes. */
export interface AskShape {
  kind: string;
  answerSpec: {
    fields: Array<{
      name: string;
      type?: string;
      required?: boolean;
      multi?: boolean;
      options?: Array<string | { value: string; label?: string }>;
    }>;
  };
  responseScopes?: string[];
}

/**
 * The answer route's body for one ask answered through the chat, in the ask's own form (its
 * decision field and the table of public/wire/grants.js): approved is a one-time grant (or the
 * plan's approval), denied the refusal (a deny, a rejection) with the reason as its feedback,
 * where the ask has a feedback field; a question's output is its answer. An ask that allows no
 * such decision gets the contract's grant names, which the answer check then refuses, naming
 * the field.
 */
export function answerBody(
  answer: AskAnswer,
  ask: AskShape,
): { outcome: "accepted" | "declined"; data?: Record<string, unknown> } {
  if (answer.via === "output")
    return answer.data ? { outcome: answer.outcome, data: answer.data } : { outcome: answer.outcome };
  const hasFeedback = ask.answerSpec.fields.some((f) => f.name === "feedback");
  const feedback = answer.reason && hasFeedback ? { feedback: answer.reason } : {};
  const fallback =
    ask.kind === "plan"
      ? { decision: answer.approved ? "approve" : "reject" }
      : { grant: answer.approved ? "allow_once" : "deny" };
  return {
    outcome: "accepted",
    data: { ...(yesOrNo(ask, answer.approved === true) ?? fallback), ...(answer.approved ? {} : feedback) },
  };
}

/** The id of the turn an edit of turn `turnId`'s message sends (its new text): derived, so a retry is the same turn. */
export async function editedTurnId(turnId: string, message: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(`edit/v1|${turnId.length}:${turnId}|${message.length}:${message}`),
    ),
  );
  return `edit-${[...bytes.slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** The id of a turn that answers a user message again (regenerate): derived, so a retry is the same turn. */
export async function regeneratedTurnId(userMessageId: string, of: string): Promise<string> {
  const bytes = new Uint8Array(
    await crypto.subtle.digest(
      "SHA-256",
      new TextEncoder().encode(`regenerate/v1|${userMessageId.length}:${userMessageId}|${of.length}:${of}`),
    ),
  );
  const hex = [...bytes.slice(0, 12)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `regen-${hex}`;
}
