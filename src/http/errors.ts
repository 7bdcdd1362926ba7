import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * The one error type of the public API. Every failure a client can see is an ApiError with a
 * stable `code`, a message that names the problem, and the HTTP status it maps to.
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

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) } };
  }

  /** Plain-object form, for crossing a Durable Object RPC boundary (Error subclasses do not survive it). */
  toWire(): ApiErrorWire {
    return { __apiError: true, status: this.status, code: this.code, message: this.message, details: this.details, headers: this.headers };
  }

  static fromWire(wire: ApiErrorWire): ApiError {
    return new ApiError(wire.status, wire.code, wire.message, wire.details, wire.headers);
  }
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export interface ApiErrorWire {
  __apiError: true;
  status: ContentfulStatusCode;
  code: string;
  message: string;
  details?: unknown;
  headers?: Record<string, string>;
}

export function isApiErrorWire(value: unknown): value is ApiErrorWire {
  return typeof value === "object" && value !== null && (value as { __apiError?: unknown }).__apiError === true;
}

/** A result that crosses RPC: either a value or an ApiError in wire form. */
export type RpcResult<T> = { ok: true; value: T } | { ok: false; error: ApiErrorWire };

export function unwrapRpc<T>(result: RpcResult<T>): T {
  if (result.ok) return result.value;
  throw ApiError.fromWire(result.error);
}

export async function captureRpc<T>(run: () => Promise<T> | T): Promise<RpcResult<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, error: err.toWire() };
    throw err;
  }
}
