// @ts-check
/**
 * The page's first requests, started from <head> (boot.js, a classic script that runs as the HTML is
 * parsed) while the page's module (app.js) is still on its way: on a slow link the module takes a
 * second or more, and the requests it would make once it runs would wait for it. Started here, their
 * answers are in by then, and the page opens the conversation the URL names in the round trip it
 * spent loading (docs/chat-page.md#fast-on-slow-links): /healthz, and with a token this browser
 * kept, the conversation list and the conversation's stream opened with its snapshot (GET
 * …/events?snapshot=1: what it shows, then every event after it, live; lib/stream.js reads it on).
 *
 * The page's api (lib/api.js) takes each answer instead of asking again, once, when it asks the same
 * path with the same token; a request made later goes out as usual. A page embedded by a host
 * (window.AGENT_GATEWAY: its token, its base URL) starts nothing here.
 */
import { headersTimeout, PATHS, REQUEST_TIMEOUT_MS } from "./api.js";
import { signInStore } from "./storage.js";

/** Starts the requests, and keeps their answers (promises of the responses) for the page's api. */
export function startEarly() {
  if (window.AGENT_GATEWAY) return;
  const token = signInStore.token();
  const paths = [PATHS.health];
  const cid = new URL(location.href).searchParams.get("c");
  const stream = token && cid ? PATHS.snapshot(cid) : null;
  if (token) paths.push(PATHS.conversations);
  if (stream) paths.push(stream);
  /** @type {Map<string, Promise<Response>>} */
  const answers = new Map();
  for (const path of paths) {
    // The stream reads on once its answer began: only its start is bounded.
    const timeout = path === stream ? headersTimeout() : null;
    const answer = fetch(path, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: timeout ? timeout.signal : AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (timeout) answer.finally(timeout.began).catch(() => {});
    // A failure is the page's to report when it takes the answer; unread, it is nobody's.
    answer.catch(() => {});
    answers.set(path, answer);
  }
  window.pageEarly = { token, answers };
}

/**
 * The answer to a request started early for `url` (a path of this origin) with `token`, taken once;
 * null when there is none.
 * @param {string} url
 * @param {string | null} token
 * @returns {Promise<Response> | null}
 */
export function takeEarly(url, token) {
  const early = window.pageEarly;
  if (!early || early.token !== token) return null;
  const answer = early.answers.get(url) ?? null;
  early.answers.delete(url);
  return answer;
}
