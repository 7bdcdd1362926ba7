/**
 * Dispatching a turn, and the exact control ref it answers (agent-provider-cli-bridge: dispatch,
 * persisted control refs; docs/cli-bridge-wire.md).
 *
 * - Which transport: the turn's model route's capability document decides. Where the bridge proves
 *   retained control and native continuation (Pi today), the conversation is a retained native
 *   session (`/v1/sessions`, then `/turns` with caller-stable run, turn and execution ids);
 *   otherwise each turn is a one-shot run (`/v1/chat/completions`, stream, a stable `X-Run-Id`,
 *   and the conversation's `session_id` so the CLI conversation continues). Retained sessions run
 *   on the host only: a `kind: "sandbox"` execution default is refused before the session is opened.
 * - Which bridge session: one per transport and model route of the conversation, and a new
 *   generation once one ended (sessions.ts). Coming back to a route continues the session it ran
 *   in last (the conversation's history names it, however many turns ago); a session the bridge
 *   holds already (a bridge answers a second create of the same id 409 `session_identity_conflict`)
 *   is read, and continued when it is this route's and still open. When the agent's memory does
 *   not carry over (another route, a session stopped, closed idle, or lost across a bridge
 *   restart), the receipt says so (`agent_memory_reset`).
 * - At capacity: a refusal that says the bridge has no free process slot is `at_capacity`
 *   (capacity.ts), not retried inside the call.
 * - Exact control: the control ref is the server's (the `X-Run-*` headers, or the run object of a
 *   retained turn), digest included; a run that already exists must be the one planned.
 */
import { stripUndefined } from "../../lib/digest";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { DispatchInput, DispatchReceipt } from "../provider";
import { capacityOf, retryUnlessCapacity } from "./capacity";
import { supportsRetainedSessions } from "./claims";
import { type CapabilityDocuments, ENVIRONMENT_ID, modelFor } from "./environment";
import { readSnapshot } from "./result";
import { bridgeRoutes as routes } from "./routes";
import {
  CLI_BRIDGE_PROVIDER_NAME,
  generationIn,
  isOurs,
  PI_ONE_SHOT_PROVIDER,
  sessionFamily,
  sessionOf,
  type Transport,
} from "./sessions";
import { type RunSnapshot, SessionView, TurnAccepted } from "./wire";
import { isNotFound, isWire, refine } from "./wire-errors";

/** Sessions a dispatch may open or step over (ended, lost, taken) before it gives up. */
const MAX_SESSION_STEPS = 8;
/** A retained session in one of these takes no more turns: the conversation continues in a new one. */
const ENDED_SESSION_STATES = new Set(["cancelled", "closed", "failed", "error", "expired"]);

/** What every turn is sent with: the deployment's defaults. */
export interface TurnDefaults {
  /** The default model route (`CLI_BRIDGE_MODEL`); a turn's `model` overrides it. */
  model?: string;
  /** The `defaultExecution` object, forwarded unchanged. */
  execution?: Record<string, unknown>;
  /** The working directory on the bridge host. */
  cwd?: string;
}

type Notice = NonNullable<DispatchReceipt["notice"]>;

/** Why the agent's memory does not carry over into this turn (the receipt's `agent_memory_reset`). */
const RESET = {
  route: (model: string) =>
    `this turn runs on model route ${model}, in an agent session of its own: the agent does not remember this conversation's turns on other model routes`,
  stopped:
    "the agent's previous session ended (it was stopped); this turn starts a new one, without the earlier conversation in its memory",
  lost: "the CLI Bridge lost the agent's session (it restarted); this turn starts a new one, without the earlier conversation in its memory",
  taken:
    "the CLI Bridge holds the agent's session under other settings; this turn starts a new one, without the earlier conversation in its memory",
  closed:
    "each one-shot Pi run is an agent session of its own, closed when the run ends: this turn starts without the earlier conversation in its memory",
  released: [
    "the agent's previous session was closed after it stayed idle (CLI_BRIDGE_SESSION_IDLE_MS), to give its CLI Bridge",
    "process slot back; this turn starts a new one, without the earlier conversation in its memory",
  ].join(" "),
};

/** Why a session of the route's family takes no more turns: the key of its `agent_memory_reset` message. */
type Ended = "stopped" | "lost" | "released";

const memoryReset = (message: string): Notice => ({ code: "agent_memory_reset", message });

