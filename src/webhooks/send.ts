/**
 * One delivery attempt: a POST of the signed body to the endpoint, the target checked first and at
 * every redirect hop (./target.ts). Redirects are followed by hand, at most `maxRedirects`, each
 * sent again as the same POST with the same headers (the receiver moved its endpoint; the
 * signature covers the body, not the URL). The whole attempt (every hop, headers and the bounded
 * body read) has one timeout. A 2xx status is success as soon as it arrives: its body is not read
 * (a receiver that answers 200 and leaves its body open has still taken the delivery). Of any other
 * answer at most `maxResponseBytes` are read, and only until the timeout: the rest is cancelled and
 * the status stands, with what arrived of the text. A 410 says the receiver wants no more (the
 * delivery is given up); anything else is a failure to try again. Everything a receiver says is
 * kept short and printable.
 */
import { retryAfterMsOf } from "../lib/retry";
import { checkTarget } from "./target";

export interface AttemptRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface AttemptOptions {
  local: boolean;
  timeoutMs: number;
  maxRedirects: number;
  maxResponseBytes: number;
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  now: () => number;
}

export type AttemptOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "failed"; status: number | null; error: string; retryAfterMs?: number; permanent: boolean };

/** How much of a receiver's error text the delivery log keeps. */
const ERROR_TEXT_CHARS = 200;

export async function attemptDelivery(request: AttemptRequest, options: AttemptOptions): Promise<AttemptOutcome> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    let url = request.url;
    for (let hop = 0; ; hop++) {
      const target = checkTarget(url, options.local);
      if (!target.ok)
        return {
          kind: "failed",
          status: null,
          error:
            hop === 0 ? `target refused: the URL ${target.reason}` : `redirect refused: the location ${target.reason}`,
          permanent: false,
        };
      const response = await options.fetch(target.url.href, {
        method: "POST",
        headers: request.headers,
        body: request.body,
        redirect: "manual",
        signal: controller.signal,
      });
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel().catch(() => undefined);
        if (hop >= options.maxRedirects)
          return {
            kind: "failed",
            status: response.status,
            error: `more than ${options.maxRedirects} redirects`,
            permanent: false,
          };
        url = new URL(location, target.url).href;
        continue;
      }
      if (response.status >= 200 && response.status < 300) {
        await response.body?.cancel().catch(() => undefined);
        return { kind: "delivered", status: response.status };
      }
      const text = await readBounded(response, options.maxResponseBytes, controller.signal);
      const said = printable(text);
      const retryAfterMs = retryAfterMsOf(response.headers.get("retry-after"), options.now());
      return {
        kind: "failed",
        status: response.status,
        error: `the receiver answered ${response.status}${said ? `: ${said}` : ""}`,
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        permanent: response.status === 410,
      };
    }
  } catch (err) {
    const error = controller.signal.aborted
      ? `no answer within ${options.timeoutMs} ms`
      : `could not reach the receiver: ${printable(err instanceof Error ? err.message : String(err))}`;
    return { kind: "failed", status: null, error, permanent: false };
  } finally {
    clearTimeout(timer);
  }
}

/** At most `maxBytes` of the body as text, read until `signal` aborts (what arrived by then); the rest is never read. */
async function readBounded(response: Response, maxBytes: number, signal: AbortSignal): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  const end = { done: true as const, value: undefined };
  const aborted = new Promise<typeof end>((resolve) => {
    if (signal.aborted) resolve(end);
    signal.addEventListener("abort", () => resolve(end), { once: true });
  });
  // The timeout may also error the body itself (the fetch's signal): that too ends the read.
  const read = () => reader.read().catch((err: unknown) => (signal.aborted ? end : Promise.reject(err)));
  try {
    while (total < maxBytes) {
      const { done, value } = await Promise.race([read(), aborted]);
      if (done) break;
      chunks.push(value.subarray(0, maxBytes - total));
      total += Math.min(value.byteLength, maxBytes - total);
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(joined);
}

/** Short, one line, no control characters. */
function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it removes
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return flat.length > ERROR_TEXT_CHARS ? `${flat.slice(0, ERROR_TEXT_CHARS)}…` : flat;
}
