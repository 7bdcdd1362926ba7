import { z } from "zod";

/** Fault injection for the emulator, set with `POST /_emulator/faults`. Each test sets what it needs. */
export const EmulatorFaults = z.strictObject({
  /** Close the next `dropStreams` run streams after this many frames each (a severed stream). */
  dropStreamAfterFrames: z.number().int().positive().optional(),
  dropStreams: z.number().int().positive().optional(),
  /** Send every frame twice. */
  repeatFrames: z.boolean().optional(),
  /** Replay from `Last-Event-ID` inclusively, like an old deployment. */
  inclusiveReplay: z.boolean().optional(),
  /** Answer the next `count` API calls (optionally only those whose route key starts with `route`) with `status`. */
  failNext: z
    .strictObject({
      status: z.number().int().min(400).max(599),
      count: z.number().int().positive(),
      route: z.string().optional(),
      retryAfterSeconds: z.number().int().nonnegative().optional(),
      nonJson: z.boolean().optional(),
    })
    .optional(),
  /** Override the frame delay (ms) of runs started from now on. */
  frameDelayMs: z.number().int().nonnegative().optional(),
  /**
   * Override flags of the capability document (a partial document, merged): `true` serves a flag,
   * `false` removes it, and a group given as `false` is removed whole (sandbox-wire §6 names four).
   */
  capabilities: z.record(z.string(), z.union([z.literal(false), z.record(z.string(), z.boolean())])).optional(),
  /**
   * Top-level fields served as given, after `capabilities`: a field the document lacks is added (a
   * newer group, a field of another shape), one it has is replaced (a flag that is not a boolean).
   */
  capabilitiesExtra: z.record(z.string(), z.json()).optional(),
  capabilitiesFail: z.boolean().optional(),
  /** New sandboxes end provisioning in this status instead of running. */
  provisionOutcome: z.enum(["running", "failed", "stopped", "expired"]).optional(),
  /** Report running while the filesystem stays "transitioning" for this long (ms). */
  readinessLagMs: z.number().int().nonnegative().optional(),
  /** Asks of runs started from now on name another session in their binding. */
  foreignBinding: z.boolean().optional(),
  /** Record the next `count` answers but answer 503, as if delivery could not be confirmed. */
  answerDeliveryUnknown: z.number().int().positive().optional(),
  /** Send these frames (by id, in any run) broken: not JSON, failing their schema, or over 1 MiB. */
  corruptFrames: z
    .array(z.strictObject({ id: z.number().int().positive(), kind: z.enum(["not_json", "invalid", "oversize"]) }))
    .optional(),
  /** Admit runs under a different execution id than the one requested (an unproven service path). */
  admitWrongExecutionId: z.boolean().optional(),
  /**
   * The next dispatch that starts a run starts it (it runs), but its stream sends nothing, no
   * admission either, and stays open until the client goes away. A later dispatch attaches.
   */
  withholdAdmission: z.boolean().optional(),
  /** The next `stallStreams` run streams (default 1) send nothing for this many ms after their first frame, then go on. */
  stallStreamMs: z.number().int().positive().optional(),
  stallStreams: z.number().int().positive().optional(),
  /** The next N snapshots (`POST …/snapshot`) answer 500 `SNAPSHOT_FAILED`, taking nothing. */
  snapshotFails: z.number().int().positive().optional(),
  /** §12 the next terminal socket closes 1011 after this many output messages (no exit frame; the PTY lives on). */
  terminalDrop: z.number().int().nonnegative().optional(),
});
export type EmulatorFaults = z.infer<typeof EmulatorFaults>;