/** Where a dispatch starts in the route's session family: the generation the conversation last used, if it did. */
interface Start {
  family: string;
  generation: number;
  /** The conversation's last run was in this family's session of `generation`. */
  continuing: boolean;
  /** The last run was a one-shot Pi run: its session was closed after it. */
  closed: boolean;
  /** The conversation ran elsewhere before (another route or transport): the agent does not remember that. */
  notice?: Notice;
}

export async function dispatchTurn(
  http: HttpTransport,
  defaults: TurnDefaults,
  documents: CapabilityDocuments,
  input: DispatchInput,
): Promise<DispatchReceipt> {
  try {
    return await dispatch(http, defaults, documents, input);
  } catch (err) {
    throw (await capacityOf(http, err)) ?? err;
  }
}

async function dispatch(
  http: HttpTransport,
  defaults: TurnDefaults,
  documents: CapabilityDocuments,
  input: DispatchInput,
): Promise<DispatchReceipt> {
  const model = modelFor(defaults.model, input.model);
  const doc = await documents.read(model);
  const transport: Transport = supportsRetainedSessions(doc) ? "retained" : "one-shot";
  const kind = defaults.execution?.kind;
  if (transport === "retained" && kind !== undefined && kind !== "host") {
    // agent-provider-cli-bridge: retained native sessions run on the host; the bridge would refuse after the session is opened.
    throw new ProviderError(
      "not_configured",
      `model route ${model} runs as a retained native session, which the CLI Bridge runs on the host only, but CLI_BRIDGE_EXECUTION has kind ${JSON.stringify(kind)}: use kind "host", or a model route that runs one-shot`,
      { retryable: false },
    );
  }
  const runId = input.executionId;
  // A run under this id already exists (a retried dispatch): it must be exactly the one planned.
  const existing = await readSnapshot(http, runId).catch((err: unknown) => {
    if (isNotFound(err)) return null;
    throw err;
  });
  if (
    existing &&
    ((existing.executionId && existing.executionId !== input.executionId) ||
      (existing.sessionId && !isOurs(existing.sessionId, input.sessionId)))
  ) {
    throw new ProviderError("admission_mismatch", `the CLI Bridge holds run ${runId} for another session or execution`);
  }
  const start = await startOf(input, transport, model, existing);
  const turn = { http, defaults, input, model, runId, start };
  const receipt = transport === "retained" ? await dispatchRetained(turn) : await dispatchOneShot(turn);
  if (existing?.requestDigest && existing.requestDigest !== receipt.controlRef.requestDigest) {
    throw new ProviderError(
      "admission_mismatch",
      `the CLI Bridge answered run ${runId} with another request digest than the run it holds`,
    );
  }
  return { ...receipt, alreadyExisted: existing !== null };
}

/** One dispatch's fixed facts, as the transports read them. */
interface Turn {
  http: HttpTransport;
  defaults: TurnDefaults;
  input: DispatchInput;
  model: string;
  runId: string;
  start: Start;
}

/**
 * Where in the route's session family this turn starts: the session the run that exists already
 * landed in, else the one the conversation's last run on this route ran in (its previous run, or
 * an earlier one: coming back to a route continues its session).
 */
async function startOf(
  input: DispatchInput,
  transport: Transport,
  model: string,
  existing: RunSnapshot | null,
): Promise<Start> {
  const family = await sessionFamily(input.sessionId, transport, model);
  // A retried dispatch whose run landed: the session it landed in.
  const landed = existing?.sessionId !== undefined ? generationIn(existing.sessionId, family) : null;
  if (landed !== null) return { family, generation: landed, continuing: true, closed: false };
  const previous = input.previous;
  const last = previous ? generationIn(previous.sessionId, family) : null;
  if (previous && last !== null)
    return { family, generation: last, continuing: true, closed: previous.provider === PI_ONE_SHOT_PROVIDER };
  const notice = previous ? { notice: memoryReset(RESET.route(model)) } : {};
  const earlier = latestIn(input.sessions ?? [], family);
  if (earlier) {
    const closed = earlier.ref.provider === PI_ONE_SHOT_PROVIDER;
    return { family, generation: earlier.generation, continuing: true, closed, ...notice };
  }
  return { family, generation: 1, continuing: false, closed: false, ...notice };
}

