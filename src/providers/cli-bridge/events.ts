/**
 * The reader of one run's events (`GET /v1/runs/:runId/events` after a cursor,
 * docs/cli-bridge-wire.md) and its reconnects. A run's stream is OpenAI chunks (chunks.ts) or
 * runtime envelopes (envelopes.ts), never both. Chunks carry deltas only, and a retained run's end
 * carries no text: a reader that joins mid-run reads the run again from its first event and shows
 * what is after the cursor. The stream's last event is an end only once the run's snapshot
 * confirms it (result.ts); a run the bridge lost (`status: "unknown"` after a restart, or 404) ends
 * at once. A stream that ended saying the bridge cancelled the run ends it cancelled when the
 * bridge cannot confirm it any more (it shut down: ends.ts `STOPPED`). A failure's message is the
 * bridge's without its host's file paths.
 */
import { readSseFrames } from "../../lib/sse";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { ProviderError } from "../errors";
import type { HttpTransport } from "../http";
import type { EventsOptions, ProviderEvent, RunError } from "../provider";
import { ChunkStream } from "./chunks";
import { LOST, type RunEnd, STOPPED } from "./ends";
import { EnvelopeStream } from "./envelopes";
import { scrubbed } from "./host-paths";
import { confirmEnd, readSnapshot } from "./result";
import { bridgeRoutes as routes } from "./routes";
import type { SessionCloser } from "./session-end";
import { isNotFound, refine } from "./wire-errors";

const MAX_FRAME_BYTES = 1024 * 1024 + 64 * 1024;

export async function* readEvents(
  http: HttpTransport,
  closer: SessionCloser,
  ref: AgentExactRunControlRef,
  options: EventsOptions,
): AsyncIterable<ProviderEvent> {
  // Chunks carry deltas only, and a retained run's end carries no text: to know the whole answer
  // and whole part texts, a reader that joins mid-run reads the run from its first event (within
  // the bridge's replay window) and shows what is after the cursor.
  let cursor = options.after;
  let fromStart = cursor === undefined;
  while (true) {
    const restart = yield* readOnce(http, closer, ref, cursor, fromStart, options);
    if (!restart) return;
    fromStart = true;
    cursor = undefined;
  }
}

