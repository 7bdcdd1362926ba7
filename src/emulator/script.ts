import {
  type AskAnswer,
  type AskContext,
  afterQuestion,
  FIRST_PLAN,
  permissionAsk,
  permissionGranted,
  planFrames,
  questionAsk,
} from "./asks";
import { EDITS_TEXT, editFrames } from "./edits";
import { fileDirectiveFrames } from "./file-directives";
import { markdownAnswer, tokenDeltas } from "./markdown-answer";
import type { ScriptFrame } from "./script-frame";
import { type ChildTaskShape, childTaskCopies, childTaskEnds, childTaskStarts } from "./subagents";
/**
 * The emulator's deterministic scripted agent. A message picks a script; each script is a list of
 * frames, each emitted one frame-delay after the previous one. Pure: the same message and ids give
 * the same frames, which is what lets tests compare a replayed run with an uninterrupted one.
 *
 * Directives a message may contain (they combine):
 *   [long]      a long answer streamed in many small deltas
 *   [slow]      ten times the frame delay
 *   [fail]      the run fails after its first text with an `error` frame
 *   [no-usage]  a backend that forwards no step usage (only the receipt carries usage)
 *   [words:N]   an answer of exactly N words, one delta each, as OpenCode streams it: one text part
 *               for the whole answer, `part.text` the text so far, `delta` the new suffix
 *               (benchmarks; N ≤ 20000)
 *   [paragraphs] with [words:N]: the answer in parts of 25 words instead (each its own text part)
 *   [big-output:N] the `read` tool's output is N bytes (up to 2,000,000): a frame near the size bounds
 *   [recall]    the answer names the session's earlier messages (its memory: a forked session's
 *               starts with the messages copied from the session it was forked from)
 *   [markdown]  the answer is markdown as coding agents write it: headings, lists, a GFM task list,
 *               a table, links (two of them dead: javascript: and data:), fenced code in ts, python,
 *               bash and json with lines wider than a chat bubble, inline code and a long diff;
 *               streamed in deltas of a few characters cut anywhere, as model tokens arrive
 *   [markdown:<section>]  only that section: lists, tasks, table, code, diff, links (they combine;
 *               see markdown-answer.ts)
 * Files the agent changes (edits.ts):
 *   [edits]     after its `read`, the agent writes a new file, edits another, fails one edit and
 *               writes over a third file, with OpenCode's `write` and `edit` tool calls, then says so;
 *               each completed call changes the sandbox's seeded files (workspace-seed.ts)
 *   [write:<path>:<text>]  an OpenCode `write` of the text (no `]` in it; `\n` writes a newline)
 *   [delete:<path>]        a `bash` call removing the file or folder
 *   [rename:<from>:<to>]   a `bash` call moving it
 *   [binary:<path>:<N>]    a `bash` call writing a file of N bytes with NUL bytes in (N ≤ 262144)
 *               (file-directives.ts; several combine, in the message's order, after [edits]; a path
 *               has no `:` or `]`. The frame's `change` is applied to the files when it is emitted)
 * Child tasks (subagents.ts):
 *   [subagents]     after its `read`, the agent starts two child tasks, one nested under the other,
 *                   running through its first step (and [hold]'s hold), then ended (the nested one
 *                   fails); a `child-task` frame per update (variant childTask: a `subtask` part)
 *   [subagents:dup] the same, then every update sent again, each copy a new frame with the same
 *                   `sourceEventId` (copies under a reconnect or a replay)
 * Asks (the run waits for the answer and continues according to it):
 *   [ask]          a question with text, select, boolean, number, multi-select and secret fields
 *   [ask-timeout]  the same question, expiring after a short time (interaction.cancel, timeout)
 *   [permission]   permission to run `npm test` (granted: the tool runs; denied: it does not)
 *   [plan]         a plan to approve, or reject with feedback for a revised plan (an interaction, or a
 *                  status awaiting_plan_decision that only the plan routes decide: variant planDecision)
 * An ask's frame is an `interaction`, or (variant waitSignal) a `status` that only says the run waits.
 * Usage scripts (each rule of the usage fold has one):
 *   [receipt-low]       the receipt reports less input than the streamed steps did
 *   [receipt-partial]   the receipt lacks outputTokens (unknown, not zero)
 *   [receipt-none]      the receipt carries no usage at all
 *   [step-partial]      the first step lacks its output count: no running total after it
 *   [bad-usage]         the first step has a negative count
 * Tests:
 *   [whoami]    the answer says what the run was dispatched with: its backend, its model and its
 *               interaction posture ("backend opencode; model zai/glm-5.2; interactions default")
 *   [hold]      the run stops after its first step until a control call releases it (holds.ts)
 */

