// @ts-check
/**
 * The request bodies the stand-in accepts, written from the wire doc and docs/contracts.md (not
 * taken from the gateway): the bridge's own routes, then the stand-in's control routes.
 */
import { z } from "zod";

/** Ids travel in headers: 1–512 characters, no surrounding whitespace, no control characters. */
const Id = z
  .string()
  .min(1)
  .max(512)
  .refine((s) => s.trim() === s, "must not start or end with whitespace")
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  .refine((s) => !/[\u0000-\u001f\u007f-\u009f]/.test(s), "must not contain control characters");

const Sha256Digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, "must be sha256: and 64 lowercase hex characters");

/** `{ kind: boolean }`, at most 256 kinds. */
const RequestedInteractions = z
  .record(z.string().min(1), z.boolean())
  .refine((r) => Object.keys(r).length <= 256, "at most 256 kinds");

const Part = z.looseObject({ type: z.string().min(1), text: z.string().optional() });
const MessageContent = z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]);

/** `POST /v1/chat/completions`: OpenAI chat plus the bridge's run fields (other OpenAI fields pass). */
export const ChatCompletionRequest = z.looseObject({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string().min(1), content: MessageContent.nullable().optional() })).min(1),
  stream: z.boolean().optional(),
  run_id: Id.optional(),
  session_id: Id.optional(),
  provider: Id.optional(),
  environment_id: Id.optional(),
  execution_id: Id.optional(),
  cwd: z.string().optional(),
  execution: z.looseObject({ kind: z.string() }).optional(),
  interactions: z.unknown().optional(),
});

/** `POST /v1/sessions`. */
export const SessionCreateRequest = z.looseObject({
  session_id: Id.optional(),
  model: z.string().min(1),
  cwd: z.string().optional(),
  interaction_policy: z.unknown().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  execution: z.looseObject({ kind: z.string() }).optional(),
  env: z.record(z.string(), z.string()).optional(),
});

/**
 * `POST /v1/sessions/:id/turns`: `message` or `parts`, a required `run_id`, caller-stable ids.
 * Strict: a misspelt field (`runId`, `turnId`) is refused rather than ignored.
 */
export const TurnRequest = z
  .strictObject({
    message: z.string().optional(),
    parts: z.array(Part).min(1).optional(),
    run_id: Id,
    turn_id: Id.optional(),
    execution_id: Id.optional(),
    provider: Id.optional(),
    environment_id: Id.optional(),
    interactions: RequestedInteractions.optional(),
  })
  .refine((t) => (t.message === undefined) !== (t.parts === undefined), "exactly one of message and parts is required");

const ExactRunControlRef = z.strictObject({
  runId: Id,
  provider: Id,
  environmentId: Id,
  sessionId: Id,
  executionId: Id,
  requestDigest: Sha256Digest,
});

/** A digest-bound cancellation request (docs/contracts.md, Cancellation). */
export const CancellationRequest = z.strictObject({
  operationId: Id,
  run: ExactRunControlRef,
  reason: z.string().min(1).max(2048).optional(),
  requestDigest: Sha256Digest,
});

/** An InteractionResponseCommand (transcript 26). */
export const InteractionResponseCommand = z.strictObject({
  operationId: Id,
  binding: z.strictObject({
    runId: Id,
    provider: Id,
    environmentId: Id,
    sessionId: Id,
    executionId: Id,
    interactionId: Id,
    requestDigest: Sha256Digest,
  }),
  response: z.strictObject({
    id: Id,
    outcome: z.enum(["accepted", "declined", "cancelled"]),
    data: z.record(z.string(), z.unknown()).optional(),
  }),
  commandDigest: Sha256Digest,
});

// ---------------------------------------------------------------------------------------------
// Control routes

const NonNegativeInt = z.number().int().min(0);
const PositiveInt = z.number().int().min(1);
const StreamRoute = z.enum(["chat", "run-events", "session-events"]);

/**
 * Faults (`POST /_standin/faults`, replaces the set; `{}` clears). Counted faults act on the next
 * `count` matching requests or streams and then stop; without a count they act while set.
 */
