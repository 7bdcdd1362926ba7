/**
 * A pipe of bytes whose readable end is a response body: the runtime's own pipe
 * (IdentityTransformStream), read by the runtime itself, natively, so a chunk costs one write here
 * and nothing in JavaScript after it (a JavaScript ReadableStream as the body costs a read, a
 * promise and a copy per chunk, per reader). Both ends of a browser's live stream use one: the
 * Worker's relay (src/http/sse-relay.ts) for the browser's response, and the session object for a
 * direct stream (src/session/direct-streams.ts), which the relay pipes into its own natively.
 *
 * `unread` counts the bytes written and not yet taken by the reader: each write's promise settles
 * when the reader took its chunk (the pipe holds nothing beyond what it was given).
 */
export interface BytePipe {
  readable: ReadableStream<Uint8Array>;
  write(bytes: Uint8Array): void;
  /** Ends the stream after what was written (while piping from a source: once that is through). */
  close(): void;
  /** Errors the stream: its reader (a relay piping it) sees it failed rather than ended (while piping: once that is through). */
  abort(reason: string): void;
  /** Bytes written and not yet read. */
  unread(): number;
  /** Resolves once the unread bytes are below `bytes` (at once if they are). */
  below(bytes: number): Promise<void>;
  /** Resolves when the reader goes away (the browser left): the pipe's writes fail from then on. */
  gone: Promise<void>;
  /**
   * Pipes `source` into this pipe, natively (the runtime pumps one stream into the other: no
   * JavaScript per chunk), once what was written before is read; writes must wait until it
   * settles. True when the source ended normally and the pipe is still open; false when either
   * side failed or the pipe was closed meanwhile.
   */
  pipeFrom(source: ReadableStream<Uint8Array>): Promise<boolean>;
}

export function bytePipe(): BytePipe {
  const pipe = new IdentityTransformStream();
  let writer = pipe.writable.getWriter();
  let unread = 0;
  let waiting: { bytes: number; resolve: () => void } | undefined;
  let goneResolve!: () => void;
  const gone = new Promise<void>((resolve) => (goneResolve = resolve));
  let failed = false;
  /**
   * While piping from a source: whether close() was asked meanwhile. (The runtime's pipe cannot be
   * broken off from this side: an aborted pipeTo still holds the pipe until its source ends, so a
   * close or an abort waits for that; the direct stream a relay pipes ends when its object goes quiet.)
   */
  let piping: { closeAfter: boolean } | undefined;
  const fail = () => {
    if (failed) return;
    failed = true;
    goneResolve();
    waiting?.resolve();
    waiting = undefined;
  };
  const settle = (n: number) => {
    unread -= n;
    if (waiting && unread < waiting.bytes) {
      waiting.resolve();
      waiting = undefined;
    }
  };
  // A released writer's `closed` rejects too: only the current writer's says the reader left.
  const watch = (w: WritableStreamDefaultWriter) =>
    w.closed.then(undefined, () => {
      if (w === writer && !piping) fail();
    });
  watch(writer);
  const ended = () => {
    failed = true;
    waiting?.resolve();
    waiting = undefined;
  };
  const below = (bytes: number) => {
    if (unread < bytes || failed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      waiting?.resolve();
      waiting = { bytes, resolve };
    });
  };
  return {
    readable: pipe.readable as ReadableStream<Uint8Array>,
    write(bytes) {
      if (failed || piping) return;
      const n = bytes.byteLength;
      unread += n;
      writer.write(bytes).then(() => settle(n), fail);
    },
    close() {
      if (failed) return;
      if (piping) {
        piping.closeAfter = true;
        return;
      }
      ended();
      writer.close().catch(() => {});
    },
    abort(reason) {
      if (failed) return;
      ended();
      if (!piping) writer.abort(new Error(reason)).catch(() => {});
    },
    unread: () => unread,
    below,
    gone,
    async pipeFrom(source) {
      await below(1);
      if (failed || piping) {
        source.cancel().catch(() => {});
        return false;
      }
      const state = { closeAfter: false };
      piping = state;
      writer.releaseLock();
      let ok = true;
      try {
        await source.pipeTo(pipe.writable, { preventClose: true, preventAbort: true });
      } catch {
        ok = false;
      }
      try {
        writer = pipe.writable.getWriter();
      } catch {
        piping = undefined;
        fail();
        return false;
      }
      piping = undefined;
      watch(writer);
      if (state.closeAfter) {
        ended();
        writer.close().catch(() => {});
        return false;
      }
      if (failed) {
        writer.abort(new Error("aborted")).catch(() => {});
        return false;
      }
      return ok;
    },
  };
}