export interface ScriptInput {
  message: string;
  sessionId: string;
  executionId: string;
  /** The sandbox the run is in (asks name it in their binding). */
  environmentId?: string;
  /** The turn's interaction posture: omitted means every kind; `{}` enables none. */
  interactions?: Record<string, boolean>;
  /** Answers given so far, by interaction id: the script continues according to them. */
  answers?: Record<string, AskAnswer>;
  foreignBinding?: boolean;
  turnId?: string;
  backend: string;
  /** The model the dispatch named (absent: the backend's default); what [whoami] says. */
  model?: string;
  /** What [whoami] says of the dispatch beyond its backend and model (api-runs.ts dispatchedWith). */
  dispatched?: string[];
  /** The session's earlier user messages, oldest first (what [recall] names). */
  history?: string[];
  /** Variants fixed when the run started (absent: the default shape). */
  permissionScopes?: "contract";
  permissionAnswer?: "response";
  planDecision?: "route";
  waitSignal?: "status";
  childTask?: ChildTaskShape;
}

interface StepTokens {
  input: number;
  output: number;
  reasoning: number;
  cache: { read: number; write: number };
}

const LONG_WORDS = (
  "The repository is organised as a small worker with a router, a session object and a provider layer. " +
  "Each request is authenticated first, then routed to the object that owns the conversation, which keeps a log of every event it has seen. " +
  "Readers replay that log from their cursor and then follow new events as they arrive, so a reader that drops loses nothing. " +
  "The provider layer speaks the sandbox protocol, retries what is safe to retry, and reports every failure with a code. " +
  "Tests drive the whole path against an emulator that can drop streams, repeat frames and replay inclusively. " +
  "Finally the chat page renders the stream as it arrives and resumes from its last event id after a reload."
).split(" ");

function hasDirective(message: string, name: string): boolean {
  return message.includes(`[${name}]`);
}

const MAX_WORDS = 20_000;
const WORDS_PER_PARAGRAPH = 25;

function wordCount(message: string): number | undefined {
  const match = /\[words:(\d{1,5})\]/.exec(message);
  return match ? Math.min(MAX_WORDS, Math.max(1, Number(match[1]))) : undefined;
}

const MAX_BIG_OUTPUT = 2_000_000;
const README_TEXT = "# Demo project\n\nA small service with a test suite.\n";

/** A line of text that JSON carries as it is (no escapes), so N bytes of it are N bytes on the wire. */
const FILLER = "all work and no play makes a long file ";

/** What the scripted `read` of README.md returns: the file, or N bytes of text for [big-output:N]. */
function readOutput(message: string): string {
  const size = bigOutput(message);
  if (size === undefined) return README_TEXT;
  return FILLER.repeat(Math.ceil(size / FILLER.length)).slice(0, size);
}

function bigOutput(message: string): number | undefined {
  const match = /\[big-output:(\d{1,7})\]/.exec(message);
  return match ? Math.min(MAX_BIG_OUTPUT, Number(match[1])) : undefined;
}

/** Splits text into deltas of `wordsPerDelta` words, keeping the exact text when rejoined. */
function splitDeltas(text: string, wordsPerDelta: number): string[] {
  const words = text.split(/(?<= )/);
  const out: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerDelta) out.push(words.slice(i, i + wordsPerDelta).join(""));
  return out;
}

