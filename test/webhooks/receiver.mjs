// @ts-check
/**
 * A webhook receiver for the tests: a real HTTP server on loopback that verifies every delivery
 * with the `standardwebhooks` package (not with the gateway's code: it imports nothing from src).
 * Each inbox (`/hooks/<name>`) behaves as its control record says:
 *   mode "ok"        answers 204 once the signature verified (401 when it did not);
 *   mode "fail"      answers `status` (default 500) with a short body;
 *   mode "slow"      holds the request `delayMs` before answering 204;
 *   mode "redirect"  answers 307 to `location`;
 *   mode "open"      answers 200 once the signature verified (401 when it did not), writes a few
 *                    bytes of its body and never ends it (the connection stays open until the
 *                    sender lets go or the receiver closes).
 * Control (JSON): PUT /_control/<name> `{ secrets?, mode?, status?, delayMs?, location? }` merges
 * into the inbox's record; GET /_control/<name> answers `{ received, holding }`: every request as
 * received, `{ webhookId, timestamp, signature, body, verified, payload }` (payload: what the
 * library returned, null when verification failed), in arrival order; and how many requests it
 * holds unanswered (mode "slow"), whether or not their sender still waits; and how many answers it holds open (mode
 * "open"), until their sender lets go.
 */
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

/**
 * @typedef {{ webhookId: string | undefined, timestamp: string | undefined, signature: string | undefined, body: string, verified: boolean, payload: unknown, error: string | null }} Received
 * @typedef {{ secrets: string[], mode: "ok" | "fail" | "slow" | "redirect" | "open", status: number, delayMs: number, location: string, received: Received[], holding: number, open: number }} Inbox
 */

/** @param {{ port?: number }} [options] */
export async function startReceiver({ port = 0 } = {}) {
  /** @type {Map<string, Inbox>} */
  const inboxes = new Map();
  /** @param {string} name */
  const inbox = (name) => {
    let box = inboxes.get(name);
    if (!box) {
      box = { secrets: [], mode: "ok", status: 500, delayMs: 0, location: "", received: [], holding: 0, open: 0 };
      inboxes.set(name, box);
    }
    return box;
  };

  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://receiver");
    const control = /^\/_control\/([\w-]+)$/.exec(url.pathname);
    if (control) {
      const box = inbox(/** @type {string} */ (control[1]));
      if (req.method === "PUT") Object.assign(box, JSON.parse(body || "{}"));
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ received: box.received, holding: box.holding, open: box.open }));
      return;
    }
    const hook = /^\/hooks\/([\w-]+)$/.exec(url.pathname);
    if (!hook || req.method !== "POST") {
      res.writeHead(404).end();
      return;
    }
    const box = inbox(/** @type {string} */ (hook[1]));
    const headers = /** @type {Record<string, string>} */ ({
      "webhook-id": String(req.headers["webhook-id"] ?? ""),
      "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
      "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
    });
    /** @type {Received} */
    const record = {
      webhookId: headers["webhook-id"],
      timestamp: headers["webhook-timestamp"],
      signature: headers["webhook-signature"],
      body,
      verified: false,
      payload: null,
      error: null,
    };
    // Verified with each secret the test registered: any one that verifies is enough.
    for (const secret of box.secrets) {
      try {
        record.payload = new Webhook(secret).verify(body, headers);
        record.verified = true;
        break;
      } catch (err) {
        record.error = err instanceof Error ? err.message : String(err);
      }
    }
    box.received.push(record);
    // Held until answered here, whether or not the sender is still waiting.
    box.holding++;
    if (box.mode === "slow") await new Promise((r) => setTimeout(r, box.delayMs));
    box.holding--;
    if (box.mode === "fail") {
      res.writeHead(box.status, { "content-type": "text/plain" }).end(`inbox ${hook[1]} fails on purpose`);
      return;
    }
    if (box.mode === "redirect") {
      res.writeHead(307, { location: box.location }).end();
      return;
    }
    if (box.mode === "open" && record.verified) {
      // The status and a first chunk go out at once; the body is never ended.
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("accepted; this answer goes on");
      box.open++;
      res.once("close", () => box.open--);
      return;
    }
    res.writeHead(record.verified ? 204 : 401).end();
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  const bound = typeof address === "object" && address ? address.port : port;
  return {
    port: bound,
    url: `http://127.0.0.1:${bound}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve(undefined));
      }),
  };
}
