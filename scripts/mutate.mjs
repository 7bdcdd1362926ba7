#!/usr/bin/env node
// A small mutation check: breaks the core modules on purpose, one realistic one-line bug at a time,
// and runs only the tests that should notice. A mutant the tests do not notice "survives": the
// suite is blind there. Runs in a throwaway copy of the working tree, so the tree itself is never
// touched (even if this script is killed), and each run of vitest is bounded in time: a mutant
// that makes a test hang is killed by the clock and reported as such.
//
//   npm run mutate                    every mutant, two at a time
//   npm run mutate -- --only fanout   the mutants whose id contains "fanout"
//   npm run mutate -- --list          the mutants, without running them
//   npm run mutate -- --check         only that every mutant still applies (CI runs this: no tests run)
//   npm run mutate -- --jobs 1 --timeout 180
//
// Exit status: 0 when every mutant was killed, 1 when some survived, 2 when the list is stale (a
// mutant's text no longer occurs exactly once: the code changed; update the list) or the tests do
// not pass unmutated.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

// Test files by module. Unit tests beside the module first; one integration file where the
// module's behaviour only shows end to end.
const T = {
  fanout: ["src/session/subscriptions.test.ts", "src/http/sse-relay.test.ts", "test/reconnect.test.ts"],
  store: ["src/session/subscriptions.test.ts", "test/reconnect.test.ts"],
  turnCache: ["src/session/turn-cache.test.ts", "test/retry.test.ts"],
  send: ["src/session/send-decision.test.ts", "test/retry.test.ts"],
  usage: ["src/usage/usage-fold.test.ts", "test/usage.test.ts"],
  budgets: ["src/usage/budgets.test.ts"],
  answers: ["src/session/answer-check.test.ts"],
  tokens: ["src/auth/tokens.test.ts", "test/auth.test.ts"],
  ids: ["src/auth/tokens.test.ts"],
  sse: ["src/lib/sse.test.ts"],
  digest: ["src/lib/digest.test.ts", "src/session/turn-cache.test.ts"],
  tree: ["src/session/turn-tree.test.ts"],
};

/**
 * Each mutant: the file, the exact text to replace (it must occur exactly once) and its
 * replacement, and the test files to run. Mutants that cannot change behaviour (equivalent
 * mutants) are left out: they would only lower the score without showing a blind spot.
 */