function textFrames(partId: string, text: string, wordsPerDelta: number): ScriptFrame[] {
  return cumulativeFrames(partId, splitDeltas(text, wordsPerDelta));
}

/** One text part growing by each delta: `part.text` the text so far, `delta` the new suffix. */
function cumulativeFrames(partId: string, deltas: string[]): ScriptFrame[] {
  let cumulative = "";
  return deltas.map((delta) => {
    cumulative += delta;
    return { type: "message.part.updated", data: { part: { id: partId, type: "text", text: cumulative }, delta } };
  });
}

function stepFinish(backend: string, partId: string, tokens: StepTokens, cost: number): ScriptFrame {
  return {
    type: "raw",
    data: {
      backend,
      event: { type: "step_finish", part: { id: partId, type: "step-finish", reason: "stop", cost, tokens } },
    },
  };
}

function toReceipt(steps: StepTokens[], cost: number): Record<string, unknown> {
  let input = 0;
  let output = 0;
  let reasoning = 0;
  let cacheRead = 0;
  let cacheWrite = 0;
  for (const s of steps) {
    input += s.input + s.cache.read + s.cache.write;
    output += s.output + s.reasoning;
    reasoning += s.reasoning;
    cacheRead += s.cache.read;
    cacheWrite += s.cache.write;
  }
  return {
    inputTokens: input,
    outputTokens: output,
    reasoningTokens: reasoning,
    cacheReadInputTokens: cacheRead,
    cacheCreationInputTokens: cacheWrite,
    cost,
  };
}

/** A short, stable echo of the user's message for the answer text. */
function echo(message: string): string {
  const clean = message
    .replace(/\[[a-z-]+\]/g, "")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length > 200 ? `${clean.slice(0, 200)}…` : clean;
}

