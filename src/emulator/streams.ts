/**
 * Live SSE streams of executions: each stream replays the stored frames after its cursor, then
 * follows new frames as the run appends them. Frames queued in one synchronous burst leave as one
 * chunk. The stream faults act here: sever a stream after N frames, send every frame twice, replay
 * inclusively like an old deployment, go silent for a while after the first frame (a stall), or
 * send nothing at all (a dispatch whose admission is withheld). The wire variants that shape a
 * stream (field order, a first `connection.established` frame) are fixed when the stream opens.
 */
import type { EmulatorStore } from "./store";
import type { ExecutionRow } from "./store-schema";
import { effectiveVariants } from "./variants";
import { type FieldOrder, SSE_HEADERS, sseFrame, type WireFrame } from "./wire";

interface LiveStream {
  executionId: string;
  controller: ReadableStreamDefaultController<Uint8Array>;
  order: FieldOrder;
  /** Frames queued so far (the drop fault counts these). */
  sent: number;
  dropAfter?: number;
  repeat: boolean;
  closed: boolean;
  /** Frames queued in the current burst, sent as one chunk. */
  pending: string;
  flushQueued: boolean;
  /** The stall fault: after the first frame, nothing leaves for this many ms. */
  stallMs?: number;
  /** While stalled: the timer that ends the stall, and whether the stream closes then. */
  stall?: { timer: ReturnType<typeof setTimeout>; closeAfter: boolean };
}

export interface OpenStreamOptions {
  /** Replay the frames after this id (0: from the first). */
  cursor: number;
  /** An id-less frame sent first (the admission of a dispatch that attached to a run). */
  prefix?: { type: string; data: Record<string, unknown> };
}

const encoder = new TextEncoder();

export class StreamHub {
  private readonly streams = new Map<string, Set<LiveStream>>();
  /** Streams that send nothing (withheld admissions), closed only by their reader or a reset. */
  private readonly silent = new Set<ReadableStreamDefaultController<Uint8Array>>();
  /** In-process followers of an execution's frames (the TUI): each new frame, then null at its end. */
  private readonly watchers = new Map<string, Set<(frame: WireFrame | null) => void>>();

  constructor(private readonly store: EmulatorStore) {}

  /** Streams following a running execution now, over every execution. */
  openCount(): number {
    let open = 0;
    for (const set of this.streams.values()) open += set.size;
    return open;
  }

