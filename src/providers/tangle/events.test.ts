/**
 * The run reader's reading of a wait said only by status (./events.ts), against a stand-in fetch:
 * the session's interactions are read then, only this run's asks become asks, and a status right
 * after the ask's own interaction frame reads nothing.
 */
import { describe, expect, it } from "vitest";
import type { AgentExactRunControlRef } from "../../schemas/contracts";
import { HttpTransport } from "../http";
import type { ProviderEvent } from "../provider";
import { readEvents } from "./events";

const ref: AgentExactRunControlRef = {
  runId: "exe-1",
  provider: "tangle-sandbox",
  environmentId: "sbx-1",
  sessionId: "s1",
  executionId: "exe-1",
  requestDigest: `sha256:${"0".repeat(64)}`,
};

const ask = (id: string, executionId: string) => ({
  id,
  kind: "question",
  title: "?",
  answerSpec: { fields: [] },
  binding: {
    runId: executionId,
    provider: "tangle-sandbox",
    environmentId: "sbx-1",
    sessionId: "s1",
    executionId,
    interactionId: id,
  },
});

const sse = (frames: Array<{ id: string; event: string; data: unknown }>) =>
  new Response(frames.map((f) => `event: ${f.event}\nid: ${f.id}\ndata: ${JSON.stringify(f.data)}\n\n`).join(""), {
    headers: { "content-type": "text/event-stream" },
  });

async function read(
  frames: Array<{ id: string; event: string; data: unknown }>,
  listed: unknown[],
): Promise<{ events: ProviderEvent[]; lists: number }> {
  let lists = 0;
  const client = new HttpTransport({
    baseUrl: "https://sandbox.example",
    bearer: "key",
    headersTimeoutMs: 1000,
    fetch: async (req) => {
      if (req.method === "GET" && new URL(req.url).pathname.endsWith("/agents/sessions/s1/interactions")) {
        lists++;
        return Response.json({ data: { interactions: listed } });
      }
      return sse(frames);
    },
    sleep: async () => undefined,
  });
  const events: ProviderEvent[] = [];
  for await (const event of readEvents(client, ref, {})) events.push(event);
  return { events, lists };
}

const asked = (events: ProviderEvent[]) =>
  events.flatMap((e) => (e.kind === "interaction.requested" ? [e.request.id] : []));

describe("a wait said only by status", () => {
  it("reads the session's interactions and takes only this run's asks", async () => {
    const { events, lists } = await read(
      [{ id: "1", event: "status", data: { status: "blocked_on_approval" } }],
      [ask("a1", "exe-1"), ask("a2", "exe-other"), { id: "broken" }],
    );
    expect(lists).toBe(1);
    expect(asked(events)).toEqual(["a1"]);
    // The status is still shown, under its own id; the broken listing is a warning.
    expect(events[0]).toMatchObject({ kind: "passthrough", upstreamId: "1", shown: { type: "status" } });
    expect(events.filter((e) => e.kind === "warning").map((e) => (e as { code: string }).code)).toEqual([
      "invalid_upstream_frame",
    ]);
  });

  it("reads nothing when the ask's own interaction frame came just before; reads again for a later wait after other frames", async () => {
    const frames = [
      { id: "1", event: "interaction", data: { request: ask("a1", "exe-1") } },
      { id: "2", event: "status", data: { status: "awaiting_question" } },
      { id: "3", event: "message.part.updated", data: { part: { id: "p", type: "text", text: "ok" } } },
      { id: "4", event: "status", data: { status: "awaiting_something_new" } },
    ];
    const { events, lists } = await read(frames, [ask("a2", "exe-1")]);
    expect(lists).toBe(1);
    expect(asked(events)).toEqual(["a1", "a2"]);
  });
});
