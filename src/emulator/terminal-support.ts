/**
 * A terminal socket for the emulator's own tests: opens it over the emulator object's `fetch`,
 * collects its frames (text frames parsed, output decoded) and waits for what a test expects,
 * never for a time.
 */
import { expect } from "vitest";
import type { Emu } from "./test-support";

interface Frame {
  type: string;
  [field: string]: unknown;
}

export interface Term {
  ws: WebSocket;
  /** The text frames, parsed, in order (output frames of the JSON variant among them). */
  frames: Frame[];
  /** Every output so far as text: binary messages decoded, JSON `output` frames' data. */
  output(): string;
  /** How many output messages came. */
  outputMessages: number;
  /** The close, once it came. */
  closed?: { code: number; reason: string };
  send(frame: unknown): void;
  type(text: string): void;
  /** Waits until `ok` holds of the socket (checked on each message and the close). */
  until(ok: (t: Term) => boolean, what?: string): Promise<void>;
  /** Waits until the output contains `text` (after `from` characters). */
  untilOutput(text: string, from?: number): Promise<void>;
  untilClosed(): Promise<{ code: number; reason: string }>;
}

export function socketPath(sandboxId: string, connectionId: string, query = ""): string {
  return `/v1/sidecar-proxy/${sandboxId}/terminals/${connectionId}/ws${query}`;
}

/** Opens a socket; fails the test unless the answer is a 101 with a socket. */
export async function openTerm(emu: Emu, sandboxId: string, connectionId: string, query = ""): Promise<Term> {
  const res = await emu.fetch(socketPath(sandboxId, connectionId, query), {
    headers: { upgrade: "websocket", authorization: "Bearer emulator-test-key" },
  });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  const decoder = new TextDecoder();
  let text = "";
  const waiters: Array<() => void> = [];
  const notify = () => {
    for (const w of waiters.splice(0)) w();
  };
  const term: Term = {
    ws,
    frames: [],
    output: () => text,
    outputMessages: 0,
    send: (frame) => ws.send(JSON.stringify(frame)),
    type: (data) => ws.send(JSON.stringify({ type: "input", data })),
    until(ok, what = "the condition") {
      return new Promise((resolve, reject) => {
        // A bound, so a test that waits for what never comes fails naming it (not a timing assertion).
        const timer = setTimeout(() => reject(new Error(`no ${what}; output so far:\n${JSON.stringify(text)}`)), 5_000);
        const check = () => {
          if (ok(term)) {
            clearTimeout(timer);
            return resolve();
          }
          if (term.closed) {
            clearTimeout(timer);
            return reject(new Error(`closed ${JSON.stringify(term.closed)} before ${what}; output:\n${text}`));
          }
          waiters.push(check);
        };
        check();
      });
    },
    untilOutput: (want, from = 0) => term.until((t) => t.output().indexOf(want, from) !== -1, JSON.stringify(want)),
    async untilClosed() {
      await term
        .until((t) => t.closed !== undefined, "the close")
        .catch((error: Error) => {
          // `until` rejects on a close it was not waiting for; here the close is what it waits for.
          if (!term.closed) throw error;
        });
      return term.closed!;
    },
  };
  // Messages are handled in order; a binary one may come as a Blob, read asynchronously.
  let queue = Promise.resolve();
  const handle = async (data: unknown) => {
    if (typeof data === "string") {
      const frame = JSON.parse(data) as Frame;
      term.frames.push(frame);
      if (frame.type === "output") {
        text += frame.data as string;
        term.outputMessages++;
      }
    } else {
      const buffer = data instanceof Blob ? await data.arrayBuffer() : (data as ArrayBuffer);
      text += decoder.decode(new Uint8Array(buffer), { stream: true });
      term.outputMessages++;
    }
    notify();
  };
  ws.addEventListener("message", (event) => {
    queue = queue.then(() => handle(event.data));
  });
  ws.addEventListener("close", (event) => {
    queue = queue.then(() => {
      term.closed = { code: event.code, reason: event.reason };
      notify();
    });
  });
  return term;
}