const MUTANTS = [
  // ---- streaming: the object's subscriptions (src/session/subscriptions.ts) and the Worker's relay (src/http/sse-relay.ts)
  {
    id: "fanout.live-on-any-short-page",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "a page cut short by its byte bound is taken for the last one: the subscription goes live without the rest",
    find: "state.live = rows.length < pageSize && lastSent === rows.at(-1);",
    replace: "state.live = rows.length < pageSize;",
  },
  {
    id: "fanout.live-before-last-page",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "a full page is taken for the last one: the subscription goes live before its last page is sent",
    find: "state.live = rows.length < pageSize && lastSent === rows.at(-1);",
    replace: "state.live = rows.length <= pageSize && lastSent === rows.at(-1);",
  },
  {
    id: "fanout.inclusive-cursor",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "replay includes the cursor's own event",
    find: "const rows = this.deps.readPage(state.after, pageSize, state.branch);",
    replace: "const rows = this.deps.readPage(Math.max(0, state.after - 1), pageSize, state.branch);",
  },
  {
    id: "fanout.cursor-not-advanced",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "the cursor stays at the page's first row, not its last",
    find: "      state.after = row.seq;\n",
    replace: "      if (lastSent === undefined) state.after = row.seq;\n",
  },
  {
    id: "fanout.reset-off-by-one",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "a cursor at the lowest one the log holds (just before its oldest event) is taken for a trimmed one",
    find: "(lowest !== null && state.after < lowest)",
    replace: "(lowest !== null && state.after <= lowest)",
  },
  {
    id: "fanout.no-reset-when-ahead",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "a cursor the log never had (ahead of its last event) is not reset",
    find: "if (state.after > last || (lowest !== null && state.after < lowest)) {",
    replace: "if (lowest !== null && state.after < lowest) {",
  },
  {
    id: "fanout.slow-reader-never-closed",
    file: "src/http/sse-relay.ts",
    tests: T.fanout,
    why: "the slow-viewer bound is checked against each message, not what the viewer left unread: a viewer that stops reading is never closed",
    find: "if (live && pipe.unread() > options.maxPendingBytes)",
    replace: "if (live && bytes.byteLength > options.maxPendingBytes)",
  },
  {
    id: "fanout.no-ping",
    file: "src/http/sse-relay.ts",
    tests: T.fanout,
    why: "the heartbeat is never written",
    find: "pingTimer ??= setInterval(() => write(PING), options.pingIntervalMs);",
    replace: "pingTimer ??= setInterval(() => undefined, options.pingIntervalMs);",
  },
  {
    id: "fanout.pushed-to-replaying",
    file: "src/session/subscriptions.ts",
    tests: T.fanout,
    why: "live events are pushed to subscriptions still replaying: they get them twice",
    find: "if (!state?.live) continue;",
    replace: "if (!state) continue;",
  },

  // ---- the log's paging (src/session/store/log.ts)
  {
    id: "store.inclusive-page",
    file: "src/session/store/log.ts",
    tests: T.store,
    why: "a page starts at the cursor, not after it (the 14-minute hang of issue 10)",
    find: "FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
    replace: "FROM events WHERE seq >= ? ORDER BY seq LIMIT ?",
  },

  // ---- the turn tree (src/session/turn-tree.ts)
  {
    id: "tree.followed-parent-continues",
    file: "src/session/turn-tree.ts",
    tests: T.tree,
    why: "a turn after a turn already followed goes on in its branch instead of starting one",
    find: "const followed = turns.some((t) => t.parentTurnId === parentTurnId);",
    replace: "const followed = false;",
  },
  {
    id: "tree.path-without-ancestors",
    file: "src/session/turn-tree.ts",
    tests: T.tree,
    why: "a branch's path holds only its own turns, not those it shares with the branch it was forked from",
    find: "    at = turn.parentTurnId;\n",
    replace: "    at = turn.branch === branch ? turn.parentTurnId : null;\n",
  },
  {
    id: "tree.empty-branch-not-reused",
    file: "src/session/turn-tree.ts",
    tests: T.tree,
    why: "a branch whose first turn was refused is made again (a second fork) by the next turn with its origin",
    find: "if (reusable) return",
    replace: "if (reusable && false) return",
  },

  // ---- a send's decision (src/session/send-decision.ts) and turn identity (src/session/turn-cache.ts)
  {
    id: "turn-cache.no-conflict",
    file: "src/session/send-decision.ts",
    tests: T.send,
    why: "the same turn id with other content is served the old turn",
    find: "if (turn.requestDigest !== requestDigest) return",
    replace: 'if (turn.requestDigest !== requestDigest && turn.status === "running") return',
  },
  {
    id: "turn-cache.failed-not-final",
    file: "src/session/send-decision.ts",
    tests: T.send,
    why: "only a completed turn is cached: a failed one looks in progress",
    find: "if (TERMINAL_TURN_STATUSES.has(turn.status)) return",
    replace: 'if (turn.status === "completed") return',
  },
  {
    id: "turn-cache.no-busy",
    file: "src/session/send-decision.ts",
    tests: T.send,
    why: "a new turn while another runs is accepted",
    find: 'if (!active && !next) return { kind: "dispatch" };',
    replace: 'if ((!active || active.status !== "pending") && !next) return { kind: "dispatch" };',
  },
  {
    id: "turn-cache.splittable-execution-id",
    file: "src/session/turn-cache.ts",
    tests: T.turnCache,
    why: "execution ids without length prefixes: (ab, c) and (a, bc) collide",
    find: "`execution/v1|${sessionId.length}:${sessionId}|${turnId.length}:${turnId}`",
    replace: "`execution/v1|${sessionId}${turnId}`",
  },
  {
    id: "turn-cache.after-inclusive",
    file: "src/session/turn-cache.ts",
    tests: [...T.turnCache, "test/gateway.test.ts"],
    why: "a turn's `after` names its first event instead of the one before it",
    find: "after: turn.acceptedSeq - 1",
    replace: "after: turn.acceptedSeq",
  },

  // ---- usage fold (src/usage/usage-fold.ts)
  {
    id: "usage.unknown-total-is-zero",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a conversation total turns an unknown counter into 0",
    find: "(states.length === 0 ? 0 : (sums[c] ?? null))",
    replace: "(states.length === 0 ? 0 : (sums[c] ?? 0))",
  },
  {
    id: "usage.complete-ignores-output",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a total missing output tokens says complete",
    find: 'complete: !unknown.has("inputTokens") && !unknown.has("outputTokens"),',
    replace: 'complete: !unknown.has("inputTokens"),',
  },
  {
    id: "usage.delta-keys-forgotten",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a repeated delta (a reconnect) counts twice",
    find: "stepIds: report.key !== undefined ? [...state.stepIds, report.key] : state.stepIds",
    replace: "stepIds: state.stepIds",
  },
  {
    id: "usage.unknown-delta-counter-is-zero",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a counter one delta did not report is added as 0",
    find: "if (before !== undefined && v !== undefined) running[c] = before + v;",
    replace: "running[c] = (before ?? 0) + (v ?? 0);",
  },
  {
    id: "usage.equal-cumulative-is-conflict",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a repeated cumulative total is recorded as a conflict",
    find: "if (previous !== undefined && next < previous)",
    replace: "if (previous !== undefined && next <= previous)",
  },
  {
    id: "usage.second-receipt-wins",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a repeated terminal frame replaces the receipt",
    find: "if (state.receipt !== null) return state;",
    replace: "if (state.receipt === undefined) return state;",
  },
  {
    id: "usage.broken-steps-still-count",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "after an unreadable delta, later deltas still build a running total",
    find: "if (next.stepsBroken) return { state: next, running: null, changed: true };",
    replace: "",
  },
  {
    id: "usage.provenance-strongest-wins",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a total over an estimate and a measurement is called measured",
    find: "return STRENGTH[a] <= STRENGTH[b] ? a : b;",
    replace: "return STRENGTH[a] >= STRENGTH[b] ? a : b;",
  },
  {
    id: "usage.receipt-without-provenance-measured",
    file: "src/usage/usage-fold.ts",
    tests: T.usage,
    why: "a receipt whose provenance nobody gave is taken as measured",
    find: 'provenance: ReceiptProvenance = { provenance: "unknown" }',
    replace: 'provenance: ReceiptProvenance = { provenance: "measured" }',
  },

  // ---- budgets (src/usage/budgets.ts)
  {
    id: "budgets.limit-not-reached",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "spending exactly the limit is allowed (> instead of >=)",
    find: "exceeded: c.used >= c.tokens",
    replace: "exceeded: c.used > c.tokens",
  },
  {
    id: "budgets.user-ignores-others",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "the user's budget counts only this conversation",
    find: "used: own.used + elsewhere.used",
    replace: "used: own.used",
  },
  {
    id: "budgets.floor-looks-complete",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "unknown usage elsewhere is not reported as a floor",
    find: "complete: own.complete && elsewhere.complete",
    replace: "complete: own.complete",
  },
  {
    id: "budgets.output-not-counted",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "output tokens do not count against the budget",
    find: "used: (total.inputTokens ?? 0) + (total.outputTokens ?? 0)",
    replace: "used: total.inputTokens ?? 0",
  },
  {
    id: "budgets.loosest-applies",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "the loosest budget is reported instead of the tightest",
    find: ".sort((a, b) => b.used / b.tokens - a.used / a.tokens)",
    replace: ".sort((a, b) => a.used / a.tokens - b.used / b.tokens)",
  },
  {
    id: "budgets.elsewhere-estimates-ignored",
    file: "src/usage/budgets.ts",
    tests: T.budgets,
    why: "the user's budget calls spend measured though estimates elsewhere count in it",
    find: "provenance: elsewhere.used > 0 ? (weakest(own.provenance, elsewhere.provenance) ?? own.provenance) : own.provenance,",
    replace: "provenance: own.provenance,",
  },

  // ---- answer validation (src/session/answer-check.ts)
  {
    id: "answers.forbidden-top-level-only",
    file: "src/lib/forbidden-names.ts",
    tests: [...T.answers, "src/lib/forbidden-names.test.ts"],
    why: "forbidden names are looked for only at the top level (defect 2)",
    find: "out.push(...forbiddenPaths((value as Record<string, unknown>)[key], at));",
    replace: "",
  },
  {
    id: "answers.max-length-off-by-one",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "a text of exactly maxLength characters is refused",
    find: "value.length > max",
    replace: "value.length >= max",
  },
  {
    id: "answers.min-off-by-one",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "a number equal to min is refused",
    find: "value < f.min",
    replace: "value <= f.min",
  },
  {
    id: "answers.max-unchecked",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "a number above max is accepted",
    find: "if (f.max !== undefined && value > f.max)",
    replace: "if (f.max !== undefined && value > f.max + 1)",
  },
  {
    id: "answers.custom-grant",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "allowCustom lets a permission answer name any grant",
    find: '!(f.allowCustom && request.kind !== "permission")',
    replace: "!f.allowCustom",
  },
  {
    id: "answers.null-is-a-value",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "null for an optional field is checked as a value",
    find: "if (value === undefined || value === null) {",
    replace: "if (value === undefined) {",
  },
  {
    id: "answers.data-on-decline",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "a declined answer may carry data",
    find: "if (data !== undefined && Object.keys(data).length > 0) problems.push",
    replace: "if (data !== undefined && Object.keys(data).length > 99) problems.push",
  },
  {
    id: "answers.undeclared-field",
    file: "src/session/answer-check.ts",
    tests: T.answers,
    why: "a field the request does not declare is accepted",
    find: "if (!fields.has(key) && !isForbiddenName(key)) problems.push",
    replace: "if (false) problems.push",
  },
  {
    id: "answers.session-scope-ignored",
    file: "public/wire/grants.js",
    tests: [...T.answers, "test/page/grants.test.ts"],
    why: "a grant is allowed whatever scopes the request offers",
    find: "return scopes.some((s) => given.includes(s));",
    replace: "return true;",
  },

  // ---- the answer's identity (src/session/interaction-desk.ts)
  {
    id: "answers.data-not-in-identity",
    file: "src/session/interaction-desk.ts",
    tests: ["test/interactions.test.ts"],
    why: "an answer is told from another by its outcome alone: other data with the same outcome is taken for the same answer",
    find: "const answerHmac = await answerKey(this.deps.secret(), interactionId, command.outcome, command.data);",
    replace: "const answerHmac = await answerKey(this.deps.secret(), interactionId, command.outcome, undefined);",
  },

  // ---- webhooks (src/user/webhook-desk.ts)
  {
    id: "webhooks.rotated-secret-signs-forever",
    file: "src/user/webhook-desk.ts",
    tests: ["test/webhooks/webhooks.test.ts"],
    why: "a rotated-out signing secret keeps signing deliveries after its grace period",
    find: "const previousLive = endpoint.previous_secret !== null && endpoint.previous_expires_at !== null && endpoint.previous_expires_at > startedAt;",
    replace: "const previousLive = endpoint.previous_secret !== null;",
  },

  // ---- account deletion (src/user/store.ts)
  {
    id: "deletion.spend-kept",
    file: "src/user/store.ts",
    tests: ["test/budget.test.ts"],
    why: "a deleted account's spend is kept: the same user signing in again starts with the old spend against the budget",
    find: '"incarnations", "deleted_spend", ',
    replace: '"incarnations", ',
  },

  // ---- auth (src/auth/tokens.ts, the stream-token check in src/http/app-context.ts)
  {
    id: "tokens.use-unchecked",
    file: "src/auth/tokens.ts",
    tests: T.tokens,
    why: "a stream token works as a user token",
    find: "if (use !== expectedUse) throw",
    replace: "if (expectedUse !== undefined && use !== expectedUse) throw",
  },
  {
    id: "tokens.no-exp-required",
    file: "src/auth/tokens.ts",
    tests: T.tokens,
    why: "a token without exp never expires (defect 9)",
    find: 'requiredClaims: ["exp"],',
    replace: "requiredClaims: [] as string[],",
  },
  {
    id: "tokens.future-iat",
    file: "src/auth/tokens.ts",
    tests: T.tokens,
    why: "an iat in the future is accepted (defect 9)",
    find: "payload.iat > now + CLOCK_SKEW_SECONDS",
    replace: "payload.iat > now + 1000 * CLOCK_SKEW_SECONDS",
  },
  {
    id: "tokens.audience-unchecked",
    file: "src/auth/tokens.ts",
    tests: T.tokens,
    why: "the audience is not checked",
    find: "...(config.AUTH_AUDIENCE ? { audience: config.AUTH_AUDIENCE } : {}),",
    replace: "",
  },
  {
    id: "tokens.empty-sub",
    file: "src/auth/tokens.ts",
    tests: T.tokens,
    why: "an empty sub is a user",
    find: "payload.sub.length === 0 ||",
    replace: "",
  },
  {
    id: "worker.stream-token-any-conversation",
    file: "src/http/app-context.ts",
    tests: ["test/auth.test.ts"],
    why: "a stream token opens any conversation of its user",
    find: "if (verified.claims.cid !== cid) {",
    replace: 'if (verified.claims.cid === undefined && cid === "") {',
  },

  // ---- ids (src/auth/ids.ts)
  {
    id: "ids.splittable",
    file: "src/auth/ids.ts",
    tests: T.ids,
    why: "session ids without length prefixes: (ali, cec1) and (alic, ec1) collide",
    find: 'parts.map((p) => `${p.length}:${p}`).join("|")',
    replace: 'parts.join("")',
  },
  {
    id: "ids.session-ignores-user",
    file: "src/auth/ids.ts",
    tests: T.ids,
    why: "two users' conversations with one id share a session",
    find: '["session/v1", userId, conversationId]',
    replace: '["session/v1", conversationId]',
  },

  // ---- SSE (src/lib/sse.ts)
  {
    id: "sse.cr-injection",
    file: "src/lib/sse.ts",
    tests: T.sse,
    why: "a lone CR in an id or event name is let through",
    find: "if (/[\\r\\n\\0]/.test(value))",
    replace: "if (/[\\n\\0]/.test(value))",
  },
  {
    id: "sse.data-split-on-lf-only",
    file: "src/lib/sse.ts",
    tests: T.sse,
    why: "data with a CR is written as one data line",
    find: "frame.data.split(/\\r\\n|\\r|\\n/)",
    replace: "frame.data.split(/\\r?\\n/)",
  },
  {
    id: "sse.value-trimmed",
    file: "src/lib/sse.ts",
    tests: T.sse,
    why: "field values lose their trailing spaces",
    find: 'if (value.startsWith(" ")) value = value.slice(1);',
    replace: "value = value.trim();",
  },
  {
    id: "sse.crlf-split-across-chunks",
    file: "src/lib/sse.ts",
    tests: T.sse,
    why: "a CRLF split between chunks ends a frame early",
    find: 'if (text.startsWith("\\n")) text = text.slice(1);',
    replace: "",
  },
  {
    id: "sse.data-joined-without-lf",
    file: "src/lib/sse.ts",
    tests: T.sse,
    why: "multi-line data is joined without newlines",
    find: 'frame.data = this.dataLines.join("\\n");',
    replace: 'frame.data = this.dataLines.join("");',
  },

  // ---- digest (src/lib/digest.ts)
  {
    id: "digest.keys-unsorted",
    file: "src/lib/digest.ts",
    tests: T.digest,
    why: "keys in insertion order: the same request digests two ways",
    find: "const keys = Object.keys(value).sort();",
    replace: "const keys = Object.keys(value);",
  },
  {
    id: "digest.key-surrogates-unchecked",
    file: "src/lib/digest.ts",
    tests: T.digest,
    why: "a lone surrogate in a key is let through",
    find: "return `${canonicalString(key, path)}:",
    replace: "return `${JSON.stringify(key)}:",
  },
  {
    id: "digest.null-prototype-refused",
    file: "src/lib/digest.ts",
    tests: T.digest,
    why: "an object without a prototype is refused",
    find: "return proto === Object.prototype || proto === null;",
    replace: "return proto === Object.prototype;",
  },
  {
    id: "digest.strip-keeps-undefined",
    file: "src/lib/digest.ts",
    tests: T.digest,
    why: "stripUndefined keeps undefined members",
    find: "if (child !== undefined) out[key] = stripUndefined(child);",
    replace: "out[key] = stripUndefined(child);",
  },
];

