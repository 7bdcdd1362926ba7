// @ts-check
/**
 * SSE readers of runs and sessions: backlog after a cursor, then live frames, keepalive comments,
 * and the stream faults (severed streams, stalled bodies). A reader never drives a run: a run goes
 * on when its readers leave, and a reader can re-attach with a cursor.
 */
import { randomBytes } from "node:crypto";
import {
  CONNECTED_FRAME,
  commentFrameWithId,
  DONE_FRAME,
  dataFrame,
  KEEPALIVE_FRAME,
  SSE_HEADERS,
  sortedHeaders,
} from "./wire.mjs";

/** @typedef {import("./bridge.mjs").Bridge} Bridge */
/** @typedef {import("./runs.mjs").Run} Run */
/** @typedef {import("./runs.mjs").Session} Session */
/** @typedef {import("./runs.mjs").OneShotFrame} OneShotFrame */
/** @typedef {import("./runs.mjs").Envelope} Envelope */
/** @typedef {"chat" | "run-events" | "session-events"} StreamRoute */

/**
 * One SSE answer: writes go through a queue so a stall fault can hold them; frames with an id or
 * data are counted for the sever and stall faults; keepalives are neither counted nor sent while
 * stalled.
 */
class SseWriter {
  /**
   * @param {Bridge} bridge
   * @param {import("node:http").ServerResponse} res
   * @param {StreamRoute} route
   * @param {{ runId?: string, sessionId?: string }} scope
   */
  constructor(bridge, res, route, scope) {
    this.bridge = bridge;
    this.res = res;
    this.runId = scope.runId;
    this.sessionId = scope.sessionId;
    this.sever = /** @type {import("./runs.mjs").Faults["severStreams"]} */ (
      bridge.takeStreamFault("severStreams", route)
    );
    this.stall = /** @type {import("./runs.mjs").Faults["stallStreams"]} */ (
      bridge.takeStreamFault("stallStreams", route)
    );
    this.framesWritten = 0;
    this.stalled = false;
    this.stallDone = false;
    this.closed = false;
    /** @type {Promise<void>} */
    this.queue = Promise.resolve();
    /** @type {Array<() => void>} */
    this.cleanups = [];
    this.keepalive = setInterval(() => {
      if (!this.stalled) this.enqueue(KEEPALIVE_FRAME, false);
    }, bridge.settings.keepaliveMs);
    res.on("close", () => this.close());
    bridge.writers.add(this);
  }

  /** @param {Record<string, string>} headers */
  start(headers) {
    this.res.writeHead(200, sortedHeaders({ ...SSE_HEADERS, ...headers }));
    this.res.flushHeaders();
    this.queue = this.queue.then(() => this.checkFaults());
  }

  /**
   * @param {string} text
   * @param {boolean} counted whether the frame carries an id or data
   */
  enqueue(text, counted) {
    this.queue = this.queue.then(async () => {
      if (this.closed) return;
      // Wait until the bytes are handed to the socket, so a sever right after them keeps them.
      await new Promise((resolve) => this.res.write(text, () => resolve(undefined)));
      if (counted) {
        this.framesWritten++;
        await this.checkFaults();
      }
    });
  }

  async checkFaults() {
    if (this.closed) return;
    if (this.sever && this.framesWritten >= this.sever.afterFrames) {
      // Severed: the connection drops without the chunked terminator, as a network cut does.
      this.res.socket?.destroy();
      this.close();
      return;
    }
    if (this.stall && !this.stallDone && this.framesWritten >= this.stall.afterFrames) {
      this.stallDone = true;
      this.stalled = true;
      await new Promise((resolve) => setTimeout(resolve, this.stall?.ms));
      this.stalled = false;
    }
  }

  /** Ends the answer after what is queued. */
  end() {
    this.queue = this.queue.then(() => {
      if (!this.closed) this.res.end();
      this.close();
    });
  }

  /** @param {() => void} fn */
  onClose(fn) {
    if (this.closed) fn();
    else this.cleanups.push(fn);
  }

  /** Drops the connection at once, queued bytes unsent (the bridge process died). */
  drop() {
    if (this.closed) return;
    this.res.socket?.destroy();
    this.close();
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    this.bridge.writers.delete(this);
    if (!this.res.writableEnded) this.res.end();
    for (const fn of this.cleanups.splice(0)) fn();
  }
}

/**
 * How a reader renders one-shot frames: each reader has its own chunk id and `created`, and the
 * model the route writes (the request's model on the POST, "cli-bridge" on the events route).
 * @param {string} model
 * @param {"data-first" | "id-first"} order
 */
