/**
 * One attach to the sandbox's PTY, proven (seed 000, "Interactive terminal"): the socket opened, its
 * `ready` awaited (a 101 alone proves nothing), then the terminal's metadata read and checked
 * (./attach-check.ts). Anything less fails closed and lets the socket go. Frames that come after
 * `ready` (the retained screen comes at once) wait until the caller takes the socket.
 */
import { Refusal } from "../errors";
import type { SandboxTerminals, TerminalConnection, UpstreamTerminalFrame } from "../providers/provider";
import { providerRefusal } from "../providers/refusal";
import { checkMetadata, checkReady, type ProvenTerminal } from "./attach-check";

/** Which terminal this object relays: the user's id for it, and where it lives upstream. */
export interface TerminalSpec {
  terminalId: string;
  kind: "shell" | "agent";
  conversationId?: string;
  environmentId: string;
  connectionId: string;
  /** The control generation an agent's UI is driven under (interactive mode). */
  generation?: number;
}

export interface Geometry {
  cols: number;
  rows: number;
}

export interface ProvenAttach {
  connection: TerminalConnection;
  terminal: ProvenTerminal;
  /** Hands the socket's frames to `sink`: those that waited first, in order, then each as it comes. */
  take(sink: (frame: UpstreamTerminalFrame) => void): void;
}

/** A provider's failure as a refusal (anything else is thrown as it is). */
function refusalOf(err: unknown): Refusal {
  const refusal = providerRefusal(err);
  if (refusal instanceof Refusal) return refusal;
  throw refusal;
}

function failClosed(connection: TerminalConnection, missing: string[], retryable: boolean): Refusal {
  connection.close();
  return new Refusal(
    "terminal_metadata_incomplete",
    `the sandbox's terminal did not prove itself live: ${missing.join(", ")} missing or malformed`,
    { missing, retryable },
  );
}

/**
 * Attaches `spec`'s PTY and proves it live; `superseded` says a close or another attach overtook
 * this one while it awaited (its socket then goes, and it proved nothing).
 */
export async function proveAttach(
  terminals: SandboxTerminals,
  spec: TerminalSpec,
  geometry: Geometry,
  readyTimeoutMs: number,
  superseded: () => boolean,
): Promise<ProvenAttach | Refusal> {
  let connection: TerminalConnection;
  try {
    connection = await terminals.connect(spec.environmentId, spec.connectionId, {
      ...geometry,
      ...(spec.generation !== undefined ? { generation: spec.generation } : {}),
    });
  } catch (err) {
    return refusalOf(err);
  }
  const overtaken = () => {
    connection.close();
    return new Refusal("terminal_not_found", "the terminal was closed, or attached elsewhere, while it was opened");
  };
  if (superseded()) return overtaken();
  const early: UpstreamTerminalFrame[] = [];
  let sink: ((frame: UpstreamTerminalFrame) => void) | null = null;
  const ready = await new Promise<Extract<UpstreamTerminalFrame, { type: "ready" }> | "closed" | "timeout">(
    (resolve) => {
      const timer = setTimeout(() => resolve("timeout"), readyTimeoutMs);
      connection.onClose(() => {
        clearTimeout(timer);
        resolve("closed");
      });
      connection.onFrame((frame) => {
        if (sink) return sink(frame);
        if (frame.type === "ready") {
          clearTimeout(timer);
          sink = (f) => early.push(f);
          resolve(frame);
        }
      });
    },
  );
  if (ready === "timeout" || ready === "closed") {
    connection.close();
    return ready === "timeout"
      ? new Refusal("upstream_timeout", `the sandbox's terminal sent no ready within ${readyTimeoutMs} ms`, {
          retryable: true,
        })
      : new Refusal("upstream_error", "the sandbox's terminal closed before it was ready", { retryable: true });
  }
  if (superseded()) return overtaken();
  const checkedReady = checkReady(ready);
  if (!checkedReady.ok) return failClosed(connection, checkedReady.missing, false);
  let metadata: Record<string, unknown> | null;
  try {
    metadata = await terminals.metadata(spec.environmentId, checkedReady.sessionId);
  } catch (err) {
    connection.close();
    return refusalOf(err);
  }
  if (superseded()) return overtaken();
  if (!metadata) return failClosed(connection, ["metadata"], true);
  const checked = checkMetadata(checkedReady, metadata);
  if (!checked.ok) return failClosed(connection, checked.missing, false);
  return {
    connection,
    terminal: checked.terminal,
    take(next) {
      sink = next;
      for (const frame of early.splice(0)) next(frame);
    },
  };
}
