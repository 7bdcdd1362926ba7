/**
 * HTTP statuses, chosen here in the Worker: the status of each refusal an object can answer, and
 * of each acknowledgement. The API's error type itself is ApiError (../errors.ts).
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError, type Refusal, type RefusalCode, type RefusalWire, type RpcResult } from "../errors";
import type { InteractionAcknowledgement } from "../schemas/contracts";

/** The HTTP status of each refusal an object can answer. */
const REFUSAL_STATUS: Record<RefusalCode, ContentfulStatusCode> = {
  conversation_not_found: 404,
  turn_not_found: 404,
  branch_not_found: 404,
  turn_conflict: 409,
  session_busy: 409,
  turn_not_ready: 409,
  queue_full: 409,
  turn_not_queued: 409,
  capability_denied: 501,
  interaction_kind_unsupported: 400,
  model_invalid: 400,
  budget_exceeded: 429,
  session_binding_mismatch: 500,
  provider_unavailable: 501,
  environment_unavailable: 503,
  admission_mismatch: 502,
  admission_missing: 502,
  upstream_rate_limited: 503,
  upstream_at_capacity: 503,
  upstream_timeout: 504,
  upstream_error: 502,
  account_deleting: 409,
  account_deleted: 410,
  environment_control_unsupported: 501,
  environment_not_found: 404,
  settings_full: 409,
  credential_not_found: 400,
  mcp_server_not_found: 400,
  mcp_server_disabled: 400,
  unknown_backend: 400,
  capability_unsupported: 400,
  operation_conflict: 409,
  environment_busy: 409,
  checkpoint_unavailable: 409,
  checkpoint_failed: 502,
  outcome_unknown: 502,
  attachment_limit_reached: 409,
  attachment_not_found: 400,
  attachment_unavailable: 409,
  terminal_not_found: 404,
  terminal_metadata_incomplete: 502,
  terminal_limit_reached: 429,
  session_interactive: 409,
};

/** The HTTP status an object's refusal is answered with. */
export function refusalStatus(code: RefusalCode): ContentfulStatusCode {
  return REFUSAL_STATUS[code];
}

function refusalToApi(refusal: RefusalWire): ApiError {
  const headers =
    refusal.retryAfterSeconds !== undefined ? { "retry-after": String(refusal.retryAfterSeconds) } : undefined;
  return new ApiError(REFUSAL_STATUS[refusal.code], refusal.code, refusal.message, refusal.details, headers);
}

/** A refusal met in the Worker itself (a provider's failure, say) as the matching ApiError. */
export function apiErrorOf(refusal: Refusal): ApiError {
  return refusalToApi(refusal);
}

/** The value of an object's answer, or its refusal thrown as the matching ApiError. */
export function unwrapRpc<T>(result: RpcResult<T>): T {
  if (result.ok) return result.value;
  throw refusalToApi(result.refusal);
}

/** HTTP status of each interaction acknowledgement; the body is the acknowledgement either way. */
export const ACK_HTTP_STATUS: Record<InteractionAcknowledgement["status"], ContentfulStatusCode> = {
  accepted: 200,
  already_resolved_same: 200,
  already_resolved_different: 409,
  expired: 410,
  cancelled: 409,
  unknown_interaction: 404,
  unknown_run: 404,
  binding_mismatch: 409,
  invalid_response: 422,
  transport_failure: 502,
};