/** The family's latest session among the conversation's runs, and its run. */
function latestIn(
  runs: readonly AgentExactRunControlRef[],
  family: string,
): { generation: number; ref: AgentExactRunControlRef } | null {
  let latest: ReturnType<typeof latestIn> = null;
  for (const ref of runs) {
    const generation = generationIn(ref.sessionId, family);
    if (generation !== null && generation >= (latest?.generation ?? 0)) latest = { generation, ref };
  }
  return latest;
}

// ------------------------------------------------------------------ one-shot runs

async function dispatchOneShot(turn: Turn): Promise<DispatchReceipt> {
  const { start } = turn;
  let generation = start.closed ? start.generation + 1 : start.generation;
  let notice = start.closed ? memoryReset(RESET.closed) : start.notice;
  for (let step = 0; ; step++) {
    const sessionId = sessionOf(start.family, generation);
    try {
      const controlRef = await startOneShot(turn, sessionId);
      return { controlRef, alreadyExisted: false, ...(notice ? { notice } : {}) };
    } catch (err) {
      // The id is owned by the other session API (or was used otherwise): never this run's session.
      if (!isWire(err, "session_identity_conflict") || step + 1 >= MAX_SESSION_STEPS) throw refine(err);
      generation++;
      notice = memoryReset(RESET.taken);
    }
  }
}

async function startOneShot(
  { http, defaults, input, model, runId }: Turn,
  sessionId: string,
): Promise<AgentExactRunControlRef> {
  const body = stripUndefined({
    model,
    stream: true,
    messages: [{ role: "user", content: input.message }],
    session_id: sessionId,
    run_id: runId,
    cwd: defaults.cwd,
    execution: defaults.execution,
    // Only an empty posture can reach a one-shot run (its route claims no interaction kind).
    interactions: input.interactions,
  });
  // Safe to retry: the same run id and body attach to the same run.
  const options = { body, headers: { "x-run-id": runId }, stream: true, retry: true, retryIf: retryUnlessCapacity };
  const response = await http.send(routes.chat(), options, "start run");
  // The run is the bridge's now; this reader detaches (the one upstream reader re-attaches by id).
  response.body?.cancel().catch(() => undefined);
  const h = (name: string) => response.headers.get(name) ?? undefined;
  const ref = {
    runId: h("x-run-id"),
    provider: h("x-run-provider"),
    environmentId: h("x-run-environment-id"),
    sessionId: h("x-run-session-id"),
    executionId: h("x-run-execution-id"),
    requestDigest: h("x-run-request-digest"),
  };
  if (!ref.runId || !ref.provider || !ref.environmentId || !ref.sessionId || !ref.executionId || !ref.requestDigest) {
    throw new ProviderError(
      "admission_missing",
      "the CLI Bridge started the run without the X-Run-* headers that identify it exactly",
      { retryable: false },
    );
  }
  if (ref.runId !== runId || ref.sessionId !== sessionId) {
    throw new ProviderError(
      "admission_mismatch",
      `the CLI Bridge admitted run ${ref.runId} in session ${ref.sessionId} instead of ${runId} in ${sessionId}`,
    );
  }
  return ref as AgentExactRunControlRef;
}

// ------------------------------------------------------------------ retained sessions

async function dispatchRetained(turn: Turn): Promise<DispatchReceipt> {
  const { http, input, model, runId, start } = turn;
  let generation = start.generation;
  let notice = start.notice;
  let open = !start.continuing;
  let run: RunSnapshot | undefined;
  for (let step = 0; !run; step++) {
    if (step >= MAX_SESSION_STEPS) {
      throw new ProviderError(
        "unavailable",
        `the CLI Bridge took no turn in ${MAX_SESSION_STEPS} sessions of this conversation on ${model}`,
        { retryable: false },
      );
    }
    const sessionId = sessionOf(start.family, generation);
    if (open) {
      const opened = await openSession(turn, sessionId);
      if (opened !== "opened" && opened !== "open") {
        // Another session API's, or another route's (`taken`), or ours and ended: the next generation.
        generation++;
        notice = memoryReset(RESET[opened]);
        continue;
      }
    }
    try {
      run = await startTurn(http, sessionId, input, runId);
    } catch (err) {
      const ended = await sessionEnded(http, err, sessionId, open);
      if (ended === "missing") {
        // The bridge no longer knows the session at all: open it again (its memory is gone).
        open = true;
        notice = memoryReset(RESET.lost);
      } else {
        generation++;
        open = true;
        notice = memoryReset(RESET[ended]);
      }
    }
  }
  if (run.id !== runId || (run.executionId !== undefined && run.executionId !== input.executionId)) {
    throw new ProviderError("admission_mismatch", `the CLI Bridge admitted run ${run.id} instead of ${runId}`);
  }
  if (!run.requestDigest)
    throw new ProviderError("admission_missing", "the CLI Bridge admitted the turn without its request digest");
  const controlRef: AgentExactRunControlRef = {
    runId: run.id,
    provider: run.provider ?? CLI_BRIDGE_PROVIDER_NAME,
    environmentId: run.environmentId ?? ENVIRONMENT_ID,
    sessionId: run.sessionId ?? sessionOf(start.family, generation),
    executionId: run.executionId ?? input.executionId,
    requestDigest: run.requestDigest,
  };
  return { controlRef, alreadyExisted: false, ...(notice ? { notice } : {}) };
}

