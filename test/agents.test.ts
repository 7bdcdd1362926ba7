/**
 * Choosing the agent (docs/api.md#choosing-the-agent), through the public API against the emulator:
 * the catalog in each shape the Sandbox may answer, the conversation's agent, a turn's backend
 * options reaching the Sandbox, and every refusal before anything is stored or sent.
 */
import { afterEach, describe, expect, it } from "vitest";
import { api, counters, emulator, json, sendTurn, setFaults, tokenFor, uid, waitForTurn } from "./helpers";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
  await setFaults({});
});

describe("GET /v1/agents", () => {
  it.each(["backends", "data", "array"])(
    "reads the Sandbox's catalog answered as %s: each backend, its models and what it supports",
    async (shape) => {
      await variants({ catalog: shape });
      const token = await tokenFor(uid("user"));
      const res = await api("/v1/agents", { token });
      expect(res.status).toBe(200);
      const catalog = await json(res);
      expect(catalog.provider).toBe("tangle");
      expect(catalog.perTurnBackend).toBe(true);
      expect(catalog.backends.map((b: { type: string }) => b.type)).toEqual(["opencode", "claude-code", "codex", "pi"]);
      const [opencode, claude, codex, pi] = catalog.backends;
      expect(opencode.models).toContain("zai/glm-5.2");
      expect(opencode.supports).toEqual({
        interactions: true,
        attachments: true,
        systemPromptReplace: false,
        systemPromptAppend: true,
        perTurnModel: true,
      });
      expect(claude.supports.systemPromptReplace).toBe(true);
      expect(codex.supports.attachments).toBe(false);
      // What an entry does not state is unavailable with the reason, never assumed.
      expect(pi.models).toEqual({ unavailable: expect.stringContaining("does not state") });
      expect(pi.supports.attachments).toEqual({ unavailable: expect.any(String) });
      expect(pi.supports.interactions).toBe(true);
    },
  );

  it("a deployment without the catalog route: its configured backend, every fact unavailable", async () => {
    await variants({ catalog: "missing" });
    const token = await tokenFor(uid("user"));
    const catalog = await json(await api("/v1/agents", { token }));
    expect(catalog.backends).toHaveLength(1);
    expect(catalog.backends[0].type).toBe(catalog.default.backend);
    expect(catalog.backends[0].supports.perTurnModel).toEqual({ unavailable: expect.stringContaining("404") });
  });

  it("a failed catalog read is the provider's error, unchanged, and is not kept", async () => {
    const token = await tokenFor(uid("user"));
    await setFaults({ failNext: { status: 503, count: 10, route: "backends" } });
    const res = await api("/v1/agents", { token });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect((await json(res)).error.code).toMatch(/^upstream_/);
    await setFaults({});
    expect((await api("/v1/agents", { token })).status).toBe(200);
  });

  it("needs the user's token", async () => {
    expect((await api("/v1/agents")).status).toBe(401);
  });
});

