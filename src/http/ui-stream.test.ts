/**
 * The AI SDK route's live response (./ui-stream.ts `followTurn`) over a relay socket the test plays
 * the session object on: a log stream that ends before the turn did is not the turn's end, and the
 * response says so with an error chunk, never ending as if the turn completed.
 */
import { describe, expect, it } from "vitest";
import { TurnResponse } from "../ai-sdk/chunks";
import { EVENTS, LIVE, wireMessage } from "../lib/subscription-wire";
import type { RelaySocket } from "./sse-relay";
import { followTurn, STREAM_ENDED } from "./ui-stream";

function fakeSocket() {
  const listeners: Record<string, Array<(event: { data: unknown }) => void>> = {};
  const socket = {
    binaryType: "blob" as "blob" | "arraybuffer",
    send() {},
    close() {},
    addEventListener(type: string, listener: (event: { data: unknown }) => void) {
      (listeners[type] ??= []).push(listener);
    },
    emit(type: string, data?: unknown) {
      for (const l of listeners[type] ?? []) l({ data });
    },
  };
  return socket satisfies RelaySocket;
}

/** The response's UI chunks (the `data:` lines as JSON), and whether it ended with `[DONE]`. */
async function chunksOf(
  response: Response,
): Promise<{ chunks: Array<{ type: string; errorText?: string; delta?: string }>; done: boolean }> {
  const lines = (await response.text())
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => l.slice(6));
  const done = lines.at(-1) === "[DONE]";
  return { chunks: lines.filter((l) => l !== "[DONE]").map((l) => JSON.parse(l)), done };
}

describe("followTurn", () => {
  it("a log stream that ends before the turn does ends the response with an error chunk, not as a finished turn", async () => {
    const socket = fakeSocket();
    const response = followTurn({ socket }, new TurnResponse("t1", { pauseAt: () => false }), {
      pingIntervalMs: 60_000,
      maxPendingBytes: 1_000_000,
    });
    const at = "2026-12-02T06:00:00.000Z";
    const event = (seq: number, type: string, data: Record<string, unknown>) =>
      JSON.stringify({ seq, turnId: "t1", executionId: "e1", type, data, at });
    const frames =
      `id: 1\nevent: turn.started\ndata: ${event(1, "turn.started", {})}\n\n` +
      `id: 2\nevent: message.part.updated\ndata: ${event(2, "message.part.updated", { part: { id: "p1", type: "text" }, delta: "Hel" })}\n\n`;
    const reading = chunksOf(response);
    await new Promise((r) => setTimeout(r, 0));
    socket.emit("message", wireMessage(LIVE, "retry: 2000\n\n").buffer);
    socket.emit("message", wireMessage(EVENTS, frames).buffer);
    await new Promise((r) => setTimeout(r, 0));
    // The object goes away mid-turn (a relay drop, a deploy): the socket closes.
    socket.emit("close");
    const { chunks, done } = await reading;
    expect(chunks[0]!.type).toBe("start");
    expect(chunks.some((c) => c.delta === "Hel")).toBe(true);
    expect(chunks.some((c) => c.type === "finish")).toBe(false);
    expect(chunks.at(-1)).toEqual({ type: "error", errorText: STREAM_ENDED });
    expect(done).toBe(true);
  });
});
