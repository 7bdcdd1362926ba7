/**
 * A GET sent on a connection the server closes under it is sent once more (bench/harness.mjs
 * fetchGet): under load, wrangler dev's proxy closed a kept-alive connection as memory's first
 * request after its heap reads went out on it, and the section failed with "fetch failed".
 * Once more only.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { fetchGet } from "../../bench/harness.mjs";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that destroys the connection of its first `drops` requests before answering, then answers "ok". */
async function dropping(drops: number): Promise<{ base: string; requests: () => number }> {
  let requests = 0;
  server = createServer((req, res) => {
    requests++;
    if (requests <= drops) return void req.socket.destroy();
    res.end("ok");
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

describe("fetchGet", () => {
  it("sends a GET once more when its connection was closed under it", async () => {
    const { base, requests } = await dropping(1);
    const res = await fetchGet(`${base}/healthz`);
    expect(await res.text()).toBe("ok");
    expect(requests()).toBe(2);
  });
  it("sends it only once more: a second close is the failure", async () => {
    const { base, requests } = await dropping(2);
    await expect(fetchGet(`${base}/healthz`)).rejects.toThrow("fetch failed");
    expect(requests()).toBe(2);
  });
});
