/**
 * The page listens for the event names in public/lib/events.js (EventSource drops a named event
 * nobody listens for). These tests fail when the server emits a name that list lacks, or the list
 * names a gateway event the server never emits.
 */
import { describe, expect, it } from "vitest";
import { GATEWAY_EVENT, STREAM_EVENTS } from "../public/lib/events.js";
import { FrameDataSchemas } from "../src/providers/tangle/wire";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid } from "./helpers";

/** Frames the provider reads and never shows (src/providers/tangle/frames.ts: private and skipped). */
const NOT_SHOWN = new Set(["connection.established", "execution.started", "native.session.observed"]);

async function typesOf(
  message: string,
  answer?: (interaction: { id: string; kind: string }) => Record<string, unknown> | "cancel",
  who?: { token: string; cid: string },
) {
  const token = who?.token ?? (await tokenFor(uid("user")));
  const cid = who?.cid ?? uid("conv");
  const accepted = await json(await sendTurn(token, cid, uid("turn"), message));
  const types = new Set<string>();
  let after = String(accepted.after);
  while (true) {
    const stream = await collect(
      await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": after } }),
      (e) => isTurnEnd(e) || e.type === "interaction.requested",
    );
    for (const frame of stream.frames) if (frame.event) types.add(frame.event);
    after = stream.lastId ?? after;
    const last = stream.events.at(-1)!;
    if (isTurnEnd(last)) break;
    const interaction = last.data.interaction as { id: string; kind: string };
    const reply = answer?.(interaction) ?? "cancel";
    if (reply === "cancel") await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } });
    else
      await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(interaction.id)}`, {
        token,
        body: { operationId: uid("op"), ...reply },
      });
  }
  // A cursor the log never had: the stream says so with stream.reset.
  const ahead = await api(`/v1/conversations/${cid}/events?after=999999`, { token });
  for (const frame of (await collect(ahead, () => true, { timeoutMs: 3000 }).catch(() => ({ frames: [] }))).frames)
    if (frame.event) types.add(frame.event);
  return types;
}

/** A conversation with turns queued, one edited, one removed: the queue's events. */
async function queueTypes() {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  await sendTurn(token, cid, uid("turn"), "first [slow]");
  const [kept, removed] = [uid("q"), uid("q")];
  for (const q of [kept, removed]) await sendTurn(token, cid, q, "queued", { whenBusy: "queue" });
  await api(`/v1/conversations/${cid}/turns/${kept}`, { token, method: "PATCH", body: { message: "edited" } });
  await api(`/v1/conversations/${cid}/turns/${removed}`, { token, method: "DELETE" });
  const stream = await collect(
    await api(`/v1/conversations/${cid}/events`, { token }),
    (e) => isTurnEnd(e) && e.turnId === kept,
    { timeoutMs: 15_000 },
  );
  return new Set(stream.frames.flatMap((frame) => (frame.event ? [frame.event] : [])));
}

/** A turn that writes a file, then its undo: the workspace's events (its changes come a moment after the turn ended). */
async function workspaceTypes() {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  await sendTurn(token, cid, turnId, "note it [write:notes.txt:hello]");
  const changed = await collect(
    await api(`/v1/conversations/${cid}/events`, { token }),
    (e) => e.type === "workspace.changes",
    { timeoutMs: 15_000 },
  );
  const undo = await api(`/v1/conversations/${cid}/turns/${turnId}/undo`, { token, body: { operationId: uid("op") } });
  expect(undo.status, await undo.clone().text()).toBe(200);
  const restored = await collect(
    await api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": String(changed.lastId) } }),
    (e) => e.type === "workspace.restored",
    { timeoutMs: 15_000 },
  );
  return new Set([...changed.frames, ...restored.frames].flatMap((frame) => (frame.event ? [frame.event] : [])));
}

/** Interactive mode (docs/api.md#terminals): the agent's terminal UI takes the session, then gives it back. */
async function interactiveTypes() {
  const who = { token: await tokenFor(uid("user")), cid: uid("conv") };
  await typesOf("hello", undefined, who);
  const path = `/v1/conversations/${who.cid}/interactive`;
  const opened = await api(path, { token: who.token, body: {} });
  expect(opened.status, await opened.clone().text()).toBe(201);
  expect((await api(path, { token: who.token, method: "DELETE" })).status).toBe(200);
  const stream = await collect(
    await api(`/v1/conversations/${who.cid}/events`, { token: who.token }),
    (e) => e.type === "interactive.released",
    { timeoutMs: 15_000 },
  );
  return new Set(stream.frames.flatMap((frame) => (frame.event ? [frame.event] : [])));
}

describe("the page's event names and the server's", () => {
  it("every event the server streams in a conversation's life is one the page listens for", async () => {
    const seen = new Set<string>();
    const add = (types: Set<string>) => types.forEach((t) => seen.add(t));
    add(await typesOf("hello"));
    add(await typesOf("set up [ask]", () => ({ outcome: "accepted", data: { project: "p", framework: "jest" } })));
    add(await typesOf("set up [ask-timeout]"));
    add(await typesOf("run the tests [permission]", () => "cancel"));
    add(
      await typesOf("plan it [plan]", (i) =>
        i.kind === "plan" ? { outcome: "accepted", data: { decision: "approve" } } : "cancel",
      ),
    );
    add(await typesOf("this fails [fail]"));
    add(await typesOf("odd usage [bad-usage]"));
    add(await typesOf("look around [subagents]"));
    // A turn after its user's sandbox was deleted says the agent's memory was reset (a `warning`).
    const user = { token: await tokenFor(uid("user")), cid: uid("conv") };
    await typesOf("hello", undefined, user);
    expect((await api("/v1/environment", { token: user.token, method: "DELETE" })).status).toBe(200);
    add(await typesOf("are you there?", undefined, user));
    add(await queueTypes());
    add(await workspaceTypes());
    add(await interactiveTypes());
    const missing = [...seen].filter((type) => !STREAM_EVENTS.includes(type));
    expect(missing).toEqual([]);
    // And the gateway's own names are the ones it emits (budget.exceeded needs a budget: test/budget.test.ts;
    // branch.switched a branch: test/branches.test.ts, which reads it off the stream).
    const gateway = Object.values(GATEWAY_EVENT).filter(
      (type) => type !== GATEWAY_EVENT.budgetExceeded && type !== GATEWAY_EVENT.branchSwitched,
    );
    expect(gateway.filter((type) => !seen.has(type))).toEqual([]);
  });

  it("every frame type the Sandbox client knows and shows is one the page listens for", () => {
    const shown = Object.keys(FrameDataSchemas).filter((type) => !NOT_SHOWN.has(type));
    expect(shown.filter((type) => !STREAM_EVENTS.includes(type))).toEqual([]);
  });
});
