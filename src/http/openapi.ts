/**
 * The OpenAPI 3.1 document of the public API, generated from the same Zod schemas the routes
 * validate with (every schema with a `.meta({ id })` becomes a component).
 */
import { z } from "zod";
import "../schemas/api";
import "../ai-sdk/request";

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string, description: string) => ({ description, content: { "application/json": { schema: ref(id) } } });
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [String(s), json("Error", "Error, with a stable code")]));
const uiStream = (description: string) => ({
  description,
  content: { "text/event-stream": { schema: { type: "string", description: "SSE: each data line is one UIMessageChunk of the AI SDK's UI message stream protocol as JSON; the stream ends with data: [DONE]" } } },
});
const cid = { name: "cid", in: "path", required: true, schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{1,128}$" } };
const auth = [{ bearer: [] }];

let cached: Record<string, unknown> | undefined;

export function openApiDocument(version: string): Record<string, unknown> {
  if (cached) return cached;
  const components = z.toJSONSchema(z.globalRegistry, { uri: (id) => `#/components/schemas/${id}` }) as { schemas: Record<string, unknown> };
  cached = {
    openapi: "3.1.0",
    info: { title: "Agent chat gateway", version, description: "Durable conversations with coding agents, streamed as Server-Sent Events." },
    components: { schemas: components.schemas, securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } } },
    paths: {
      "/healthz": { get: { summary: "Liveness and version", responses: { 200: json("Health", "Alive") } } },
      "/v1/dev/login": {
        post: {
          summary: "Local development only: a token for any user name (DEV_LOGIN on a loopback host)",
          requestBody: { content: { "application/json": { schema: ref("DevLogin") } } },
          responses: { 200: json("DevLoginAnswer", "A user token"), ...errors(400, 404, 415) },
        },
      },
      "/v1/conversations": {
        get: { summary: "The user's conversations", security: auth, responses: { 200: json("ConversationList", "Newest first"), ...errors(401) } },
      },
      "/v1/conversations/{cid}": {
        get: {
          summary: "Conversation summary",
          security: auth,
          parameters: [cid],
          responses: { 200: json("ConversationSummary", "Summary"), ...errors(400, 401, 404) },
        },
        delete: {
          summary: "Delete the session upstream and every local record of it",
          security: auth,
          parameters: [cid],
          responses: { 200: json("Deleted", "Deleted"), ...errors(400, 401, 404, 502) },
        },
      },
      "/v1/conversations/{cid}/turns": {
        post: {
          summary: "Send a message (retry-safe under its turnId)",
          security: auth,
          parameters: [cid, { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string" } }],
          requestBody: { content: { "application/json": { schema: ref("SubmitTurn") } } },
          responses: {
            200: json("Turn", "The cached result of a finished turn with this id"),
            202: json("Turn", "Accepted (or already running): follow the event stream"),
            ...errors(400, 401, 409, 413, 415, 429, 501, 502, 503, 504),
          },
        },
      },
      "/v1/conversations/{cid}/turns/{turnId}": {
        get: {
          summary: "One turn: status, result, usage",
          security: auth,
          parameters: [cid, { name: "turnId", in: "path", required: true, schema: { type: "string" } }],
          responses: { 200: json("Turn", "The turn"), ...errors(400, 401, 404) },
        },
      },
      "/v1/conversations/{cid}/events": {
        get: {
          summary: "The conversation's events as Server-Sent Events, strictly after the cursor, then live",
          security: auth,
          parameters: [
            cid,
            { name: "Last-Event-ID", in: "header", required: false, schema: { type: "string" } },
            { name: "after", in: "query", required: false, schema: { type: "integer", minimum: 0 } },
          ],
          responses: {
            200: { description: "text/event-stream; each frame's data is an Event", content: { "text/event-stream": { schema: ref("Event") } } },
            ...errors(400, 401),
          },
        },
      },
      "/v1/conversations/{cid}/cancel": {
        post: {
          summary: "Cancel the running turn (retry-safe under its operationId); a browser disconnect never cancels",
          security: auth,
          parameters: [cid],
          requestBody: { content: { "application/json": { schema: ref("Cancel") } } },
          responses: {
            200: json("CancellationAcknowledgement", "accepted (effect cancelled, cancel_requested or not_live) or replayed"),
            409: json("CancellationAcknowledgement", "conflict: the operationId was used for another request"),
            502: json("CancellationAcknowledgement", "unknown: whether the run stopped could not be confirmed"),
            ...errors(400, 401, 404, 501),
          },
        },
      },
      "/v1/conversations/{cid}/interactions/{iid}": {
        post: {
          summary: "Answer an interaction (retry-safe under its operationId); delivered upstream exactly once",
          security: auth,
          parameters: [cid, { name: "iid", in: "path", required: true, schema: { type: "string" } }],
          requestBody: { content: { "application/json": { schema: ref("Answer") } } },
          responses: {
            200: json("InteractionAcknowledgement", "accepted, or already_resolved_same"),
            404: json("InteractionAcknowledgement", "unknown_interaction / unknown_run"),
            409: json("InteractionAcknowledgement", "already_resolved_different, binding_mismatch, cancelled"),
            410: json("InteractionAcknowledgement", "expired"),
            422: json("InteractionAcknowledgement", "invalid_response: the message names each field"),
            502: json("InteractionAcknowledgement", "transport_failure: delivery unconfirmed, retryable"),
            ...errors(400, 401, 501),
          },
        },
      },
      "/v1/conversations/{cid}/stream-token": {
        post: {
          summary: "A short-lived token for EventSource (which cannot send headers), bound to the user and this conversation",
          security: auth,
          parameters: [cid],
          responses: { 200: json("StreamToken", "The token and the events URL that accepts it"), ...errors(400, 401, 501) },
        },
      },
      "/v1/conversations/{cid}/usage": {
        get: {
          summary: "The usage fold: per turn and in total, with unknowns, conflicts and the budget",
          security: auth,
          parameters: [cid],
          responses: { 200: json("ConversationUsage", "Usage"), ...errors(400, 401, 404) },
        },
      },
      "/v1/chat": {
        post: {
          summary: "The AI SDK's chat route (DefaultChatTransport): one turn as a UI message stream; a retried message never runs twice",
          security: auth,
          requestBody: { content: { "application/json": { schema: ref("ChatRequest") } } },
          responses: {
            200: uiStream("The turn as a UI message stream (x-vercel-ai-ui-message-stream: v1), to its end or to an ask it waits on"),
            ...errors(400, 401, 404, 409, 413, 415, 422, 429, 501, 502, 503, 504),
          },
        },
      },
      "/v1/chat/{cid}/stream": {
        get: {
          summary: "Resume (reconnectToStream, useChat's resume: true): the running turn's whole stream from its start, then live",
          security: auth,
          parameters: [cid],
          responses: { 200: uiStream("The running turn's UI message stream, from its start"), 204: { description: "No turn is running: nothing to resume" }, ...errors(400, 401, 429) },
        },
      },
      "/v1/chat/{cid}/messages": {
        get: {
          summary: "The conversation as the AI SDK's UIMessage[] (seed useChat's messages after a reload)",
          security: auth,
          parameters: [cid],
          responses: { 200: json("UIMessages", "Each turn's user message and answer"), ...errors(400, 401, 404) },
        },
      },
      "/v1/conversations/{cid}/messages": {
        get: {
          summary: "The transcript rebuilt from the log",
          security: auth,
          parameters: [cid],
          responses: { 200: json("Messages", "Messages"), ...errors(400, 401, 404) },
        },
      },
    },
  };
  return cached;
}