export const Faults = z.strictObject({
  /** Sever the next `count` SSE answers (default 1) after `afterFrames` frames with an id or data. */
  severStreams: z
    .strictObject({
      afterFrames: NonNegativeInt,
      count: PositiveInt.optional(),
      routes: z.array(StreamRoute).min(1).optional(),
    })
    .optional(),
  /** Every replay of a run or session that exists when this is set answers 410 `expired_replay_cursor`. */
  expireReplay: z.literal(true).optional(),
  /** Every authenticated route answers 401 whatever the bearer (a rotated token). */
  rotateToken: z.literal(true).optional(),
  /** Hold the response headers of the next `count` `/v1` answers (all while set without a count) for `ms`. */
  delayHeaders: z.strictObject({ ms: PositiveInt, count: PositiveInt.optional() }).optional(),
  /** After `afterFrames` frames, send no byte (keepalives included) for `ms` on the next `count` streams (default 1). */
  stallStreams: z
    .strictObject({
      afterFrames: NonNegativeInt,
      ms: PositiveInt,
      count: PositiveInt.optional(),
      routes: z.array(StreamRoute).min(1).optional(),
    })
    .optional(),
  /** `GET /v1/runs/:id` (and its headers) says `status: "unknown"`, as after a bridge restart. */
  unknownRunStatus: z.enum(["unfinished", "all"]).optional(),
  /**
   * The capability documents of these model routes, changed: the `omit`ted top-level fields left
   * out, then the `set` ones served as given (a group of another shape, a field a newer bridge adds).
   */
  capabilities: z
    .record(
      z.string(),
      z.strictObject({ omit: z.array(z.string()).optional(), set: z.record(z.string(), z.json()).optional() }),
    )
    .optional(),
  /** Snapshots of terminal runs name another run id, or another request digest, than the run's own. */
  misattributedSnapshots: z.enum(["run-id", "request-digest"]).optional(),
  /** Every envelope a run's event stream writes names another run id than the run's own. */
  misattributedEnvelopes: z.literal(true).optional(),
  /**
   * The bridge's Pi `models.json` has no entry for the route: a Pi run is refused before its CLI
   * starts, naming the file's absolute path on the bridge's host (a one-shot run's error frame, a
   * retained session's first turn 501 `not_configured`).
   */
  piModelUnlisted: z.literal(true).optional(),
});

/** Variants: the wire shapes the recordings do not settle (`POST /_standin/variants`, replaces the set). */
export const Variants = z.strictObject({
  /** The answer to a digest-bound cancellation: the legacy body plus the echoed ids, or a CancellationAcknowledgement. */
  cancelAnswer: z.enum(["legacy", "acknowledgement"]).optional(),
  /** Which answer shapes a `select` field takes: the recorded `["allow_once"]` only, or also a bare string. */
  selectAnswer: z.enum(["array", "array-or-string"]).optional(),
  /** The HTTP status of an interaction acknowledgement: 200 always, or by its status (404, 409, 410, 400). */
  respondStatus: z.enum(["always-200", "by-status"]).optional(),
  /** Frame field order: `data:` before `id:` (recorded), or `id:` first. */
  fieldOrder: z.enum(["data-first", "id-first"]).optional(),
  /**
   * The event stream of a run lost in a crash: its backlog, then the end of the answer (`end`), or
   * its backlog, then nothing but keepalives (`hold`). No recording shows which.
   */
  lostRunEvents: z.enum(["end", "hold"]).optional(),
  /**
   * Pi routes: retained native sessions (recorded), or `one-shot`: a bridge whose Pi capability
   * document proves no native continuation, so Pi turns are one-shot runs and `POST /v1/sessions`
   * is 501 for them.
   */
  piTransport: z.enum(["retained", "one-shot"]).optional(),
});

/**
 * `POST /_standin/restart`: the bridge process stops and starts again. By default a graceful
 * shutdown, which cancels every run in flight by itself; `crash: true` is a kill -9 (nothing is
 * cancelled, the runs in flight are lost). `downMs`: how long the bridge answers nothing (every
 * connection is reset) before it is back. `forgetOneShotRuns`: the restarted bridge no longer
 * knows its one-shot runs (404), as its README says of its in-memory registry.
 */
export const RestartBody = z.strictObject({
  crash: z.boolean().optional(),
  downMs: NonNegativeInt.max(60_000).optional(),
  forgetOneShotRuns: z.literal(true).optional(),
});

/**
 * Timings and the bridge's own environment (`POST /_standin/settings` merges; `startStandIn` options
 * set the defaults): its process slots, how long a spawn and a health probe wait for one, its jail.
 */
export const Settings = z.strictObject({
  keepaliveMs: PositiveInt.optional(),
  chunkDelayMs: NonNegativeInt.optional(),
  cancelDelayMs: NonNegativeInt.optional(),
  replayWindowMs: PositiveInt.optional(),
  maxConcurrency: PositiveInt.max(1000).optional(),
  acquireDeadlineMs: PositiveInt.max(900_000).optional(),
  healthProbeTimeoutMs: PositiveInt.max(60_000).optional(),
  jailMode: z.enum(["off", "write-jail", "fs-jail"]).optional(),
});

export const ResetBody = z.strictObject({});