/**
 * A mutant's text as a pattern: each run of white space in it matches any run of white space, so a
 * line the formatter wraps (or joins) is still found.
 */
function patternOf(m) {
  const escaped = m.find
    .trim()
    .split(/\s+/)
    .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(escaped.join("\\s+"), "g");
}

/**
 * Why a mutant no longer applies (the code moved on: update it), or null: its file and test files
 * exist, its text occurs exactly once, and its replacement changes it.
 */
function staleness(m) {
  const path = join(root, m.file);
  if (!existsSync(path)) return `${m.file} does not exist`;
  const missing = m.tests.filter((t) => !existsSync(join(root, t)));
  if (missing.length > 0) return `its test files ${missing.join(", ")} do not exist`;
  const count = readFileSync(path, "utf8").match(patternOf(m))?.length ?? 0;
  if (count !== 1) return `its text is found ${count} times in ${m.file}, not once`;
  if (m.find === m.replace) return "its replacement is its text";
  return null;
}

/** The vitest project (vitest.config.ts) a test file runs in. */
const PROJECT_OF = (file) =>
  file === "test/budget.test.ts" || file === "test/webhooks/budget.test.ts"
    ? "budgets"
    : file.startsWith("test/webhooks/")
      ? "webhooks"
      : "gateway";

