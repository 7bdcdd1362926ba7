// A terminal across a kill (issue 41): the dev server killed (SIGKILL to `npm start`'s process group)
// while a browser's socket is open on a terminal, then started again on the same PERSIST_TO. The
// terminal object lost its log with its memory, and the emulator its PTYs: the same terminal id
// attaches a new shell, and the old cursor is refused as evicted (the object's numbering was reserved
// ahead on disk, so no seq is given twice and an old cursor never lands on other output), never
// answered with a gap or someone else's screen. Node's own WebSocket is the browser (its token once in
// the URL, once as a `bearer.` subprotocol).
// Run: node --experimental-websocket --test test/restart/terminal.test.mjs
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { devLogin, startDevServer } from "../../scripts/devserver.mjs";

const persistTo = mkdtempSync(join(tmpdir(), "gateway-terminal-"));
let server;

after(async () => {
  await server?.stopped();
  rmSync(persistTo, { recursive: true, force: true });
});

async function open(token, body) {
  const res = await fetch(`${server.base}/v1/environment/terminals`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** A socket on the terminal, every frame kept, with a wait for a predicate over them. */
function viewer(url, protocols) {
  const ws = new WebSocket(`${server.base.replace(/^http/, "ws")}${url}`, protocols);
  const v = { ws, frames: [], closed: null, waiters: new Set() };
  const check = () => {
    for (const w of [...v.waiters]) w();
  };
  ws.addEventListener("message", (e) => {
    v.frames.push(JSON.parse(e.data));
    check();
  });
  ws.addEventListener("close", (e) => {
    v.closed = { code: e.code };
    check();
  });
  v.output = () =>
    v.frames
      .filter((f) => f.type === "output")
      .map((f) => f.data)
      .join("");
  v.until = (predicate, what) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for ${what}: ${JSON.stringify(v.frames)}`)),
        30_000,
      );
      const w = () => {
        if (!predicate(v)) return;
        clearTimeout(timer);
        v.waiters.delete(w);
        resolve();
      };
      v.waiters.add(w);
      w();
    });
  v.type = (line) => {
    for (const ch of `${line}\r`) ws.send(JSON.stringify({ type: "input", data: ch }));
  };
  return v;
}

it("killed with a terminal open: the same id attaches a new shell, and the old cursor is refused as evicted", async () => {
  server = await startDevServer({ persistTo });
  const token = await devLogin(server.base, "terminal-user");
  const first = await open(token, { terminalId: "main" });
  assert.equal(first.status, 201, JSON.stringify(first.body));
  const before = viewer(first.body.url);
  await before.until((v) => v.output().includes("$ "), "the prompt");
  before.type("echo before the kill");
  await before.until((v) => v.output().includes("before the kill\r\n$ "), "the echo");
  const cursor = before.frames.filter((f) => f.type === "output").at(-1).seq;

  await server.killed();
  await before.until((v) => v.closed !== null, "the socket's end");
  server = await startDevServer({ persistTo, port: server.port });

  const again = await open(token, { terminalId: "main" });
  // The emulator's PTYs died with the process: a new shell, said so.
  assert.equal(again.status, 201, JSON.stringify(again.body));
  assert.equal(again.body.status, "attached");
  const stale = viewer(`${again.body.url}&since=${cursor}`);
  await stale.until((v) => v.closed !== null, "the refusal");
  const refusal = stale.frames.find((f) => f.type === "error");
  assert.equal(refusal?.code, "cursor_evicted", JSON.stringify(stale.frames));
  assert.equal(stale.closed.code, 4409);

  // This one offers its token as a subprotocol, none in the URL: Node's client holds the gateway to echoing it.
  const b64url = Buffer.from(again.body.token).toString("base64url");
  const fresh = viewer(again.body.url.split("?")[0], [`bearer.${b64url}`]);
  await fresh.until((v) => v.output().includes("$ "), "the new shell's prompt");
  // No seq of the new shell repeats one of the old: the numbering was reserved ahead.
  assert.ok(fresh.frames.filter((f) => f.type === "output").every((f) => f.seq > cursor));
  fresh.type("echo after the kill");
  await fresh.until((v) => v.output().includes("after the kill\r\n"), "the new shell's echo");
  fresh.ws.close();
});
