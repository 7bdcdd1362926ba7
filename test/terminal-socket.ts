/**
 * A terminal's socket as a client sees it (docs/api.md#terminals): workerd's own WebSocket client,
 * opened through the Worker like any browser's, with every frame and the close kept for assertions.
 */
import { SELF } from "cloudflare:test";
import { BASE } from "./helpers";

export interface Viewer {
  ws: WebSocket;
  /** The 101's headers (a subprotocol echoed, say). */
  headers: Headers;
  frames: any[];
  closed: { code: number; reason: string } | null;
  /** Resolves once `predicate` holds (checked on every frame and the close); rejects after `timeoutMs`. */
  until(predicate: (v: Viewer) => boolean, what: string, timeoutMs?: number): Promise<void>;
  send(frame: unknown): void;
  /** Every output frame's data, in order. */
  output(): string;
  seqs(): number[];
}

export async function openSocket(path: string, headers: Record<string, string> = {}): Promise<Viewer> {
  const res = await SELF.fetch(`${BASE}${path}`, { headers: { upgrade: "websocket", ...headers } });
  if (res.status !== 101) throw new Error(`no upgrade: ${res.status} ${await res.text()}`);
  const ws = res.webSocket!;
  ws.accept();
  const waiters = new Set<() => void>();
  const viewer: Viewer = {
    ws,
    headers: res.headers,
    frames: [],
    closed: null,
    until(predicate, what, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (predicate(viewer)) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `timed out waiting for ${what}; frames: ${JSON.stringify(viewer.frames).slice(-800)}; closed: ${JSON.stringify(viewer.closed)}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    send(frame) {
      ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
    },
    output() {
      return viewer.frames
        .filter((f) => f.type === "output")
        .map((f) => f.data)
        .join("");
    },
    seqs() {
      return viewer.frames.filter((f) => f.type === "output").map((f) => f.seq);
    },
  };
  ws.addEventListener("message", (event) => {
    viewer.frames.push(JSON.parse(event.data as string));
    for (const waiter of [...waiters]) waiter();
  });
  ws.addEventListener("close", (event) => {
    viewer.closed = { code: event.code, reason: event.reason };
    for (const waiter of [...waiters]) waiter();
  });
  return viewer;
}

/** Types a command line into the terminal, as a keyboard would (one frame per key). */
export function type(viewer: Viewer, line: string): void {
  for (const ch of `${line}\r`) viewer.send({ type: "input", data: ch });
}