function parseArgs(argv) {
  const args = { only: undefined, list: false, check: false, jobs: 2, timeoutS: 150 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--only") args.only = argv[++i];
    else if (a === "--list") args.list = true;
    else if (a === "--check") args.check = true;
    else if (a === "--jobs") args.jobs = Math.max(1, Number(argv[++i]));
    else if (a === "--timeout") args.timeoutS = Number(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

/** A copy of the working tree (sources, tests, config; not node_modules, which is linked). */
function makeCopy() {
  const dir = mkdtempSync(join(tmpdir(), "gateway-mutate-"));
  const skip = new Set(["node_modules", ".git", ".wrangler", "dist", "test-results"]);
  cpSync(root, dir, {
    recursive: true,
    filter: (src) => {
      const rel = relative(root, src);
      return rel === "" || !skip.has(rel.split("/")[0]);
    },
  });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

/** Runs vitest on some files in `dir`; answers "pass", "fail" or "timeout", and the output tail. */
function runVitest(dir, files, timeoutS) {
  const byProject = new Map();
  for (const f of files) byProject.set(PROJECT_OF(f), [...(byProject.get(PROJECT_OF(f)) ?? []), f]);
  const args = [
    "run",
    ...[...byProject.keys()].flatMap((p) => ["--project", p]),
    ...files,
    "--reporter=dot",
    "--bail=1",
  ];
  return new Promise((resolve) => {
    const child = spawn(join(dir, "node_modules", ".bin", "vitest"), args, {
      cwd: dir,
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    const keep = (d) => (output = (output + d).slice(-20_000));
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
    }, timeoutS * 1000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      // vitest leaves workerd children behind when killed: end the whole group.
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone already
      }
      resolve({ result: timedOut ? "timeout" : code === 0 ? "pass" : "fail", output });
    });
  });
}

function firstFailure(output) {
  // eslint-style ANSI stripping, then the first failing test's name.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character starts what it removes
  const plain = output.replace(/\u001b\[[0-9;]*m/g, "");
  const line = plain.split("\n").find((l) => /^ FAIL /.test(l) || /✗|×/.test(l));
  return line?.trim().slice(0, 160) ?? "";
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const mutants = MUTANTS.filter((m) => !args.only || m.id.includes(args.only));
  if (args.list) {
    for (const m of mutants) console.log(`${m.id.padEnd(40)} ${m.file}  ${m.why}`);
    console.log(`${mutants.length} mutants`);
    return 0;
  }

  // A mutant whose text is not found exactly once means the code moved on: say so, do not guess.
  const stale = [];
  for (const m of mutants) {
    const problem = staleness(m);
    if (problem) {
      stale.push(m);
      console.log(`stale: ${m.id}: ${problem}`);
    }
  }
  const runnable = mutants.filter((m) => !stale.includes(m));
  if (args.check) {
    console.log(
      `${runnable.length} of ${mutants.length} mutants apply${stale.length > 0 ? `; ${stale.length} stale: update them in scripts/mutate.mjs` : ""}`,
    );
    return stale.length > 0 ? 2 : 0;
  }
  if (runnable.length === 0) return 2;

  const started = Date.now();
  const copies = Array.from({ length: Math.min(args.jobs, runnable.length) }, makeCopy);
  try {
    // The tests must pass unmutated, or every mutant would look killed.
    const allFiles = [...new Set(runnable.flatMap((m) => m.tests))];
    const baseline = await runVitest(copies[0], allFiles, args.timeoutS * 2);
    if (baseline.result !== "pass") {
      console.log(`the tests do not pass unmutated (${baseline.result}):\n${baseline.output.slice(-4000)}`);
      return 2;
    }
    console.log(
      `baseline: ${allFiles.length} test files pass unmutated (${((Date.now() - started) / 1000).toFixed(0)} s)`,
    );

    const results = [];
    let next = 0;
    const worker = async (dir) => {
      while (next < runnable.length) {
        const m = runnable[next++];
        const path = join(dir, m.file);
        const original = readFileSync(path, "utf8");
        const t0 = Date.now();
        let outcome;
        try {
          writeFileSync(
            path,
            original.replace(patternOf(m), () => m.replace),
          );
          outcome = await runVitest(dir, m.tests, args.timeoutS);
        } finally {
          writeFileSync(path, original);
        }
        const seconds = (Date.now() - t0) / 1000;
        const status =
          outcome.result === "pass" ? "SURVIVED" : outcome.result === "timeout" ? "killed (timeout)" : "killed";
        results.push({ m, status, seconds });
        const detail = outcome.result === "fail" ? `  ← ${firstFailure(outcome.output)}` : "";
        console.log(`${status.padEnd(17)} ${m.id.padEnd(40)} ${seconds.toFixed(0).padStart(4)} s${detail}`);
      }
    };
    await Promise.all(copies.map(worker));

    const survived = results.filter((r) => r.status === "SURVIVED");
    const timeouts = results.filter((r) => r.status === "killed (timeout)");
    const killed = results.length - survived.length;
    const score = ((100 * killed) / results.length).toFixed(0);
    console.log("");
    for (const r of survived) console.log(`survivor: ${r.m.id} (${r.m.file}): ${r.m.why}`);
    for (const r of timeouts) console.log(`killed only by the clock (a hang, not a failing test): ${r.m.id}`);
    console.log(
      `mutation score: ${killed}/${results.length} killed (${score}%), ${survived.length} survived, ${timeouts.length} by timeout, ${stale.length} stale; ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    return stale.length > 0 ? 2 : survived.length > 0 ? 1 : 0;
  } finally {
    for (const dir of copies) if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
