#!/usr/bin/env node
// Smoke test of the real thing: `npm start`'s server (wrangler dev + emulator), one turn end to end.
import { devLogin, readSse, startDevServer } from "./devserver.mjs";

const server = await startDevServer();
let ok = false;
try {
  const token = await devLogin(server.base, "smoke");
  const auth = { authorization: `Bearer ${token}` };
  const sent = await fetch(`${server.base}/v1/conversations/smoke/turns`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ turnId: "smoke-1", message: "Say hello" }),
  });
  if (sent.status !== 202) throw new Error(`turn not accepted: ${sent.status} ${await sent.text()}`);
  const events = [];
  const stream = await fetch(`${server.base}/v1/conversations/smoke/events`, { headers: auth });
  await readSse(stream, (f) => {
    events.push(f.event);
    return f.event === "turn.completed" || f.event === "turn.failed";
  });
  const turn = await (await fetch(`${server.base}/v1/conversations/smoke/turns/smoke-1`, { headers: auth })).json();
  if (turn.status !== "completed" || !turn.result?.text)
    throw new Error(`turn did not complete: ${JSON.stringify(turn)}`);
  console.log(`smoke: ${events.length} events, turn completed: ${JSON.stringify(turn.result.text.slice(0, 60))}…`);
  ok = true;
} catch (err) {
  console.error(`smoke failed: ${err.message}\n${server.output().slice(-3000)}`);
} finally {
  server.stop();
}
process.exit(ok ? 0 : 1);
