/**
 * The user's agent settings through the public API (docs/api.md#bring-your-own-key, #mcp-servers,
 * #standing-instructions): a model key stored sealed and sent as the turn's session credential,
 * never answered; a rotated key going on without conflict; MCP servers sent as runtime attachments
 * after the catalog says the backend takes them; instructions appended, a replacement refused where
 * the backend can only append. Each refusal leaves nothing stored and sends nothing.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { deriveOwnerKey } from "../src/auth/ids";
import { api, counters, emulator, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const testEnv = env as unknown as Record<string, string>;
const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);
afterEach(() => variants({}));

const put = (token: string, path: string, body: unknown) => api(path, { token, method: "PUT", body });

async function user() {
  const id = uid("user");
  return { id, token: await tokenFor(id) };
}

describe("model credentials (bring your own key)", () => {
  it("stored, listed without the key, sent upstream as the turn's session credential, rotated without conflict", async () => {
    const { token } = await user();
    const key = `sk-${crypto.randomUUID()}`;
    const created = await put(token, "/v1/credentials/zai-work", {
      provider: "zai",
      key,
      baseUrl: "https://router.example.test/v1",
    });
    expect(created.status).toBe(200);
    const view = await json(created);
    expect(view).toMatchObject({
      name: "zai-work",
      provider: "zai",
      baseUrl: "https://router.example.test/v1",
      created: true,
    });
    expect(JSON.stringify(view)).not.toContain(key);
    const listed = await (await api("/v1/credentials", { token })).text();
    expect(listed).toContain("zai-work");
    expect(listed).not.toContain(key);

    const cid = uid("conv");
    const turn = await sendTurn(token, cid, "t1", "[whoami]", { credential: "zai-work", model: "zai/glm-5.2" });
    expect(turn.status).toBe(202);
    const done = await waitForTurn(token, cid, "t1");
    expect(done.result.text).toContain("credential zai at https://router.example.test/v1 (key set)");
    // The conversation names its credential (never the key).
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).agent).toMatchObject({
      credential: "zai-work",
      mcpServers: [],
    });
    // The Sandbox got the key itself, in backend.model (the emulator's own record of the dispatch).
    const upstream = await emulator(`/_emulator/executions/${done.executionId}`);
    expect(upstream.request.backend.model).toMatchObject({ provider: "zai", model: "glm-5.2", apiKey: key });

    // A rotation: the same name, another key. The same turn sent again replays (no conflict); a new turn carries the new key.
    const rotated = `sk-${crypto.randomUUID()}`;
    expect(await json(await put(token, "/v1/credentials/zai-work", { provider: "zai", key: rotated }))).toMatchObject({
      created: false,
    });
    expect(
      (await sendTurn(token, cid, "t1", "[whoami]", { credential: "zai-work", model: "zai/glm-5.2" })).status,
    ).toBe(200);
    await sendTurn(token, cid, "t2", "[whoami]");
    const second = await waitForTurn(token, cid, "t2");
    // The conversation's credential, taken by the later turn that names none.
    expect((await emulator(`/_emulator/executions/${second.executionId}`)).request.backend.model.apiKey).toBe(rotated);
  });

  it("a turn naming a credential the user does not have is refused before anything is stored or sent", async () => {
    const { token } = await user();
    const cid = uid("conv");
    const before = (await counters())["runs.dispatches"] ?? 0;
    const res = await sendTurn(token, cid, "t1", "hi", { credential: "nope" });
    expect({ status: res.status, code: (await json(res)).error.code }).toEqual({
      status: 400,
      code: "credential_not_found",
    });
    expect((await api(`/v1/conversations/${cid}/turns/t1`, { token })).status).toBe(404);
    expect((await counters())["runs.dispatches"] ?? 0).toBe(before);
  });

  it("bad input: an endpoint with a query or userinfo, a key with control characters, an unknown field", async () => {
    const { token } = await user();
    for (const body of [
      { provider: "zai", key: "k", baseUrl: "https://x.test/v1?token=1" },
      { provider: "zai", key: "k", baseUrl: "https://user:pw@x.test/v1" },
      { provider: "zai", key: "k", baseUrl: "ftp://x.test/" },
      { provider: "zai", key: "a\nb" },
      { provider: "zai", key: "k", colour: "red" },
    ]) {
      const res = await put(token, "/v1/credentials/c1", body);
      expect(res.status).toBe(400);
    }
    expect(await json(await api("/v1/credentials", { token }))).toEqual({ credentials: [] });
    expect((await api("/v1/credentials/nope", { token, method: "DELETE" })).status).toBe(404);
  });

  it("the key is sealed at rest: the user object's rows hold no key in clear", async () => {
    const { id, token } = await user();
    const key = `sk-${crypto.randomUUID()}`;
    await put(token, "/v1/credentials/k1", { provider: "openai", key });
    const ownerKey = await deriveOwnerKey(testEnv.SESSION_ID_SECRET!, id);
    const stub = env.USERS.get(env.USERS.idFromName(ownerKey));
    const rows = await runInDurableObject(stub, (_i, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM credentials").toArray()),
    );
    expect(rows).toContain("k1");
    expect(rows).not.toContain(key);
  });
});

describe("MCP servers", () => {
  it("sent as runtime attachments with their auth; the auth value never answered", async () => {
    const { token } = await user();
    const secret = `Bearer ${crypto.randomUUID()}`;
    const stored = await put(token, "/v1/mcp-servers/docs", {
      url: "https://mcp.example.test/sse",
      auth: { header: "Authorization", value: secret },
    });
    expect(await json(stored)).toMatchObject({
      name: "docs",
      authHeader: "Authorization",
      enabled: true,
      created: true,
    });
    expect(await (await api("/v1/mcp-servers", { token })).text()).not.toContain(secret);
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "[whoami]", { mcpServers: ["docs"] });
    const done = await waitForTurn(token, cid, "t1");
    expect(done.result.text).toContain("attachments docs (auth)");
    const upstream = await emulator(`/_emulator/executions/${done.executionId}`);
    expect(upstream.request.backend.runtimeAttachments).toEqual([
      { type: "mcp", name: "docs", url: "https://mcp.example.test/sse", headers: { Authorization: secret } },
    ]);
  });

  it("a replacement without auth keeps the stored one (turning a server off and on); null removes it", async () => {
    const { token } = await user();
    const secret = `Bearer ${crypto.randomUUID()}`;
    const url = "https://mcp.example.test/sse";
    await put(token, "/v1/mcp-servers/docs", { url, auth: { header: "Authorization", value: secret } });
    expect(await json(await put(token, "/v1/mcp-servers/docs", { url, enabled: false }))).toMatchObject({
      authHeader: "Authorization",
      enabled: false,
      created: false,
    });
    await put(token, "/v1/mcp-servers/docs", { url, enabled: true });
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "[whoami]", { mcpServers: ["docs"] });
    const kept = await waitForTurn(token, cid, "t1");
    expect(
      (await emulator(`/_emulator/executions/${kept.executionId}`)).request.backend.runtimeAttachments[0].headers,
    ).toEqual({
      Authorization: secret,
    });
    expect(await json(await put(token, "/v1/mcp-servers/docs", { url, auth: null }))).toMatchObject({
      authHeader: null,
    });
    await sendTurn(token, cid, "t2", "[whoami]");
    const removed = await waitForTurn(token, cid, "t2");
    expect(removed.result.text).toContain("attachments docs");
    expect(removed.result.text).not.toContain("(auth)");
  });

  it("refused: a backend whose catalog says it takes no attachments (the capability named), a disabled server, an unsafe URL", async () => {
    const { token } = await user();
    await put(token, "/v1/mcp-servers/docs", { url: "https://mcp.example.test/sse" });
    await put(token, "/v1/mcp-servers/off", { url: "https://mcp.example.test/off", enabled: false });
    const before = (await counters())["runs.dispatches"] ?? 0;
    const codex = await sendTurn(token, uid("conv"), "t1", "hi", {
      mcpServers: ["docs"],
      providerOptions: { backend: { type: "codex" } },
    });
    const body = await json(codex);
    expect({ status: codex.status, code: body.error.code }).toEqual({ status: 400, code: "capability_unsupported" });
    expect(body.error.message).toContain("attachments: false");
    const off = await sendTurn(token, uid("conv"), "t1", "hi", { mcpServers: ["off"] });
    expect((await json(off)).error.code).toBe("mcp_server_disabled");
    const unknown = await sendTurn(token, uid("conv"), "t1", "hi", { mcpServers: ["nowhere"] });
    expect({ status: unknown.status, code: (await json(unknown)).error.code }).toEqual({
      status: 400,
      code: "mcp_server_not_found",
    });
    expect((await counters())["runs.dispatches"] ?? 0).toBe(before);
    const unsafe = await put(token, "/v1/mcp-servers/bad", { url: "https://10.0.0.1/sse" });
    expect(unsafe.status).toBe(422);
  });

  it("a catalog read that fails is the provider's error, unchanged, before any sandbox work", async () => {
    const { token } = await user();
    await put(token, "/v1/mcp-servers/docs", { url: "https://mcp.example.test/sse" });
    await emulator("/_emulator/faults", { failNext: { status: 503, count: 10, route: "backends" } });
    try {
      const res = await sendTurn(token, uid("conv"), "t1", "hi", { mcpServers: ["docs"] });
      expect(res.status).toBeGreaterThanOrEqual(500);
      expect((await json(res)).error.code).toMatch(/^upstream_/);
    } finally {
      await emulator("/_emulator/faults", {});
    }
  });
});

describe("standing instructions", () => {
  it("the user's and the conversation's appended to the system prompt, in that order", async () => {
    const { token } = await user();
    expect(await json(await put(token, "/v1/instructions", { text: "Answer in French." }))).toMatchObject({
      text: "Answer in French.",
    });
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "[whoami]", { instructions: "Cite the file you read." });
    expect((await waitForTurn(token, cid, "t1")).result.text).toContain(
      "appended: Answer in French.\n\nCite the file you read.",
    );
  });

  it("a replacement is refused where the backend can only append, never quietly appended; taken where it can replace", async () => {
    const { token } = await user();
    const refused = await sendTurn(token, uid("conv"), "t1", "hi", { systemPrompt: "You are terse." });
    const body = await json(refused);
    expect({ status: refused.status, code: body.error.code }).toEqual({ status: 400, code: "capability_unsupported" });
    expect(body.error.message).toContain("systemPromptReplace: false");
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "[whoami]", {
      systemPrompt: "You are terse.",
      providerOptions: { backend: { type: "claude-code" } },
    });
    expect((await waitForTurn(token, cid, "t1")).result.text).toContain("system prompt replaced: You are terse.");
  });
});
