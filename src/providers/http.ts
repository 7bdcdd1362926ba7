/**
 * The HTTP transport every HTTP provider uses: one request function with a timeout on the response
 * headers and on each byte of a body, bounded retries of what is safe to retry (honouring
 * `Retry-After`), and one reader of error bodies in the shapes services answer. Failures become
 * ProviderErrors with a generic code from the status; each provider refines them from `wireCode`
 * in its own folder. The bearer is sent, never logged or echoed.
 */
import type { z } from "zod";
import { backoffMs, retryAfterMsOf } from "../lib/retry";
import { ProviderError, type ProviderErrorCode } from "./errors";

export type FetchLike = (request: Request) => Promise<Response>;

export interface Route {
  method: "GET" | "POST" | "DELETE";
  path: string;
}

export interface HttpTransportOptions {
  baseUrl: string;
  bearer: string;
  fetch: FetchLike;
  /** How long to wait for response headers (and, for a JSON answer, its whole body). */
  headersTimeoutMs: number;
  /** How long a streamed body may go without a byte before it fails (a stalled stream). */
  bodyTimeoutMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

export interface RequestOptions {
  body?: unknown;
  /** A multipart body instead of JSON (an upload); its content type, with the boundary, is the runtime's. */
  form?: FormData;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  /** Retry a retryable failure. Only for calls that are idempotent. */
  retry?: boolean;
  /** With `retry`: whether this retryable failure is worth retrying (a refusal the service already waited for is not). */
  retryIf?: (error: ProviderError) => boolean;
  /** Statuses other than 2xx answered as a Response, not as a failure (an answer whose body says more than its status). */
  accept?: readonly number[];
  signal?: AbortSignal;
  /** A streaming answer: the header timeout covers the headers only; the body gets the idle timeout. */
  stream?: boolean;
}

const MAX_ERROR_BODY_CHARS = 2_000;
/** Attempts for a retryable failure (429, 5xx, transport), including the first. */
const ATTEMPTS = 3;
/** Longest wait between attempts; a longer Retry-After fails the call (as retryable) instead. */
const MAX_RETRY_WAIT_MS = 5_000;

/** Status → retryability: transport failures, timeouts, rate limits and server errors. */
function isRetryableStatus(status: number): boolean {
  return status === 0 || status === 408 || status === 429 || status >= 500;
}

function codeOfStatus(status: number): ProviderErrorCode {
  switch (status) {
    case 401:
    case 403:
      return "unauthorized";
    case 404:
    case 410:
      return "not_found";
    case 408:
      return "timeout";
    case 409:
      return "conflict";
    case 429:
      return "rate_limited";
    case 501:
      return "capability_denied";
    default:
      return status >= 500 ? "unavailable" : "invalid_request";
  }
}

/**
 * Maps a non-2xx answer to a ProviderError. Reads `{ error: "text", code? }`,
 * `{ error: { code?, type?, message?, ... } }` and non-JSON pages (a proxy's HTML error page).
 */
export async function errorFromResponse(response: Response, what: string): Promise<ProviderError> {
  const text = (await response.text().catch(() => "")).slice(0, MAX_ERROR_BODY_CHARS);
  let wireCode: string | undefined;
  let wireMessage: string | undefined;
  let details: Record<string, unknown> | undefined;
  try {
    const body = JSON.parse(text) as unknown;
    const error = typeof body === "object" && body !== null ? (body as Record<string, unknown>).error : undefined;
    if (typeof error === "string") {
      wireMessage = error;
      const code = (body as Record<string, unknown>).code;
      if (typeof code === "string") wireCode = code;
    } else if (typeof error === "object" && error !== null && !Array.isArray(error)) {
      const { code, type, message, ...rest } = error as Record<string, unknown>;
      if (typeof code === "string") wireCode = code;
      else if (typeof type === "string") wireCode = type;
      if (typeof message === "string") wireMessage = message;
      if (Object.keys(rest).length > 0) details = rest;
    }
  } catch {
    // Not JSON: the status alone speaks.
  }
  const status = response.status;
  const message = `${what}: upstream answered ${status}${wireMessage ? ` (${wireMessage.slice(0, 300)})` : ""}`;
  return new ProviderError(codeOfStatus(status), message, {
    status,
    retryable: isRetryableStatus(status),
    retryAfterMs: retryAfterMsOf(response.headers.get("retry-after"), Date.now()),
    ...(wireCode ? { wireCode } : {}),
    ...(wireMessage ? { wireMessage: wireMessage.slice(0, 300) } : {}),
    ...(details ? { details } : {}),
  });
}

/** What reads a streamed answer's body: a reader of its stream, or one whose reads are timed (`HttpTransport.reader`). */
export type ByteReader = Pick<ReadableStreamDefaultReader<Uint8Array>, "read" | "cancel">;

/**
 * A reader whose read fails when no chunk arrives for `ms` (pings count: any byte ends the wait; a
 * reader that does not ask for more is not timed). A wrapper of the body's own reader, not a stream
 * around the body: a chunk costs a clock read, not a pull, an enqueue and a second read. One timer
 * per stream, not one per read: it wakes at most every `ms` while a read waits and, when that read
 * began less than `ms` ago, sleeps again for the rest. On time out the body is cancelled and the
 * read fails with a retryable timeout.
 */
function timedReader(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number, what: string): ByteReader {
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** When the read in progress began; undefined while none is. */
  let waitingSince: number | undefined;
  let failure: ProviderError | undefined;
  const stop = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
  const arm = (after: number) => {
    timer = setTimeout(() => {
      timer = undefined;
      if (waitingSince === undefined) return;
      const waited = Date.now() - waitingSince;
      if (waited < ms) return arm(ms - waited);
      failure = new ProviderError("timeout", `${what}: no byte from upstream for ${ms} ms`, {
        status: 408,
        retryable: true,
      });
      reader.cancel(failure).catch(() => undefined);
    }, after);
  };
  return {
    async read() {
      if (failure) throw failure;
      waitingSince = Date.now();
      if (timer === undefined) arm(ms);
      try {
        const next = await reader.read();
        // Cancelled by the timer: the read ended (as done, or with the reason) because of it.
        if (failure) throw failure;
        if (next.done) stop();
        return next;
      } catch (err) {
        stop();
        throw failure ?? err;
      } finally {
        waitingSince = undefined;
      }
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  };
}

export class HttpTransport {
  private readonly sleep: (ms: number) => Promise<void>;
  /** Streamed answers this transport gave, and what each was for (their reads are timed: `reader`). */
  private readonly streamed = new WeakMap<Response, string>();

  constructor(private readonly options: HttpTransportOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  private buildRequest(route: Route, options: RequestOptions, signal: AbortSignal): Request {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.bearer}`,
      accept: options.stream ? "text/event-stream" : "application/json",
      ...options.headers,
    };
    if (options.body !== undefined && !options.form) headers["content-type"] = "application/json";
    // Route paths are under the base URL's own path (a service behind a proxy at /bridge, say).
    const base = new URL(this.options.baseUrl);
    const url = new URL(`${base.pathname.replace(/\/+$/, "")}${route.path}`, base);
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
    return new Request(url.toString(), {
      method: route.method,
      headers,
      body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal,
    });
  }

  /** Sends one request; answers the 2xx Response, or throws ProviderError. */
  async send(route: Route, options: RequestOptions = {}, what = `${route.method} ${route.path}`): Promise<Response> {
    const timeoutMs = this.options.headersTimeoutMs;
    let attempt = 0;
    while (true) {
      attempt++;
      const timeout = new AbortController();
      // For a JSON call the timer stays armed while its body is read (here, whole), so a stalled
      // body is cut off too, and is cleared once it is in: a timer left pending keeps a Durable
      // Object from hibernating for as long (a call made after a turn's end, say). For a stream it
      // is cleared once the headers arrive.
      const timer = setTimeout(() => timeout.abort(new Error("timeout")), timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal;
      let error: ProviderError;
      // Race the abort too: a transport that ignores the signal must not outlive the timeout. The
      // listener goes once the answer (or the failure) is in: left on a stream's signal, which never
      // fires, it closed over that signal and was kept by the runtime with the request's objects
      // after the object was gone (two per conversation, found by a heap snapshot:
      // bench/notes/2026-12-02-memory-and-replay-stall.md).
      let onAbort: (() => void) | undefined;
      try {
        const aborted = new Promise<never>((_, reject) => {
          if (signal.aborted) return reject(signal.reason);
          onAbort = () => reject(signal.reason);
          signal.addEventListener("abort", onAbort, { once: true });
        });
        let response: Response;
        try {
          response = await Promise.race([this.options.fetch(this.buildRequest(route, options, signal)), aborted]);
        } finally {
          if (onAbort) signal.removeEventListener("abort", onAbort);
        }
        if (options.stream) clearTimeout(timer);
        if (response.ok || options.accept?.includes(response.status)) {
          if (options.stream) {
            this.streamed.set(response, what);
            return response;
          }
          // Read whole under the timer (the request's signal cuts a stalled body off).
          const body = await response.arrayBuffer();
          return new Response(response.status === 204 ? null : body, {
            status: response.status,
            statusText: response.statusText,
            headers: response.headers,
          });
        }
        error = await errorFromResponse(response, what);
      } catch (err) {
        if (options.signal?.aborted) throw err;
        const timedOut = timeout.signal.aborted;
        error = timedOut
          ? new ProviderError("timeout", `${what}: no answer within ${timeoutMs} ms`, { status: 408, retryable: true })
          : new ProviderError(
              "unavailable",
              `${what}: transport failure (${err instanceof Error ? err.message : String(err)})`,
              { status: 0, retryable: true },
            );
      } finally {
        clearTimeout(timer);
      }
      const wait = error.retryAfterMs ?? backoffMs(attempt, 100, MAX_RETRY_WAIT_MS);
      const retry = options.retry && error.retryable && options.retryIf?.(error) !== false;
      if (!retry || attempt >= ATTEMPTS || wait > MAX_RETRY_WAIT_MS) throw error;
      await this.sleep(wait);
    }
  }

  /**
   * Opens a WebSocket on `route` (an upgrade with the same bearer): the socket, accepted, or the
   * upstream's refusal as a ProviderError. A 101 alone proves only the upgrade (docs/sandbox-wire.md §11).
   */
  async upgrade(route: Route, query: Record<string, string> = {}): Promise<WebSocket> {
    const response = await this.send(route, { stream: true, accept: [101], headers: { upgrade: "websocket" }, query });
    const socket = response.webSocket;
    if (!socket) {
      await response.body?.cancel().catch(() => undefined);
      throw new ProviderError(
        "invalid_response",
        `${route.method} ${route.path}: answered ${response.status} without a WebSocket`,
        {
          status: response.status,
          retryable: true,
        },
      );
    }
    socket.accept();
    return socket;
  }

  /**
   * The reader of a streamed answer's body (`send` with `stream`): each read fails when no byte
   * arrives for `bodyTimeoutMs` (a stalled stream); untimed without it, or for another answer.
   */
  reader(response: Response): ByteReader {
    const reader = response.body!.getReader();
    const what = this.streamed.get(response);
    const ms = this.options.bodyTimeoutMs;
    return what !== undefined && ms !== undefined ? timedReader(reader, ms, what) : reader;
  }

  /** Sends and validates a JSON answer with `schema`; a malformed answer is an invalid_response. */
  async json<S extends z.ZodType>(
    route: Route,
    schema: S,
    options: RequestOptions = {},
    what?: string,
  ): Promise<z.output<S>> {
    return (await this.answer(route, schema, options, what)).data;
  }

  /** `json`, with the 2xx status it came with (where the status itself says something, a 200 or a 201). */
  async answer<S extends z.ZodType>(
    route: Route,
    schema: S,
    options: RequestOptions = {},
    what?: string,
  ): Promise<{ data: z.output<S>; status: number }> {
    const label = what ?? `${route.method} ${route.path}`;
    const response = await this.send(route, options, label);
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new ProviderError("invalid_response", `${label}: answer is not JSON`, {
        status: response.status,
        retryable: true,
      });
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
      throw new ProviderError(
        "invalid_response",
        `${label}: answer does not match the expected shape${where} (${issue?.message ?? "invalid"})`,
        {
          status: response.status,
        },
      );
    }
    return { data: parsed.data, status: response.status };
  }
}