/**
 * Opens a retained session: `opened`; `open` when the bridge holds it already, on this route and
 * taking turns (a create it answered before, to this conversation: a bridge creates an id once);
 * why it takes none when it holds it ended; `taken` when the id is another session API's or
 * another route's.
 */
async function openSession(
  { http, defaults, model }: Turn,
  bridgeSessionId: string,
): Promise<"opened" | "open" | "taken" | Ended> {
  const body = stripUndefined({ session_id: bridgeSessionId, model, cwd: defaults.cwd, execution: defaults.execution });
  try {
    await http.send(routes.createSession(), { body, retry: true, retryIf: retryUnlessCapacity }, "open session");
    return "opened";
  } catch (err) {
    if (!isWire(err, "session_identity_conflict")) throw refine(err);
  }
  const session = await http
    .json(routes.session(bridgeSessionId), SessionView, { retry: true }, "read session")
    .catch((err: unknown) => {
      // Not a retained session: the id is owned by the legacy session API.
      if (isNotFound(err)) return null;
      throw refine(err);
    });
  if (!session || (session.model !== undefined && session.model !== model)) return "taken";
  return ENDED_SESSION_STATES.has(session.status) || session.status === "unknown" ? endedBy(session.status) : "open";
}

/** Why a session in `status` takes no more turns. */
function endedBy(status: string): Ended {
  if (status === "unknown") return "lost";
  // The gateway closes a conversation's sessions only when idle (a delete leaves no conversation to come back to).
  return status === "closed" ? "released" : "stopped";
}

/**
 * Whether a refused turn means its session takes no more turns, and why: `stopped` (cancelled),
 * `released` (closed idle), `lost` (its native process did not survive a bridge restart),
 * `missing` (the bridge does not know it). Anything else is thrown on: busy is `session_busy`.
 */
async function sessionEnded(
  http: HttpTransport,
  err: unknown,
  bridgeSessionId: string,
  justOpened: boolean,
): Promise<Ended | "missing"> {
  if (isWire(err, "unknown_session")) return "lost";
  if (isNotFound(err) && !justOpened) return "missing";
  if (!isWire(err, "invalid_state")) throw err;
  // Busy with a turn (wait for it), or ended: its own view says which.
  const session = await http
    .json(routes.session(bridgeSessionId), SessionView, { retry: true }, "read session")
    .catch(() => null);
  if (session?.status === "unknown") return "lost";
  if (session && !ENDED_SESSION_STATES.has(session.status))
    throw err.as("session_busy", "the agent session is already running a turn");
  return session ? endedBy(session.status) : "stopped";
}

async function startTurn(
  http: HttpTransport,
  bridgeSessionId: string,
  input: DispatchInput,
  runId: string,
): Promise<RunSnapshot> {
  const body = stripUndefined({
    message: input.message,
    run_id: runId,
    turn_id: input.turnId,
    execution_id: input.executionId,
    interactions: input.interactions,
  });
  try {
    const options = { body, retry: true, retryIf: retryUnlessCapacity };
    return (await http.json(routes.turns(bridgeSessionId), TurnAccepted, options, "start turn")).run;
  } catch (err) {
    const refined = refine(err);
    if (
      refined instanceof ProviderError &&
      refined.code === "conflict" &&
      refined.options.wireCode !== "invalid_state"
    ) {
      throw refined.as("session_busy", "the agent session is already running a turn");
    }
    throw refined;
  }
}