  /** Opens an SSE stream of one execution: frames after the cursor (inclusive on an old deployment), then live ones. */
  open(exe: ExecutionRow, options: OpenStreamOptions): Response {
    const faults = this.store.faults();
    const variants = effectiveVariants(this.store.variants());
    let dropAfter: number | undefined;
    if (faults.dropStreamAfterFrames !== undefined && (faults.dropStreams ?? 1) > 0) {
      dropAfter = faults.dropStreamAfterFrames;
      const remaining = (faults.dropStreams ?? 1) - 1;
      const { dropStreams: _n, dropStreamAfterFrames: _after, ...rest } = faults;
      this.store.setFaults(
        remaining > 0 ? { ...rest, dropStreams: remaining, dropStreamAfterFrames: dropAfter } : rest,
      );
    }
    let stallMs: number | undefined;
    if (faults.stallStreamMs !== undefined && (faults.stallStreams ?? 1) > 0) {
      stallMs = faults.stallStreamMs;
      const remaining = (faults.stallStreams ?? 1) - 1;
      const { stallStreams: _n, stallStreamMs: _ms, ...rest } = this.store.faults();
      this.store.setFaults(remaining > 0 ? { ...rest, stallStreams: remaining, stallStreamMs: stallMs } : rest);
    }
    const from = faults.inclusiveReplay && options.cursor > 0 ? options.cursor : options.cursor + 1;
    this.store.count("streams.opened");
    let live: LiveStream | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        const stream: LiveStream = {
          executionId: exe.id,
          controller,
          order: variants.fieldOrder,
          sent: 0,
          dropAfter,
          repeat: faults.repeatFrames ?? false,
          closed: false,
          pending: "",
          flushQueued: false,
          stallMs,
        };
        live = stream;
        // Id-less frames that carry nothing of the run: neither counted, repeated nor dropped.
        let head = "";
        if (variants.connectionEstablished)
          head += sseFrame({ event: "connection.established", data: "{}" }, stream.order);
        if (options.prefix)
          head += sseFrame({ event: options.prefix.type, data: JSON.stringify(options.prefix.data) }, stream.order);
        if (head) {
          controller.enqueue(encoder.encode(head));
          this.stallAfterFirstFrame(stream);
        }
        // Backlog and registration in one synchronous step: no frame falls between them.
        for (const f of this.store.framesFrom(exe.id, from))
          this.send(stream, { event: f.type, id: f.id, data: f.data });
        if (this.ending(stream)) return;
        const current = this.store.execution(exe.id);
        if (current?.status !== "running") {
          this.close(stream);
          return;
        }
        let set = this.streams.get(exe.id);
        if (!set) this.streams.set(exe.id, (set = new Set()));
        set.add(stream);
      },
      cancel: () => {
        if (live) {
          live.closed = true;
          if (live.stall) clearTimeout(live.stall.timer);
          this.streams.get(exe.id)?.delete(live);
        }
      },
    });
    return new Response(body, { headers: SSE_HEADERS });
  }

  /** An SSE response of one id-less frame (a dispatch's receipt that started nothing), then closed. */
  once(frame: { type: string; data: Record<string, unknown> }): Response {
    const variants = effectiveVariants(this.store.variants());
    let text = "";
    if (variants.connectionEstablished)
      text += sseFrame({ event: "connection.established", data: "{}" }, variants.fieldOrder);
    text += sseFrame({ event: frame.type, data: JSON.stringify(frame.data) }, variants.fieldOrder);
    this.store.count("streams.opened");
    return new Response(text, { headers: SSE_HEADERS });
  }

  /** An SSE response that sends nothing and stays open until its reader goes away (or a reset). */
  openSilent(): Response {
    let held: ReadableStreamDefaultController<Uint8Array> | undefined;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        held = controller;
        this.silent.add(controller);
      },
      cancel: () => {
        if (held) this.silent.delete(held);
      },
    });
    this.store.count("streams.silent");
    return new Response(body, { headers: SSE_HEADERS });
  }

  /** Sends a frame just appended to an execution to every stream following it. */
  publish(executionId: string, frame: WireFrame): void {
    for (const stream of this.streams.get(executionId) ?? []) this.send(stream, frame);
    for (const watch of this.watchers.get(executionId) ?? []) watch(frame);
  }

  /** Follows an execution's new frames in process (null: it ended); answers the unfollow. */
  watch(executionId: string, watcher: (frame: WireFrame | null) => void): () => void {
    const set = this.watchers.get(executionId) ?? new Set();
    set.add(watcher);
    this.watchers.set(executionId, set);
    return () => {
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(executionId) === set) this.watchers.delete(executionId);
    };
  }

  /** Ends every stream of an execution (its run finished). */
  closeExecution(executionId: string): void {
    for (const stream of this.streams.get(executionId) ?? []) this.close(stream);
    this.streams.delete(executionId);
    const watchers = this.watchers.get(executionId);
    this.watchers.delete(executionId);
    for (const watch of watchers ?? []) watch(null);
  }

  /** Ends every stream at once (a reset), stalled and silent ones included. */
  closeAll(): void {
    for (const set of this.streams.values()) {
      for (const stream of set) {
        if (stream.stall) clearTimeout(stream.stall.timer);
        stream.stall = undefined;
        this.close(stream);
      }
    }
    this.streams.clear();
    for (const controller of this.silent) {
      try {
        controller.close();
      } catch {
        // already closed by the reader
      }
    }
    this.silent.clear();
  }

  /** Queues one frame on a stream; frames queued in one synchronous burst leave as one chunk. */
  private send(stream: LiveStream, frame: WireFrame): void {
    if (this.ending(stream)) return;
    const text = sseFrame(frame, stream.order);
    stream.pending += stream.repeat ? text + text : text;
    stream.sent++;
    if (stream.dropAfter !== undefined && stream.sent >= stream.dropAfter) {
      this.close(stream);
      return;
    }
    if (stream.stallMs !== undefined) {
      // The first frame leaves on its own, then the stall begins.
      this.flush(stream);
      this.stallAfterFirstFrame(stream);
      return;
    }
    if (!stream.flushQueued) {
      stream.flushQueued = true;
      queueMicrotask(() => this.flush(stream));
    }
  }

  /** Closed, or closing once its stall ends: it takes no more frames. */
  private ending(stream: LiveStream): boolean {
    return stream.closed || stream.stall?.closeAfter === true;
  }

  /** Starts the stall fault's silence, if this stream has one: nothing leaves until it ends. */
  private stallAfterFirstFrame(stream: LiveStream): void {
    const ms = stream.stallMs;
    if (ms === undefined) return;
    stream.stallMs = undefined;
    this.store.count("streams.stalled");
    stream.stall = {
      closeAfter: false,
      timer: setTimeout(() => {
        const closeAfter = stream.stall?.closeAfter ?? false;
        stream.stall = undefined;
        if (closeAfter) this.close(stream);
        else this.flush(stream);
      }, ms),
    };
  }

  private flush(stream: LiveStream): void {
    stream.flushQueued = false;
    if (stream.stall) return;
    if (stream.pending === "") return;
    const text = stream.pending;
    stream.pending = "";
    try {
      stream.controller.enqueue(encoder.encode(text));
    } catch {
      stream.closed = true;
    }
  }

  private close(stream: LiveStream): void {
    if (stream.closed) return;
    if (stream.stall) {
      // A stalled stream closes once its stall ends, after the frames it held.
      stream.stall.closeAfter = true;
      this.streams.get(stream.executionId)?.delete(stream);
      return;
    }
    this.flush(stream);
    stream.closed = true;
    this.streams.get(stream.executionId)?.delete(stream);
    try {
      stream.controller.close();
    } catch {
      // already closed by the reader
    }
  }
}
