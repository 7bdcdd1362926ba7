// @ts-check
/**
 * The scripted CLIs behind the stand-in. Like the fake Codex and Pi CLIs the transcripts were
 * recorded with, they answer `echo: <prompt words>` and react to directive words in the prompt:
 *
 *   [chunks:N]   answer in N chunks (default: "echo: " then one chunk per word)
 *   [slow:N]     N ms before each chunk
 *   [tool]       use a tool: a `tool_calls` delta (one-shot) or a bash tool part (retained)
 *   [error]      the CLI reports an error after its answer: an error frame / a failed status
 *   [exit:N]     the CLI exits with N after its answer (0: a normal end)
 *   [hang]       one chunk, then nothing until the run is cancelled
 *   [permission] Pi retained runs only: ask a bash permission first; allow → the tool runs
 *
 * Usage follows the recordings: Codex counts characters (prompt 17 / completion 23 for "hello
 * bridge peer", transcript 05; 13 / 8 for "[chunks:1] hi", transcript 43); Pi counts 4 input
 * tokens and one output token per answer word (transcripts 23, 25, 41, 52). The recorded usage
 * carries no provenance (the scripted CLIs call no model); these words change that (guessed
 * shapes, from the usage fields of docs/cli-bridge-wire.md and agent-provider-cli-bridge):
 *
 *   [estimated]   the usage says `estimated: true` (a bridge's estimate for a CLI that reported none)
 *   [measured]    the usage says `estimated: false` (inside a retained run's native record too)
 *   [requests:N]  a one-shot run's usage counts N model requests (`model_requests`; Pi's default is 1)
 *   [served:M]    the bridge observed model M (comma-separated for several) serving the run:
 *                 `provider_models` in the usage chunk's own data (one-shot) or in the retained
 *                 `raw` usage event's own fields, beside `backend` (never inside the native record)
 */

const DIRECTIVE =
  /^\[(chunks|slow|exit|requests):(\d{1,9})\]$|^\[(tool|error|hang|permission|estimated|measured)\]$|^\[served:([A-Za-z0-9._/-]{1,64}(?:,[A-Za-z0-9._/-]{1,64}){0,3})\]$/;

/**
 * @typedef {object} Script
 * @property {string} prompt        the prompt as the CLI received it, directives included
 * @property {string} answer        `echo: <words>`
 * @property {string[]} pieces      the answer's chunks, in order
 * @property {number | undefined} slowMs
 * @property {boolean} tool
 * @property {boolean} error
 * @property {number | undefined} exitCode
 * @property {boolean} hang
 * @property {boolean} permission
 * @property {boolean} estimated
 * @property {boolean} measured
 * @property {number | undefined} requests
 * @property {string[] | undefined} served
 */

/**
 * @param {string} prompt
 * @returns {Script}
 */
export function parseScript(prompt) {
  /** @type {string[]} */
  const words = [];
  /** @type {number | undefined} */
  let chunks;
  /** @type {number | undefined} */
  let slowMs;
  /** @type {number | undefined} */
  let exitCode;
  /** @type {number | undefined} */
  let requests;
  /** @type {string[] | undefined} */
  let served;
  const flags = { tool: false, error: false, hang: false, permission: false, estimated: false, measured: false };
  for (const word of prompt.split(/\s+/).filter(Boolean)) {
    const m = DIRECTIVE.exec(word);
    if (!m) {
      words.push(word);
      continue;
    }
    const n = m[2] === undefined ? undefined : Number(m[2]);
    if (m[4] !== undefined) served = m[4].split(",");
    else if (m[1] === "chunks") chunks = Math.max(1, n ?? 1);
    else if (m[1] === "slow") slowMs = n;
    else if (m[1] === "exit") exitCode = n;
    else if (m[1] === "requests") requests = n;
    else flags[/** @type {"tool" | "error" | "hang" | "permission" | "estimated" | "measured"} */ (m[3])] = true;
  }
  const answer = `echo: ${words.join(" ")}`;
  return { prompt, answer, pieces: answerPieces(words, chunks), slowMs, exitCode, requests, served, ...flags };
}

/**
 * The provenance a script's usage declares: `estimated: true`, `estimated: false`, or none (as recorded).
 * @param {Script} script
 */
function provenanceFields(script) {
  return script.estimated ? { estimated: true } : script.measured ? { estimated: false } : {};
}

