// The emulator's control routes under `npm start` (wrangler dev), where an uncaught error restarts the
// Worker under every request beside it: a body a control route refuses (415) or never reads (an
// unknown path) must not be read after the answer went out, and a request in flight beside them
// (an event stream) keeps being served. Run: node --test test/restart/control.test.mjs
import assert from "node:assert/strict";
import { after, it } from "node:test";
import { devLogin, readSse, startDevServer } from "../../scripts/devserver.mjs";

let server;

after(async () => {
  await server?.stopped();
});

it("refused control calls read nothing after their answer, and the stream open beside them is served on", async () => {
  server = await startDevServer();
  const token = await devLogin(server.base, "control-user");
  const auth = { authorization: `Bearer ${token}` };
  // In flight for the whole test: the conversation's event stream, opened before it exists.
  const events = await fetch(`${server.base}/v1/conversations/c1/events`, { headers: auth });
  assert.equal(events.status, 200);

  const refused = await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      const [path, type] =
        i % 2 === 0 ? ["/_emulator/reset", "text/plain"] : ["/_emulator/nothing-here", "application/json"];
      const res = await fetch(`${server.base}${path}`, {
        method: "POST",
        headers: { "content-type": type },
        body: "{}".padEnd(64 * 1024, " "),
      });
      return res.status;
    }),
  );
  assert.deepEqual(refused, [415, 404, 415, 404, 415, 404, 415, 404, 415, 404]);

  // The stream opened before them hears a turn sent after them, to its end.
  const sent = await fetch(`${server.base}/v1/conversations/c1/turns`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ turnId: "t1", message: "after the refusals" }),
  });
  assert.equal(sent.status, 202, await sent.text());
  const heard = [];
  const ended = await readSse(events, (frame) => {
    heard.push(frame.event);
    return frame.event === "turn.completed" || frame.event === "turn.failed";
  });
  assert.equal(ended, true, `the stream ended early after ${heard.join(",")}`);
  assert.equal(heard.at(-1), "turn.completed");
  assert.doesNotMatch(server.output(), /Uncaught|restarted/);
});