describe("a conversation's agent", () => {
  it("the first turn chooses it, the summary and the list show it, and later turns run on it", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const backend = { type: "claude-code", model: { provider: "anthropic", model: "claude-opus-4-5" } };
    const first = await sendTurn(token, cid, "t1", "first [whoami]", { providerOptions: { backend } });
    expect(first.status).toBe(202);
    expect((await waitForTurn(token, cid, "t1")).result.text).toContain(
      "backend claude-code; model anthropic/claude-opus-4-5; interactions default",
    );
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.agent).toEqual({
      backend: "claude-code",
      model: "anthropic/claude-opus-4-5",
      chosen: "first-turn",
      credential: null,
      mcpServers: [],
    });
    const list = await json(await api("/v1/conversations", { token }));
    expect(list.conversations.find((c: { conversationId: string }) => c.conversationId === cid).agent).toEqual(
      summary.agent,
    );
    // A later turn that names nothing runs on the conversation's agent.
    await sendTurn(token, cid, "t2", "again [whoami]");
    expect((await waitForTurn(token, cid, "t2")).result.text).toContain(
      "backend claude-code; model anthropic/claude-opus-4-5; interactions default",
    );
    // A turn's own model is that turn's only.
    await sendTurn(token, cid, "t3", "override [whoami]", { model: "anthropic/claude-sonnet-4-5" });
    expect((await waitForTurn(token, cid, "t3")).result.text).toContain(
      "backend claude-code; model anthropic/claude-sonnet-4-5; interactions default",
    );
    expect((await json(await api(`/v1/conversations/${cid}`, { token }))).agent.model).toBe(
      "anthropic/claude-opus-4-5",
    );
  });

  it("a backend whose catalog says a turn cannot change its model refuses a later turn naming another", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const codex = { providerOptions: { backend: { type: "codex" } }, model: "openai/gpt-5-codex" };
    await sendTurn(token, cid, "t1", "hi", codex);
    await waitForTurn(token, cid, "t1");
    // The same model again is no change; another is refused, naming the fact.
    expect((await sendTurn(token, cid, "t2", "again", { model: "openai/gpt-5-codex" })).status).toBe(202);
    await waitForTurn(token, cid, "t2");
    const res = await sendTurn(token, cid, "t3", "other", { model: "openai/gpt-5" });
    const body = await json(res);
    expect({ status: res.status, code: body.error.code }).toEqual({ status: 400, code: "capability_unsupported" });
    expect(body.error.message).toContain("perTurnModel: false");
    expect((await api(`/v1/conversations/${cid}/turns/t3`, { token })).status).toBe(404);
  });

  it("a conversation whose first turn names nothing shows the deployment's default", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "hello");
    await waitForTurn(token, cid, "t1");
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.agent).toMatchObject({ backend: "opencode", chosen: "default" });
  });

  it("backend options are part of the request: the same turn id with another agent is a conflict, the same one replays", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const options = {
      providerOptions: { backend: { type: "opencode", model: { provider: "zai", model: "glm-5.2" } } },
    };
    expect((await sendTurn(token, cid, "t1", "hi", options)).status).toBe(202);
    await waitForTurn(token, cid, "t1");
    expect((await sendTurn(token, cid, "t1", "hi", options)).status).toBe(200);
    const changed = await sendTurn(token, cid, "t1", "hi", {
      providerOptions: { backend: { type: "opencode", model: { provider: "openai", model: "gpt-5" } } },
    });
    expect(changed.status).toBe(409);
    expect((await json(changed)).error.code).toBe("turn_conflict");
  });
});

describe("the seed's refusals, before anything is stored or sent", () => {
  const refused = async (extra: Record<string, unknown>, code: string, mentions: string) => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const before = (await counters())["runs.dispatches"] ?? 0;
    const res = await sendTurn(token, cid, "t1", "hi", extra);
    const body = await json(res);
    expect({ status: res.status, code: body.error.code }).toEqual({ status: 400, code });
    expect(body.error.message).toContain(mentions);
    expect((await api(`/v1/conversations/${cid}/turns/t1`, { token })).status).toBe(404);
    expect((await counters())["runs.dispatches"] ?? 0).toBe(before);
  };

  it("a field the prompt options do not declare, at every level", async () => {
    await refused({ providerOptions: { temperature: 1 } }, "invalid_request", "providerOptions.temperature");
    await refused(
      { providerOptions: { backend: { colour: "red" } } },
      "invalid_request",
      "providerOptions.backend.colour",
    );
    await refused(
      { providerOptions: { backend: { model: { model: "x", seed: 1 } } } },
      "invalid_request",
      "providerOptions.backend.model.seed",
    );
  });

  it("a key in the body (bearer material is never taken with a turn)", async () => {
    await refused(
      { providerOptions: { backend: { model: { model: "x", apiKey: "sk-secret" } } } },
      "invalid_request",
      "providerOptions.backend.model.apiKey",
    );
  });

  it("a turn model that disagrees with backend.model", async () => {
    await refused(
      { model: "openai/gpt-5", providerOptions: { backend: { model: { provider: "zai", model: "glm-5.2" } } } },
      "model_conflict",
      "disagrees",
    );
  });

  it("interactions stated in two places that disagree", async () => {
    await refused(
      { interactions: { question: true }, providerOptions: { backend: { interactions: { question: false } } } },
      "interactions_conflict",
      "disagree",
    );
  });

  it("a backend the catalog does not list", async () => {
    await refused({ providerOptions: { backend: { type: "no-such-agent" } } }, "unknown_backend", "no-such-agent");
  });
});
