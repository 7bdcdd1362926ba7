import { inspectRoutes } from "hono/dev";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { UiMessagesSchema } from "../src/ai-sdk/request";
import {
  CancelAckSchema,
  ConversationBootstrapSchema,
  ConversationEntrySchema,
  ConversationListSchema,
  ConversationSummarySchema,
  ConversationUsageSchema,
  DeletedAnswer,
  DevLoginAnswer,
  EventEnvelopeSchema,
  HealthSchema,
  InteractionAckSchema,
  MessagesSchema,
  QueueClearedAnswer,
  StreamTokenAnswer,
  TurnViewSchema,
} from "../src/schemas/api";
import {
  AccountAnswer,
  AccountDeletion,
  EnvironmentAnswer,
  EnvironmentDeleteAnswer,
  EnvironmentStopAnswer,
} from "../src/schemas/environment";
import {
  WebhookDeliveriesAnswer,
  WebhookEndpointView,
  WebhookListAnswer,
  WebhookSecretAnswer,
} from "../src/schemas/webhooks";
import app from "../src/worker";
import { api, collect, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

/** The body matches its documented schema exactly: valid, and with no field the schema does not name. */
async function documented<S extends z.ZodType>(schema: S, response: Response): Promise<z.output<S>> {
  const body = await json(response);
  const parsed = schema.safeParse(body);
  expect(parsed.success ? "valid" : JSON.stringify(parsed.error.issues)).toBe("valid");
  expect(parsed.data).toEqual(body);
  return parsed.data!;
}

/** The local-development helpers left out of the document, each saying why in its declaration (src/http/routes/dev.ts). */
const LOCAL_ONLY = [
  "ALL /_emulator/*",
  "POST /v1/conversations/{cid}/dev/drop-streams",
  "GET /v1/conversations/{cid}/dev/object",
];

describe("the OpenAPI document matches what the routes answer", () => {
  it("names every route the app serves (walking the app's own route table), and none it does not", async () => {
    const served = new Set(
      inspectRoutes(app)
        .filter((route) => !route.isMiddleware)
        .map((route) => `${route.method} ${route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`),
    );
    const doc = await json(await api("/openapi.json"));
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(
      [...served].filter((route) => !documented.includes(route) && !LOCAL_ONLY.includes(route)),
      "served but not documented",
    ).toEqual([]);
    expect(
      documented.filter((route) => !served.has(route)),
      "documented but not served",
    ).toEqual([]);
    expect(
      LOCAL_ONLY.filter((route) => !served.has(route)),
      "no longer served: take it off LOCAL_ONLY",
    ).toEqual([]);
    expect(documented).toEqual(
      expect.arrayContaining([
        "GET /healthz",
        "GET /openapi.json",
        "POST /v1/conversations/{cid}/turns",
        "POST /v1/chat",
      ]),
    );
  });

  it("every route's answer parses with its documented schema, with nothing undocumented", async () => {
    await documented(HealthSchema, await api("/healthz"));
    await documented(DevLoginAnswer, await api("/v1/dev/login", { body: { user: uid("dev") } }));
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    const accepted = await documented(TurnViewSchema, await sendTurn(token, cid, turnId, "hello [ask]"));
    const stream = await collect(
      await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
      (e) => e.type === "interaction.requested",
    );
    for (const event of stream.events) expect(EventEnvelopeSchema.parse(event)).toEqual(event);
    const ask = (stream.events.at(-1)!.data as { interaction: { id: string } }).interaction;
    const summary = await documented(ConversationSummarySchema, await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.interactions).toHaveLength(1);
    await documented(
      InteractionAckSchema,
      await api(`/v1/conversations/${cid}/interactions/${encodeURIComponent(ask.id)}`, {
        token,
        body: { operationId: uid("op"), outcome: "accepted", data: { project: "demo", framework: "vitest" } },
      }),
    );
    await collect(await api(`/v1/conversations/${cid}/events?after=${stream.lastId}`, { token }), isTurnEnd);
    await documented(TurnViewSchema, await api(`/v1/conversations/${cid}/turns/${turnId}`, { token }));
    await documented(TurnViewSchema, await sendTurn(token, cid, turnId, "hello [ask]"));
    await documented(ConversationListSchema, await api("/v1/conversations", { token }));
    await documented(
      ConversationEntrySchema,
      await api(`/v1/conversations/${cid}`, { token, method: "PATCH", body: { title: "Renamed" } }),
    );
    await documented(MessagesSchema, await api(`/v1/conversations/${cid}/messages`, { token }));
    await documented(UiMessagesSchema, await api(`/v1/chat/${cid}/messages`, { token }));
    await documented(ConversationUsageSchema, await api(`/v1/conversations/${cid}/usage`, { token }));
    await documented(StreamTokenAnswer, await api(`/v1/conversations/${cid}/stream-token`, { token, body: {} }));
    await documented(ConversationBootstrapSchema, await api(`/v1/conversations/${cid}/bootstrap`, { token }));
    const slow = uid("turn");
    await sendTurn(token, cid, slow, "a long job [slow] [long]");
    // Queued turns: the queued answer, the summary's queue, an edit, a removal, the queue cleared.
    const [q1, q2] = [uid("q"), uid("q")];
    for (const q of [q1, q2])
      await documented(TurnViewSchema, await sendTurn(token, cid, q, "wait", { whenBusy: "queue" }));
    expect(
      (await documented(ConversationSummarySchema, await api(`/v1/conversations/${cid}`, { token }))).queue,
    ).toHaveLength(2);
    await documented(
      TurnViewSchema,
      await api(`/v1/conversations/${cid}/turns/${q1}`, { token, method: "PATCH", body: { message: "edited" } }),
    );
    await documented(TurnViewSchema, await api(`/v1/conversations/${cid}/turns/${q1}`, { token, method: "DELETE" }));
    await documented(TurnViewSchema, await api(`/v1/conversations/${cid}/turns/${q1}`, { token }));
    expect(
      (await documented(QueueClearedAnswer, await api(`/v1/conversations/${cid}/queue`, { token, method: "DELETE" })))
        .removed,
    ).toEqual([q2]);
    await documented(
      CancelAckSchema,
      await api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: uid("op") } }),
    );
    await waitForTurn(token, cid, slow);
    await documented(DeletedAnswer, await api(`/v1/conversations/${cid}`, { token, method: "DELETE" }));
  });

  it("the sandbox's and the account's routes answer their documented schemas", async () => {
    const token = await tokenFor(uid("user"));
    await documented(EnvironmentAnswer, await api("/v1/environment", { token }));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "hello");
    await waitForTurn(token, cid, turnId);
    await documented(EnvironmentAnswer, await api("/v1/environment", { token }));
    await documented(EnvironmentStopAnswer, await api("/v1/environment/stop", { token, method: "POST" }));
    await documented(EnvironmentDeleteAnswer, await api("/v1/environment", { token, method: "DELETE" }));
    await documented(AccountAnswer, await api("/v1/me", { token }));
    await documented(AccountDeletion, await api("/v1/me", { token, method: "DELETE" }));
    await documented(AccountAnswer, await api("/v1/me", { token }));
    // The account gate's answers are documented on every authenticated route but the account's own.
    const doc = await json(await api("/openapi.json"));
    for (const [path, method] of [
      ["/v1/conversations", "get"],
      ["/v1/conversations/{cid}/events", "get"],
      ["/v1/environment", "get"],
    ] as const) {
      expect(Object.keys(doc.paths[path][method].responses)).toEqual(expect.arrayContaining(["409", "410"]));
    }
    expect(Object.keys(doc.paths["/v1/me"].delete.responses)).not.toContain("410");
  });

  it("the webhook routes' answers parse with their documented schemas", async () => {
    const token = await tokenFor(uid("user"));
    const created = await documented(
      WebhookSecretAnswer,
      await api("/v1/webhooks", { token, body: { url: "http://127.0.0.1:9/hook", events: ["turn.completed"] } }),
    );
    await documented(WebhookListAnswer, await api("/v1/webhooks", { token }));
    await documented(WebhookEndpointView, await api(`/v1/webhooks/${created.id}`, { token }));
    await documented(WebhookSecretAnswer, await api(`/v1/webhooks/${created.id}/rotate-secret`, { token, body: {} }));
    await documented(WebhookDeliveriesAnswer, await api(`/v1/webhooks/${created.id}/deliveries`, { token }));
    await documented(DeletedAnswer, await api(`/v1/webhooks/${created.id}`, { token, method: "DELETE" }));
  });

  it("a turn's two times are documented: when it was sent (createdAt) and when it started (startedAt)", async () => {
    const doc = await json(await api("/openapi.json"));
    const turn = doc.components.schemas.Turn;
    expect(turn.required).toContain("createdAt");
    expect(turn.required).not.toContain("startedAt");
    expect(turn.properties.createdAt.description).toMatch(/sent/);
    expect(turn.properties.startedAt).toMatchObject({ type: "string", description: expect.stringMatching(/queue/) });
  });

  // The reference at /docs tries requests with both.
  it("names this server as the relative `/`, and the bearer token where a route needs one", async () => {
    const doc = await json(await api("/openapi.json"));
    // Relative to where the document was read: `npm start` on any PORT, a deployment under any host.
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    for (const read of ["http://127.0.0.1:8787/openapi.json", "https://gateway.example/openapi.json"]) {
      const tried = new URL(`${doc.servers[0].url.replace(/\/$/, "")}/healthz`, read);
      expect(tried.href).toBe(new URL("/healthz", read).href);
    }
    expect(doc.components.securitySchemes.bearer).toMatchObject({
      type: "http",
      scheme: "bearer",
      description: expect.stringContaining("/v1/dev/login"),
    });
    expect(doc.paths["/v1/conversations/{cid}/turns"].post.security).toEqual([{ bearer: [] }]);
    expect(doc.paths["/healthz"].get).not.toHaveProperty("security");
    expect(doc).not.toHaveProperty("security");
  });

  it("the document names every component it refers to", async () => {
    const doc = await json(await api("/openapi.json"));
    const text = JSON.stringify(doc.paths);
    const refs = [...text.matchAll(/#\/components\/schemas\/([A-Za-z]+)/g)].map((m) => m[1]!);
    for (const id of new Set(refs)) expect(doc.components.schemas, id).toHaveProperty(id);
    for (const path of [
      "/v1/chat",
      "/v1/chat/{cid}/stream",
      "/v1/chat/{cid}/messages",
      "/v1/webhooks",
      "/v1/webhooks/{id}",
      "/v1/webhooks/{id}/rotate-secret",
      "/v1/webhooks/{id}/deliveries",
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
  });
});