function oneShotRenderer(model, order) {
  const chatId = `chatcmpl-${randomBytes(12).toString("hex")}`;
  const created = Math.floor(Date.now() / 1000);
  /** @param {OneShotFrame} frame */
  return (frame) => {
    if (frame.kind === "metadata") return commentFrameWithId(frame.seq, "bridge-metadata");
    if (frame.kind === "error")
      return dataFrame({ data: JSON.stringify({ error: frame.error }), id: frame.seq, order });
    const chunk = { id: chatId, object: "chat.completion.chunk", created, model, ...frame.chunk };
    return dataFrame({ data: JSON.stringify(chunk), id: frame.seq, order });
  };
}

/**
 * Streams a run after `cursor`, then live until its terminal: a one-shot run in the OpenAI format
 * ending `[DONE]`, a retained run as canonical envelopes ending after its terminal status event.
 * @param {Bridge} bridge
 * @param {import("node:http").ServerResponse} res
 * @param {{ run: Run, cursor: number, route: "chat" | "run-events", model: string, headers: Record<string, string> }} options
 */
export function streamRun(bridge, res, { run, cursor, route, model, headers }) {
  const writer = new SseWriter(bridge, res, route, { runId: run.id, sessionId: run.session?.id });
  const order = bridge.variants.fieldOrder ?? "data-first";
  writer.start(headers);
  run.readers++;
  writer.onClose(() => {
    run.readers--;
    run.events.off("frame", onFrame);
    run.events.off("terminal", onTerminal);
  });

  const oneShot = run.kind === "one-shot";
  const render = oneShot ? oneShotRenderer(model, order) : undefined;
  const misattributed = bridge.faults.misattributedEnvelopes === true;
  /** @param {OneShotFrame | Envelope} frame */
  const write = (frame) => {
    if (render) writer.enqueue(render(/** @type {OneShotFrame} */ (frame)), true);
    else {
      const envelope = /** @type {Envelope} */ (frame);
      writer.enqueue(
        envelopeFrame(
          misattributed ? { ...envelope, runId: `${envelope.runId}-other` } : envelope,
          (e) => e.sequence,
          order,
        ),
        true,
      );
    }
  };
  /** @param {OneShotFrame | Envelope} frame */
  const onFrame = (frame) => write(frame);
  const onTerminal = () => {
    if (oneShot) writer.enqueue(DONE_FRAME, true);
    writer.end();
  };

  if (oneShot) writer.enqueue(CONNECTED_FRAME, false);
  const backlog = oneShot ? run.frames.filter((f) => f.seq > cursor) : run.envelopes.filter((e) => e.sequence > cursor);
  for (const frame of backlog) write(frame);
  if (run.terminal) onTerminal();
  else if (!run.live) {
    // Lost in a crash: no process will write more. The stream ends after its backlog (no `[DONE]`,
    // no terminal event), or under the `hold` variant stays open with keepalives only.
    if ((bridge.variants.lostRunEvents ?? "end") === "end") writer.end();
  } else {
    run.events.on("frame", onFrame);
    run.events.on("terminal", onTerminal);
  }
}

/**
 * Streams a session's canonical events after a session-wide cursor, ids being the cursor; the
 * stream ends once it is caught up and the session runs no turn.
 * @param {Bridge} bridge
 * @param {import("node:http").ServerResponse} res
 * @param {{ session: Session, cursor: number }} options
 */
export function streamSession(bridge, res, { session, cursor }) {
  const writer = new SseWriter(bridge, res, "session-events", { sessionId: session.id });
  const order = bridge.variants.fieldOrder ?? "data-first";
  writer.start({});
  /** @param {Envelope} envelope */
  const onEnvelope = (envelope) =>
    writer.enqueue(
      envelopeFrame(envelope, (e) => Number(e.cursor), order),
      true,
    );
  const onIdle = () => writer.end();
  writer.onClose(() => {
    session.events.off("envelope", onEnvelope);
    session.events.off("idle", onIdle);
  });
  for (const envelope of session.log.slice(cursor)) onEnvelope(envelope);
  if (!session.busy) onIdle();
  else {
    session.events.on("envelope", onEnvelope);
    session.events.on("idle", onIdle);
  }
}

/**
 * @param {Envelope} envelope
 * @param {(e: Envelope) => number} idOf
 * @param {"data-first" | "id-first"} order
 */
function envelopeFrame(envelope, idOf, order) {
  return dataFrame({ event: envelope.event.type, data: JSON.stringify(envelope), id: idOf(envelope), order });
}
