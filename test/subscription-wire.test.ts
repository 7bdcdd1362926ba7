/**
 * The session object's subscription endpoint, spoken to directly as the Worker speaks to it: the
 * upgrade is required, the cursor validated, and anything but a pull closes the socket.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CLOSE_PROTOCOL, LIVE, PULL } from "../src/lib/subscription-wire";

function stubFor(name: string) {
  return env.SESSIONS.get(env.SESSIONS.idFromName(name));
}

/** The next message, as its kind byte and its SSE text (the object sends binary messages only). */
function nextMessage(ws: WebSocket): Promise<{ kind: number; text: string }> {
  return new Promise((resolve, reject) =>
    ws.addEventListener(
      "message",
      (e) => {
        if (typeof e.data === "string") return reject(new Error("a text message"));
        const bytes = new Uint8Array(e.data);
        resolve({ kind: bytes[0]!, text: new TextDecoder().decode(bytes.subarray(1)) });
      },
      { once: true },
    ),
  );
}

describe("the subscription endpoint of the session object", () => {
  it("refuses anything but a WebSocket upgrade with a valid cursor", async () => {
    const stub = stubFor(`wire-${crypto.randomUUID()}`);
    expect((await stub.fetch("https://session/subscribe?after=0")).status).toBe(400);
    for (const after of ["", "-1", "x", "1234567890123456"]) {
      const res = await stub.fetch(`https://session/subscribe?after=${after}`, { headers: { upgrade: "websocket" } });
      expect(res.status, `after=${after}`).toBe(400);
    }
    expect((await stub.fetch("https://session/other?after=0", { headers: { upgrade: "websocket" } })).status).toBe(400);
  });

  it("answers a pull with the stream's head and goes live; a message that is not a pull closes the socket", async () => {
    const stub = stubFor(`wire-${crypto.randomUUID()}`);
    const res = await stub.fetch("https://session/subscribe?after=0", { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket!;
    ws.binaryType = "arraybuffer";
    ws.accept();
    const first = nextMessage(ws);
    ws.send(PULL);
    // An empty log: the head (the retry delay) and the switch to live, in one message.
    expect(await first).toEqual({ kind: LIVE, text: "retry: 2000\n\n" });
    const closed = new Promise<number>((resolve) => ws.addEventListener("close", (e) => resolve(e.code)));
    ws.send(JSON.stringify({ op: "pull", extra: true }));
    expect(await closed).toBe(CLOSE_PROTOCOL);
  });
});
