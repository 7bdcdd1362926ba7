/**
 * The emulator agent's asks: a question, a permission and a plan, and what it does with each
 * answer. Pure: the frames of an ask, and the frames that follow a given answer.
 */
import type { ScriptFrame } from "./script-frame";
import { permissionScopes, type Variants } from "./variants";

export interface AskAnswer {
  outcome: "accepted" | "declined" | "cancelled" | "timeout";
  data?: Record<string, unknown>;
}

export interface AskContext {
  executionId: string;
  sessionId: string;
  environmentId: string;
  /** Faults: an ask whose binding names another session. */
  foreignBinding?: boolean;
  timeoutMs?: number;
  /** The vocabulary of a permission ask's scopes (variant `permissionScopes`). */
  permissionScopes?: Variants["permissionScopes"];
  /** The form of a permission ask's answer (variant `permissionAnswer`). */
  permissionAnswer?: Variants["permissionAnswer"];
  /** How a plan waits for its decision (variant `planDecision`). */
  planDecision?: Variants["planDecision"];
  /** How the run says it waits (variant `waitSignal`): the ask in an `interaction` frame, or a status alone. */
  waitSignal?: Variants["waitSignal"];
}

/** The status a run waiting for an ask of this kind reports (docs/sandbox-wire.md §4, §5). */
function waitStatus(kind: unknown): string {
  if (kind === "question") return "awaiting_question";
  if (kind === "permission") return "blocked_on_approval";
  if (kind === "plan") return "awaiting_plan_decision";
  return "awaiting_interaction";
}

/** A frame that stops the run until the ask `waitFor` is answered (or expires). */
export type WaitFrame = ScriptFrame & { waitFor: string; timeoutMs?: number; ask: NonNullable<ScriptFrame["ask"]> };

function binding(ctx: AskContext, interactionId: string) {
  return {
    runId: ctx.executionId,
    provider: "tangle-sandbox",
    environmentId: ctx.environmentId,
    sessionId: ctx.foreignBinding ? "another-session" : ctx.sessionId,
    executionId: ctx.executionId,
    interactionId,
  };
}

function ask(ctx: AskContext, id: string, fields: Record<string, unknown>): WaitFrame {
  const request = {
    id,
    ...fields,
    ...(ctx.timeoutMs ? { timeoutMs: ctx.timeoutMs, onTimeout: "use_defaults" } : {}),
    binding: binding(ctx, id),
  };
  // Variant `waitSignal: "status"`: no interaction frame, only the status; the ask is listed all the same.
  const frame =
    ctx.waitSignal === "status"
      ? { type: "status", data: { status: waitStatus(fields.kind) } }
      : { type: "interaction", data: { request } };
  return {
    ...frame,
    waitFor: id,
    ask: { request, via: "interaction" },
    ...(ctx.timeoutMs ? { timeoutMs: ctx.timeoutMs } : {}),
  };
}

export function questionAsk(ctx: AskContext): WaitFrame {
  return ask(ctx, `${ctx.executionId}:question-1`, {
    kind: "question",
    title: "A few details before I start",
    body: "I will set up the test runner. Tell me how you want it.",
    answerSpec: {
      fields: [
        { name: "project", type: "text", label: "Project name", required: true, maxLength: 80 },
        {
          name: "framework",
          type: "select",
          label: "Test framework",
          options: ["vitest", "jest", "node:test"],
          required: true,
        },
        { name: "coverage", type: "boolean", label: "Collect coverage?" },
        { name: "workers", type: "number", label: "Parallel workers", min: 1, max: 16, integer: true },
        { name: "labels", type: "select", label: "Labels", options: ["ci", "local"], multi: true, allowCustom: true },
        { name: "token", type: "secret", label: "Registry token (optional)" },
      ],
    },
    allowedOutcomes: ["accepted", "declined"],
  });
}

export function permissionAsk(ctx: AskContext): WaitFrame {
  const fields =
    ctx.permissionAnswer === "response"
      ? [{ name: "response", type: "select", label: "Allow?", options: ["allow", "deny"], required: true }]
      : [
          {
            name: "grant",
            type: "select",
            label: "Allow?",
            options: ["allow_once", "allow_session", "deny"],
            required: true,
          },
          { name: "feedback", type: "text", label: "Anything the agent should know?" },
        ];
  return ask(ctx, `${ctx.executionId}:permission-1`, {
    kind: "permission",
    title: "Run the test suite?",
    body: "I want to run `npm test` in the sandbox.",
    subject: { tool: "bash", command: "npm test" },
    responseScopes: permissionScopes(ctx.permissionScopes ?? "legacy"),
    answerSpec: { fields },
  });
}

/** How the agent reads an answer to its permission ask, in either form: denied, once, or for the session. */
export function permissionGranted(answer: AskAnswer): "deny" | "once" | "session" {
  if (answer.outcome !== "accepted") return "deny";
  const given = answer.data?.grant ?? answer.data?.response;
  if (given === undefined || given === "deny") return "deny";
  return given === "allow_session" ? "session" : "once";
}

/**
 * A plan and the wait for its decision: an `interaction` of kind `plan`, or (variant `planDecision:
 * "route"`) a `status` `awaiting_plan_decision` frame whose ask only the plan routes decide.
 */
export function planFrames(ctx: AskContext, revision: number, body: string): [ScriptFrame, WaitFrame] {
  const planId = `${ctx.executionId}:plan`;
  const submitted: ScriptFrame = {
    type: "plan.submitted",
    data: {
      plan: {
        id: planId,
        revision,
        title: revision === 1 ? "Plan" : `Plan (revision ${revision})`,
        body,
        submittedAt: "2026-01-01T00:00:00.000Z",
      },
    },
  };
  const decision = ask(ctx, `${ctx.executionId}:plan-${revision}`, {
    kind: "plan",
    title: `Approve plan revision ${revision}?`,
    body,
    subject: { planId, revision },
    answerSpec: {
      fields: [
        { name: "decision", type: "select", label: "Decision", options: ["approve", "reject"], required: true },
        { name: "feedback", type: "text", label: "Feedback for a revised plan" },
      ],
    },
  });
  if (ctx.planDecision !== "route") return [submitted, decision];
  return [
    submitted,
    {
      ...decision,
      type: "status",
      data: { status: "awaiting_plan_decision" },
      ask: { ...decision.ask, via: "plan-route" },
    },
  ];
}

export const FIRST_PLAN = "1. Read the README.\n2. Add a test for the parser.\n3. Run the suite.";

/** What the agent says after an answer to the question. */
export function afterQuestion(answer: AskAnswer): string {
  if (answer.outcome === "timeout") return "No answer came, so I will use the defaults.";
  if (answer.outcome !== "accepted") return "Understood, I will use the defaults.";
  const d = answer.data ?? {};
  return `Setting up ${String(d.project)} with ${String(d.framework)}${d.coverage === true ? " and coverage" : ""}.`;
}

/** JSON with object keys sorted at every depth: equal values give equal text. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Whether two answers are the same answer (key order aside): a repeat of a recorded answer. */
export function sameAnswer(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}