/**
 * The served-model observations a script's run carries in an event's own data ([served:M]).
 * @param {Script} script
 * @returns {{ provider_models?: string[] }}
 */
export function servedFields(script) {
  return script.served ? { provider_models: script.served } : {};
}

/**
 * "echo: " then one piece per word, each but the last with its trailing space (transcript 05);
 * with [chunks:N] those pieces grouped into N runs, or cut into N slices of characters when N is
 * larger than the number of words (at most one chunk per character).
 * @param {string[]} words
 * @param {number | undefined} chunks
 */
function answerPieces(words, chunks) {
  const pieces = ["echo: ", ...words.map((w, i) => (i < words.length - 1 ? `${w} ` : w))];
  if (chunks === undefined || chunks === pieces.length) return pieces;
  if (chunks < pieces.length) return group(pieces, chunks).map((g) => g.join(""));
  const text = pieces.join("");
  return group([...text], Math.min(chunks, text.length)).map((g) => g.join(""));
}

/**
 * Splits `items` into `n` contiguous groups whose sizes differ by at most one.
 * @template T
 * @param {T[]} items
 * @param {number} n
 * @returns {T[][]}
 */
function group(items, n) {
  const out = [];
  const base = Math.floor(items.length / n);
  let extra = items.length % n;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const size = base + (extra-- > 0 ? 1 : 0);
    out.push(items.slice(at, at + size));
    at += size;
  }
  return out;
}

/** @param {string} text */
function wordCount(text) {
  return text.split(/\s+/).filter(Boolean).length;
}

/**
 * Codex reports usage on its finish chunk, in characters.
 * @param {Script} script
 */
export function codexUsage(script) {
  const prompt = script.prompt.length;
  const completion = script.answer.length;
  return {
    ...(script.requests !== undefined ? { model_requests: script.requests } : {}),
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cost_known: false,
    ...provenanceFields(script),
  };
}

/** Pi's fixed input count in the recordings (whatever the prompt). */
const PI_INPUT_TOKENS = 4;

/**
 * Pi's usage-only chunks on a one-shot run (transcript 41).
 * @param {Script} script
 * @returns {Record<string, unknown>[]}
 */
export function piOneShotUsage(script) {
  const completion = wordCount(script.answer);
  return [
    {
      prompt_tokens: PI_INPUT_TOKENS,
      completion_tokens: completion,
      total_tokens: PI_INPUT_TOKENS + completion,
      fresh_input_tokens: PI_INPUT_TOKENS,
      cache_read_input_tokens: 0,
      cache_write_input_tokens: 0,
      cost_known: false,
      ...provenanceFields(script),
    },
    { model_requests: script.requests ?? 1, cost_known: false, ...provenanceFields(script) },
  ];
}

/**
 * Pi's usage record inside a retained `raw` event (transcript 23).
 * @param {string} textSoFar the answer text the CLI produced
 * @param {Script} [script]
 */
export function piRawUsage(textSoFar, script) {
  return {
    type: "usage",
    data: {},
    usage: {
      inputTokens: PI_INPUT_TOKENS,
      outputTokens: wordCount(textSoFar),
      cacheReadInputTokens: 0,
      cacheCreationInputTokens: 0,
      ...(script ? provenanceFields(script) : {}),
    },
  };
}

/** The tool each CLI uses for [tool] / [permission]. */
export const TOOL_COMMAND = "echo fake";
export const TOOL_OUTPUT = "fake\n";

/**
 * The `tool_calls` delta of a one-shot [tool] run.
 * @param {"codex" | "pi"} backend
 */
export function toolCallDelta(backend) {
  return {
    tool_calls: [
      {
        index: 0,
        id: "call_1",
        type: "function",
        function: { name: backend === "pi" ? "bash" : "shell", arguments: JSON.stringify({ command: TOOL_COMMAND }) },
      },
    ],
  };
}

/**
 * The error a scripted CLI reports for [error] or a non-zero [exit:N].
 * @param {"codex" | "pi"} backend
 * @param {Script} script
 * @returns {{ message: string, type: string } | undefined}
 */
export function scriptedFailure(backend, script) {
  if (script.error) return { message: `${backend} reported an error: scripted error`, type: "backend_error" };
  if (script.exitCode !== undefined && script.exitCode !== 0)
    return { message: `${backend} exited with code ${script.exitCode}`, type: "backend_error" };
  return undefined;
}
