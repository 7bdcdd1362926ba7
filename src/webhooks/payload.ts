/**
 * The body of a delivery, built once when the delivery is recorded and sent byte for byte the same
 * on every attempt (only `webhook-timestamp` and the signature change). Standard Webhooks' shape:
 * `type`, `timestamp` (when the event happened), `data`. The data are the event's ids, the ask's
 * kind and title, the conversation's title, a turn's status and error code, and links: the chat
 * page at the conversation and its summary route, on the origin the endpoint was created from.
 * Never an answer, a message, a result, an error message, a token or a key: what a WebhookEvent
 * (src/schemas/webhooks.ts) can carry is all there is. Pure.
 */
import type { WebhookEvent, WebhookPayload } from "../schemas/webhooks";

export function payloadOf(event: WebhookEvent, linkOrigin: string): WebhookPayload {
  const cid = encodeURIComponent(event.conversationId);
  return {
    type: event.type,
    timestamp: event.at,
    data: {
      conversationId: event.conversationId,
      conversationTitle: event.conversationTitle,
      turnId: event.turnId,
      ...(event.interactionId !== undefined ? { interactionId: event.interactionId } : {}),
      ...(event.kind !== undefined ? { kind: event.kind } : {}),
      ...(event.title !== undefined ? { title: event.title } : {}),
      ...(event.status !== undefined ? { status: event.status } : {}),
      ...(event.errorCode !== undefined ? { errorCode: event.errorCode } : {}),
      links: { conversation: `${linkOrigin}/?c=${cid}`, api: `${linkOrigin}/v1/conversations/${cid}` },
    },
  };
}