export function buildScript(input: ScriptInput): ScriptFrame[] {
  const { message, executionId: exe, sessionId, backend } = input;
  const slow = hasDirective(message, "slow") ? 10 : 1;
  const forwardsStepUsage = backend === "opencode" && !hasDirective(message, "no-usage");
  const frames: ScriptFrame[] = [];
  const push = (f: ScriptFrame) => frames.push({ ...f, delayFactor: (f.delayFactor ?? 1) * slow });

  push({ type: "status", data: { status: "started" } });
  push({ type: "native.session.observed", data: { provider: backend, nativeSessionId: `native-${exe.slice(-12)}` } });
  push({ type: "message.part.updated", data: { part: { id: `${exe}:step-1`, type: "step-start" } } });
  push({
    type: "message.part.updated",
    data: {
      part: {
        id: `${exe}:reasoning-1`,
        type: "reasoning",
        text: "The user wants an answer grounded in the code, so I will read the README first.",
      },
    },
  });

  const intro = `Looking into it: "${echo(message)}".`;
  for (const f of textFrames(`${exe}:text-1`, intro, 2)) push(f);
  const recalled: string[] = [];
  if (hasDirective(message, "recall")) {
    const earlier = (input.history ?? []).map((m) => `"${echo(m)}"`);
    const memory =
      earlier.length > 0 ? `Earlier in this session: ${earlier.join(" | ")}.` : "Nothing earlier in this session.";
    recalled.push(memory);
    for (const f of textFrames(`${exe}:text-recall`, memory, 3)) push(f);
  }

  // Asks: the frames up to an unanswered ask are the whole script for now; the emulator builds it
  // again, with the answer, once it comes.
  const answers = input.answers ?? {};
  const ctx: AskContext = {
    executionId: exe,
    sessionId,
    environmentId: input.environmentId ?? "unknown",
    foreignBinding: input.foreignBinding,
    ...(hasDirective(message, "ask-timeout") ? { timeoutMs: 150 } : {}),
    ...(input.permissionScopes ? { permissionScopes: input.permissionScopes } : {}),
    ...(input.permissionAnswer ? { permissionAnswer: input.permissionAnswer } : {}),
    ...(input.planDecision ? { planDecision: input.planDecision } : {}),
    ...(input.waitSignal ? { waitSignal: input.waitSignal } : {}),
  };
  // A kind the turn did not enable is never asked: the agent goes on with its defaults.
  const enabled = (kind: string) => input.interactions === undefined || input.interactions[kind] === true;
  const askTexts: string[] = [];
  let textIndex = 1;
  const say = (text: string) => {
    textIndex++;
    askTexts.push(text);
    for (const f of textFrames(`${exe}:text-ask-${textIndex}`, text, 3)) push(f);
  };
  if ((hasDirective(message, "ask") || hasDirective(message, "ask-timeout")) && enabled("question")) {
    const q = questionAsk(ctx);
    push(q);
    const answer = answers[q.waitFor];
    if (!answer) return frames;
    if (answer.outcome === "timeout") push({ type: "interaction.cancel", data: { id: q.waitFor, reason: "timeout" } });
    say(afterQuestion(answer));
  }
  if (hasDirective(message, "plan") && enabled("plan")) {
    let revision = 1;
    let body = FIRST_PLAN;
    while (true) {
      const [submitted, planAsk] = planFrames(ctx, revision, body);
      push(submitted);
      push(planAsk);
      const answer = answers[planAsk.waitFor];
      if (!answer) return frames;
      if (answer.outcome === "accepted" && answer.data?.decision === "approve") {
        say(`Plan revision ${revision} approved. Executing it.`);
        break;
      }
      if (revision >= 3) {
        say("The plan was rejected three times; I will go with the last revision.");
        break;
      }
      revision++;
      body = `${FIRST_PLAN}\n(Revised for: ${String(answer.data?.feedback ?? "no feedback")})`;
    }
  }

  const toolId = `${exe}:tool-1`;
  const input1 = { filePath: "README.md" };
  push({
    type: "message.part.updated",
    data: { part: { id: toolId, type: "tool", tool: "read", state: { status: "pending", input: input1 } } },
  });
  push({
    type: "message.part.updated",
    data: { part: { id: toolId, type: "tool", tool: "read", state: { status: "running", input: input1 } } },
  });
  push({
    type: "message.part.updated",
    data: {
      part: {
        id: toolId,
        type: "tool",
        tool: "read",
        state: { status: "completed", input: input1, output: readOutput(message) },
      },
    },
  });

  const subagents = hasDirective(message, "subagents") || hasDirective(message, "subagents:dup");
  if (subagents) for (const f of childTaskStarts(exe, input.childTask)) push(f);

  if (hasDirective(message, "edits")) {
    for (const f of editFrames(exe)) push(f);
    say(EDITS_TEXT);
  }
  for (const f of fileDirectiveFrames(exe, message)) push(f);

  if (hasDirective(message, "permission") && enabled("permission")) {
    const p = permissionAsk(ctx);
    push(p);
    const answer = answers[p.waitFor];
    if (!answer) return frames;
    const grant = permissionGranted(answer);
    if (grant === "deny") {
      const feedback = answer.data?.feedback ? ` (${String(answer.data.feedback)})` : "";
      say(`You denied running the tests${feedback}, so I only read the code.`);
    } else {
      const bash = `${exe}:tool-bash`;
      const input2 = { command: "npm test" };
      push({
        type: "message.part.updated",
        data: { part: { id: bash, type: "tool", tool: "bash", state: { status: "running", input: input2 } } },
      });
      push({
        type: "message.part.updated",
        data: {
          part: {
            id: bash,
            type: "tool",
            tool: "bash",
            state: { status: "completed", input: input2, output: "12 tests passed" },
          },
        },
      });
      say(`The tests pass (${grant === "session" ? "allowed for this session" : "allowed once"}).`);
    }
  }

  const step1: StepTokens = { input: 120, output: 30, reasoning: 5, cache: { read: 800, write: 40 } };
  if (hasDirective(message, "bad-usage")) step1.input = -5;
  if (hasDirective(message, "step-partial")) (step1 as Partial<StepTokens>).output = undefined;
  const step2: StepTokens = { input: 60, output: 45, reasoning: 0, cache: { read: 960, write: 0 } };
  const cost1 = 0.0012;
  const cost2 = 0.0009;
  if (forwardsStepUsage) push(stepFinish(backend, `${exe}:step-finish-1`, step1, cost1));
  if (hasDirective(message, "hold")) frames.push({ ...frames.pop()!, hold: true });
  // The children end after the hold (a test holds them running), and their copies come after that.
  if (subagents) for (const f of childTaskEnds(exe, input.childTask)) push(f);
  if (hasDirective(message, "subagents:dup")) for (const f of childTaskCopies(exe, input.childTask)) push(f);

  if (hasDirective(message, "fail")) {
    // Fails after its first step: the usage observed so far is all there will be.
    push({
      type: "error",
      data: { message: "The agent process exited unexpectedly (scripted failure).", code: "AGENT_CRASHED" },
    });
    return frames;
  }

  push({ type: "message.part.updated", data: { part: { id: `${exe}:step-2`, type: "step-start" } } });
  const words = wordCount(message);
  const markdown = words === undefined ? markdownAnswer(message) : undefined;
  const answer =
    markdown !== undefined
      ? markdown
      : words !== undefined
        ? Array.from({ length: words }, (_, i) => LONG_WORDS[i % LONG_WORDS.length]).join(" ")
        : hasDirective(message, "long")
          ? LONG_WORDS.join(" ")
          : hasDirective(message, "whoami")
            ? [
                `backend ${backend}; model ${input.model ?? "default"}; interactions ${input.interactions ? JSON.stringify(input.interactions) : "default"}`,
                ...(input.dispatched ?? []),
              ].join("; ")
            : "I read the README: it describes a small service with a test suite. Nothing needs to change.";
  const paragraphed = words !== undefined && hasDirective(message, "paragraphs");
  // The answer in paragraphs of 25 words (split once: a 10,000-word answer is 400 of them).
  const all = paragraphed ? answer.split(" ") : [];
  const paragraphs = paragraphed
    ? Array.from({ length: Math.ceil(all.length / WORDS_PER_PARAGRAPH) }, (_, p) =>
        all.slice(p * WORDS_PER_PARAGRAPH, (p + 1) * WORDS_PER_PARAGRAPH).join(" "),
      )
    : [answer];
  if (paragraphed) {
    // One word per frame, each paragraph its own text part.
    paragraphs.forEach((paragraph, p) => {
      for (const f of textFrames(`${exe}:text-2-${p}`, paragraph, 1)) push(f);
    });
  } else if (markdown !== undefined) {
    for (const f of cumulativeFrames(`${exe}:text-2`, tokenDeltas(markdown))) push(f);
  } else {
    // One text part for the whole answer, its text growing with every delta (OpenCode's way).
    for (const f of textFrames(`${exe}:text-2`, answer, words !== undefined || hasDirective(message, "long") ? 1 : 3))
      push(f);
  }
  if (forwardsStepUsage) push(stepFinish(backend, `${exe}:step-finish-2`, step2, cost2));

  const finalText = [intro, ...recalled, ...askTexts, ...paragraphs].join("\n\n");
  const tokenUsage: Record<string, unknown> = toReceipt(
    [{ ...step1, input: Math.max(0, step1.input), output: step1.output ?? 0 }, step2],
    cost1 + cost2,
  );
  if (hasDirective(message, "receipt-low")) tokenUsage.inputTokens = (tokenUsage.inputTokens as number) - 100;
  if (hasDirective(message, "receipt-partial")) delete tokenUsage.outputTokens;
  push({ type: "status", data: { status: "completed" } });
  push({
    type: "result",
    data: {
      finalText,
      ...(hasDirective(message, "receipt-none") ? {} : { tokenUsage, totalCostUsd: cost1 + cost2 }),
      sessionId,
      executionId: exe,
      status: "success",
    },
  });
  push({
    type: "done",
    data: hasDirective(message, "receipt-none") ? {} : { tokenUsage, totalCostUsd: cost1 + cost2 },
  });
  return frames;
}