/** One read of the run's stream; answers true when it must be read again from its start. */
async function* readOnce(
  http: HttpTransport,
  closer: SessionCloser,
  ref: AgentExactRunControlRef,
  cursor: string | undefined,
  fromStart: boolean,
  options: EventsOptions,
): AsyncGenerator<ProviderEvent, boolean> {
  let response: Response;
  try {
    response = await http.send(
      routes.runEvents(ref.runId),
      {
        headers: cursor !== undefined ? { "last-event-id": cursor } : {},
        retry: true,
        stream: true,
        signal: options.signal,
      },
      "read run events",
    );
  } catch (err) {
    // The bridge no longer knows a run it admitted: lost (a restart cleared its registry).
    if (isNotFound(err) && !(err.options.wireCode === "expired_replay_cursor")) {
      yield { kind: "terminal", upstreamId: undefined, ...LOST };
      return false;
    }
    throw refine(err);
  }
  // A run lost in a crash is never terminal: its stream ends after what it had, or stays open.
  const status =
    response.headers.get("x-run-status") ?? (await readSnapshot(http, ref.runId).catch(() => null))?.status;
  if (status === "unknown") {
    response.body?.cancel().catch(() => undefined);
    yield { kind: "terminal", upstreamId: undefined, ...LOST };
    return false;
  }
  const after = options.after === undefined ? -1 : Number(options.after);
  const isNew = (id: string | undefined) => id === undefined || !Number.isFinite(after) || Number(id) > after;
  let format: "openai" | "canonical" | undefined;
  const chunks = new ChunkStream(ref.runId);
  const envelopes = new EnvelopeStream(ref.runId);
  for await (const frame of readSseFrames(http.reader(response), MAX_FRAME_BYTES)) {
    if (frame.data === undefined) continue;
    const data = frame.data;
    const kind = frame.event !== undefined && frame.event !== "message" ? "canonical" : "openai";
    if (format && kind !== format) {
      throw new ProviderError(
        "invalid_response",
        "the CLI Bridge mixed OpenAI chunks and runtime envelopes in one stream",
        { retryable: false },
      );
    }
    format = kind;
    if (kind === "openai") {
      if (!fromStart) return true;
      const event = chunks.read({ ...frame, data });
      if (event && isNew(event.upstreamId)) yield event;
      if (chunks.done) break;
      continue;
    }
    const read = envelopes.read({ ...frame, data });
    if ("event" in read) {
      if (isNew(read.event.upstreamId)) yield read.event;
      continue;
    }
    // The run's last event: confirm it from the snapshot (a cancelled retained run reads failed here).
    const cancelled = read.end.status === "cancelled" || read.end.detail === "cancelled";
    const confirmed = await confirmStreamEnd(http, closer, ref, cancelled);
    if (!confirmed) return false;
    if (confirmed.closeFailed)
      yield { kind: "warning", upstreamId: undefined, code: "session_close_failed", message: confirmed.closeFailed };
    const { end } = confirmed;
    const detail = read.end.detail;
    const error = errorOf(
      end,
      typeof detail === "string" ? { message: scrubbed(detail, `run ${ref.runId}`) } : undefined,
    );
    // Part updates carry whole texts, so a reader that joined mid-run reads only the answer from the start.
    const text = fromStart ? envelopes.answer : await answerFromStart(http, ref, envelopes.answer);
    yield { kind: "terminal", upstreamId: read.end.upstreamId, ...end, text, ...(error ? { error } : {}) };
    return false;
  }
  if (format !== "openai" || !(chunks.done || chunks.finish || chunks.error)) return false; // severed: reconnect
  const confirmed = await confirmStreamEnd(http, closer, ref, chunks.error?.error.code === "run_cancelled");
  if (!confirmed) return false;
  if (confirmed.closeFailed)
    yield { kind: "warning", upstreamId: undefined, code: "session_close_failed", message: confirmed.closeFailed };
  const { end } = confirmed;
  const upstreamId = chunks.error?.upstreamId ?? chunks.finish?.upstreamId;
  const error = errorOf(
    end,
    chunks.error?.error ?? { message: `the run ended (${chunks.finish?.reason ?? "failed"})` },
  );
  yield {
    kind: "terminal",
    upstreamId,
    ...end,
    text: chunks.answer,
    ...(error ? { error } : {}),
    ...(chunks.finish?.usage ? { usage: chunks.finish.usage } : {}),
  };
  return false;
}

/**
 * The end a stream's last event announced, confirmed from the snapshot. One that said the bridge
 * cancelled the run (its cancel frame: a caller's cancel, or its own as it shut down) is that end
 * when the bridge cannot confirm it: it is down, or back from a restart that recorded no end (the
 * run reads `unknown`, or the bridge no longer knows it). So a shutdown ends the run one way,
 * however soon the bridge is back.
 */
async function confirmStreamEnd(
  http: HttpTransport,
  closer: SessionCloser,
  ref: AgentExactRunControlRef,
  cancelled: boolean,
): ReturnType<typeof confirmEnd> {
  if (!cancelled) return confirmEnd(http, closer, ref);
  const confirmed = await confirmEnd(http, closer, ref).catch(() => ({ end: LOST }));
  return confirmed && confirmed.end === LOST ? { end: STOPPED } : confirmed;
}

/** A retained run's answer read from its first event; what the reader saw when that read fails. */
async function answerFromStart(http: HttpTransport, ref: AgentExactRunControlRef, seen: string): Promise<string> {
  try {
    const response = await http.send(routes.runEvents(ref.runId), { retry: true, stream: true }, "read run events");
    const envelopes = new EnvelopeStream(ref.runId);
    for await (const frame of readSseFrames(http.reader(response), MAX_FRAME_BYTES)) {
      if (frame.data === undefined || frame.event === undefined) continue;
      if ("end" in envelopes.read({ ...frame, data: frame.data })) break;
    }
    return envelopes.answer.length >= seen.length ? envelopes.answer : seen;
  } catch {
    return seen;
  }
}

/**
 * A failed run's error: the gateway's own (lost, mismatched) first, then what the stream said,
 * then the snapshot's. None for a run that did not fail.
 */
function errorOf(end: RunEnd, fromStream: RunError | undefined): RunError | undefined {
  if (end.status !== "failed") return undefined;
  if (end.error?.code) return end.error;
  return fromStream ?? end.error ?? { message: "the run failed" };
}
