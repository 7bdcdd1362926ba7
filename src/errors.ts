/**
 * The project's two error types. Domain outcomes that cross the Durable Object RPC boundary: a
 * session or user object refuses with a Refusal (a stable code, a message that names the problem,
 * details); the Worker chooses the HTTP status for each code (src/http/errors.ts), so no object
 * speaks HTTP. And the public API's ApiError, which the Worker answers with (the configuration's
 * and the tokens' refusals included: src/config.ts, src/auth/tokens.ts).
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";

export type RefusalCode =
  | "conversation_not_found"
  | "turn_not_found"
  | "branch_not_found"
  | "turn_conflict"
  | "queue_full"
  | "turn_not_queued"
  | "session_busy"
  | "turn_not_ready"
  | "capability_denied"
  | "interaction_kind_unsupported"
  | "model_invalid"
  | "budget_exceeded"
  | "session_binding_mismatch"
  | "provider_unavailable"
  | "environment_unavailable"
  | "admission_mismatch"
  | "admission_missing"
  | "upstream_rate_limited"
  /** The agent service has no room for the turn now (the CLI Bridge's process slots are all taken): retry later. */
  | "upstream_at_capacity"
  | "upstream_timeout"
  | "upstream_error"
  /** The user's account is being deleted: nothing of it is read or run any more. */
  | "account_deleting"
  /** The user's account was deleted; the token was issued before that. */
  | "account_deleted"
  /** The provider does not let a user stop or delete their environment (the CLI Bridge's one shared environment). */
  | "environment_control_unsupported"
  /** The user has no environment (none yet, or it was deleted). */
  | "environment_not_found"
  /** The user keeps as many credentials (or MCP servers) as allowed. */
  | "settings_full"
  /** A turn names a model credential the user does not have. */
  | "credential_not_found"
  /** A turn names an MCP server the user does not have, or one they disabled. */
  | "mcp_server_not_found"
  | "mcp_server_disabled"
  /** A turn names a backend the provider's catalog does not list. */
  | "unknown_backend"
  /** A turn asks for what its backend does not support (the catalog's fact named in the details). */
  | "capability_unsupported"
  /** An operation id already names another request. */
  | "operation_conflict"
  /** The user has no terminal by that id (another user's looks the same). */
  | "terminal_not_found"
  /** The sandbox's terminal did not prove itself live (its ready or metadata lacks a field): the attach failed closed. */
  | "terminal_metadata_incomplete"
  /** The user has TERMINAL_MAX_PER_USER terminals open. */
  | "terminal_limit_reached"
  /** The conversation's agent session is driven from its terminal UI (interactive mode): no turn meanwhile. */
  | "session_interactive"
  /** Something else runs in the user's environment (another conversation's turn): try again once it ends. */
  | "environment_busy"
  /** The workspace cannot be restored for that turn: it has no checkpoint, or it was released. */
  | "checkpoint_unavailable"
  /** A checkpoint the operation needs could not be taken: nothing was changed. */
  | "checkpoint_failed"
  /** Upstream was asked and nothing proves what happened: the same operation id asks again. */
  | "outcome_unknown"
  /** A conversation holds as many attachments as allowed (ATTACHMENTS_PER_CONVERSATION). */
  | "attachment_limit_reached"
  /** A turn names an attachment its conversation did not issue. */
  | "attachment_not_found"
  /** A turn's attachment is in none of its conversation's sandboxes any more. */
  | "attachment_unavailable";

export class Refusal extends Error {
  override name = "Refusal";
  constructor(
    readonly code: RefusalCode,
    message: string,
    readonly details?: Record<string, unknown>,
    /** For a refusal worth retrying later: how long to wait. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export interface RefusalWire {
  code: RefusalCode;
  message: string;
  details?: Record<string, unknown>;
  retryAfterSeconds?: number;
}

/** A result that crosses RPC: a value or a refusal (Error subclasses do not survive RPC). */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; refusal: RefusalWire };

export async function captureRpc<T>(run: () => Promise<T> | T): Promise<RpcResult<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (err instanceof Refusal) {
      return {
        ok: false,
        refusal: {
          code: err.code,
          message: err.message,
          ...(err.details !== undefined ? { details: err.details } : {}),
          ...(err.retryAfterSeconds !== undefined ? { retryAfterSeconds: err.retryAfterSeconds } : {}),
        },
      };
    }
    throw err;
  }
}

/**
 * The one error type of the public API. Every failure a client can see is an ApiError with a
 * stable `code`, a message that names the problem, and the HTTP status it maps to. Statuses are
 * chosen here, in the Worker: the objects answer domain outcomes.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toBody(): { error: { code: string; message: string; details?: unknown } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details === undefined ? {} : { details: this.details }),
      },
    };
  }
}
