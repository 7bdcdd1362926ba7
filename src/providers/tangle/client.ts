/**
 * The HTTP client of the Sandbox API: one request function with a timeout on every call, bounded
 * retries of what is safe to retry, and one error mapper for every status and body shape the
 * service answers (docs/sandbox-wire.md §1). The account key is sent, never logged or echoed.
 */
import type { z } from "zod";
import { UpstreamErrorBody } from "../../schemas/sandbox-wire";
import { isRetryableStatus, UpstreamError } from "../errors";
import type { Route } from "./routes";

export type FetchLike = (request: Request) => Promise<Response>;

export interface SandboxClientOptions {
  baseUrl: string;
  apiKey: string;
  fetch: FetchLike;
  timeoutMs: number;
  /** Attempts for a retryable failure (429, 5xx, transport), including the first. */
  attempts?: number;
  /** Longest wait between attempts; a longer Retry-After fails the call as retryable instead. */
  maxRetryWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Retry a retryable failure. Only for calls that are idempotent. */
  retry?: boolean;
  signal?: AbortSignal;
  /** A streaming answer: the timeout covers the response headers only, not the body that follows. */
  stream?: boolean;
}

const MAX_ERROR_BODY_CHARS = 2_000;

function parseRetryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

const STATUS_CODES: Record<number, string> = {
  400: "upstream_bad_request",
  401: "upstream_unauthorized",
  403: "upstream_forbidden",
  404: "upstream_not_found",
  408: "upstream_timeout",
  409: "upstream_conflict",
  413: "upstream_too_large",
  429: "upstream_rate_limited",
};

/** Maps a non-2xx answer to an UpstreamError. Reads both error body shapes and non-JSON pages. */
export async function toUpstreamError(response: Response, what: string): Promise<UpstreamError> {
  const text = (await response.text().catch(() => "")).slice(0, MAX_ERROR_BODY_CHARS);
  let upstreamCode: string | undefined;
  let upstreamMessage: string | undefined;
  let details: Record<string, unknown> | undefined;
  try {
    const body = UpstreamErrorBody.safeParse(JSON.parse(text));
    if (body.success) {
      const err = body.data.error;
      if (typeof err === "string") {
        upstreamMessage = err;
        upstreamCode = (body.data as { code?: string }).code;
      } else {
        upstreamCode = err.code;
        upstreamMessage = err.message;
        const { code: _c, message: _m, ...rest } = err;
        if (Object.keys(rest).length > 0) details = rest;
      }
    }
  } catch {
    // Not JSON (a proxy's HTML error page, say): the status alone speaks.
  }
  const status = response.status;
  const code = upstreamCode ? upstreamCode.toLowerCase() : (STATUS_CODES[status] ?? (status >= 500 ? "upstream_unavailable" : "upstream_error"));
  const message = `${what}: upstream answered ${status}${upstreamMessage ? ` (${upstreamMessage})` : ""}`;
  return new UpstreamError(status, code, message, isRetryableStatus(status), parseRetryAfterMs(response.headers.get("retry-after")), details);
}

export class SandboxClient {
  private readonly attempts: number;
  private readonly maxRetryWaitMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: SandboxClientOptions) {
    this.attempts = options.attempts ?? 3;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 5_000;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  private buildRequest(route: Route, options: RequestOptions, signal: AbortSignal): Request {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.apiKey}`,
      accept: "application/json",
      ...options.headers,
    };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    return new Request(new URL(route.path, this.options.baseUrl).toString(), {
      method: route.method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal,
    });
  }

  /** Sends one request; answers the 2xx Response, or throws UpstreamError. The timeout covers the headers. */
  async send(route: Route, options: RequestOptions = {}, what = `${route.method} ${route.path}`): Promise<Response> {
    let attempt = 0;
    while (true) {
      attempt++;
      const timeout = new AbortController();
      // For a JSON call the timer stays armed while the caller reads the body, so a stalled body
      // is cut off too; for a stream it is cleared once the headers arrive.
      const timer = setTimeout(() => timeout.abort(new Error("timeout")), this.options.timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
      let error: UpstreamError;
      try {
        // Race the abort too: a transport that ignores the signal must not outlive the timeout.
        const aborted = new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
        const response = await Promise.race([this.options.fetch(this.buildRequest(route, options, signal)), aborted]);
        if (options.stream) clearTimeout(timer);
        if (response.ok) return response;
        error = await toUpstreamError(response, what);
      } catch (err) {
        if (options.signal?.aborted) throw err;
        const timedOut = timeout.signal.aborted;
        error = new UpstreamError(
          timedOut ? 408 : 0,
          timedOut ? "upstream_timeout" : "upstream_unreachable",
          `${what}: ${timedOut ? `no answer within ${this.options.timeoutMs} ms` : `transport failure (${err instanceof Error ? err.message : String(err)})`}`,
          true,
        );
      }
      const wait = error.retryAfterMs ?? Math.min(this.maxRetryWaitMs, 100 * 2 ** (attempt - 1));
      if (!options.retry || !error.retryable || attempt >= this.attempts || wait > this.maxRetryWaitMs) throw error;
      await this.sleep(wait);
    }
  }

  /** Sends and validates a JSON answer with `schema`; a malformed answer is an upstream error. */
  async json<S extends z.ZodType>(route: Route, schema: S, options: RequestOptions = {}, what?: string): Promise<z.output<S>> {
    const label = what ?? `${route.method} ${route.path}`;
    const response = await this.send(route, options, label);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new UpstreamError(502, "upstream_malformed", `${label}: answer is not JSON`, true);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new UpstreamError(502, "upstream_malformed", `${label}: answer does not match the expected shape (${parsed.error.issues[0]?.message ?? "invalid"})`, false);
    }
    return parsed.data;
  }
}
