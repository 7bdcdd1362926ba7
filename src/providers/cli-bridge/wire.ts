/**
 * What a CLI Bridge server answers (docs/cli-bridge-wire.md and the recorded exchanges). Objects
 * are loose: a newer bridge may add fields; the fields this client relies on are checked.
 */
import { z } from "zod";

/** A group of flags; a missing group, or one that is not an object, gates off only its own claims. */
const FlagGroup = z.looseObject({}).optional().catch(undefined);
/**
 * `GET /v1/capabilities?model=`: the route's capability document (its flags read by claims.ts,
 * where only `true` is a claim). Groups it does not read are ignored, whatever their shape.
 */
export const CapabilityDocument = z.looseObject({
  streaming: FlagGroup,
  sessions: FlagGroup,
  retainedControl: FlagGroup,
  nativeContinuation: FlagGroup,
  interactions: FlagGroup,
});

/** `GET /v1/runs/:runId`, and the `run` inside turn and cancel answers. */
export const RunSnapshot = z.looseObject({
  id: z.string().min(1),
  requestDigest: z.string().optional(),
  /** running | done | error | cancelled | unknown (after a bridge restart). */
  status: z.string(),
  state: z.string().optional(),
  terminal: z.boolean().optional(),
  provider: z.string().optional(),
  environmentId: z.string().optional(),
  sessionId: z.string().optional(),
  executionId: z.string().optional(),
  error: z.unknown().optional(),
});
export type RunSnapshot = z.infer<typeof RunSnapshot>;

/** `GET /v1/sessions/:id`: a retained session's view. */
export const SessionView = z.looseObject({ id: z.string(), status: z.string(), model: z.string().optional() });

/** `GET /health` (200, or 503 when no backend is ready): its host executor's process slots, where it reports them. */
export const Health = z.looseObject({
  executor: z
    .looseObject({ in_flight: z.number().int().nonnegative(), max: z.number().int().positive() })
    .optional()
    .catch(undefined),
});

/** `POST /v1/sessions/:id/turns` → 202. */
export const TurnAccepted = z.looseObject({ run: RunSnapshot });

/** `POST /v1/runs/:runId/cancel`: the legacy shape, or a cancellation acknowledgement. */
export const CancelAnswer = z.looseObject({
  cancelled: z.boolean().optional(),
  cancel_requested: z.boolean().optional(),
  terminal: z.boolean().optional(),
  status: z.string().optional(),
  effect: z.string().optional(),
  run: z.unknown().optional(),
});

/** `POST /v1/runs/:runId/interactions/:iid/respond` → an InteractionAcknowledgement. */
export const RespondAnswer = z.looseObject({
  status: z.string(),
  message: z.string().optional(),
  retryable: z.boolean().optional(),
});

/** One OpenAI-style chunk of a one-shot run. */
export const Chunk = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.number().optional(),
        delta: z
          .looseObject({
            content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z
              .array(
                z.looseObject({
                  index: z.number().optional(),
                  id: z.string().optional(),
                  function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
                }),
              )
              .optional(),
          })
          .optional(),
        finish_reason: z.string().nullish(),
      }),
    )
    .optional(),
  usage: z.looseObject({}).optional(),
  error: z.looseObject({ message: z.string().optional(), type: z.string().optional() }).optional(),
});
export type Chunk = z.infer<typeof Chunk>;

/** One canonical runtime envelope of a retained run (docs/contracts.md RuntimeEventEnvelope). */
export const Envelope = z.looseObject({
  runId: z.string(),
  eventId: z.string(),
  sequence: z.number().int().nonnegative(),
  event: z.looseObject({ type: z.string() }),
});
export type Envelope = z.infer<typeof Envelope>;
