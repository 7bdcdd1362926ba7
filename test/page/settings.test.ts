/**
 * The settings view's logic (public/lib/settings.js), in Node: what each form sends, what it says
 * once saved (a rotation says the key was replaced), and where a refusal belongs, read from the
 * gateway's own refusals (src/http/body.ts over src/schemas/agent-settings.ts, the MCP URL rule's
 * 422, settings_full) as the page's api module throws them.
 */
import { describe, expect, it } from "vitest";
import { ApiError as PageApiError } from "../../public/lib/api.js";
import {
  credentialBody,
  credentialLine,
  INSTRUCTIONS_MAX,
  instructionsCount,
  instructionsSavedText,
  mcpServerBody,
  refusalOf,
  savedText,
  serverLine,
  toggleBody,
} from "../../public/lib/settings.js";
import { NO_SETTINGS, turnSettingsView } from "../../public/lib/turn-settings.js";
import { catalogAnswer } from "../../src/emulator/catalog";
import { ApiError } from "../../src/errors";
import { invalid } from "../../src/http/body";
import type { HttpTransport } from "../../src/providers/http";
import { readCatalog } from "../../src/providers/tangle/catalog";
import {
  InstructionsText,
  PutCredentialBody,
  PutInstructionsBody,
  PutMcpServerBody,
  SettingName,
} from "../../src/schemas/agent-settings";
import type { AgentCatalog } from "../../src/schemas/agents";
import { checkTarget } from "../../src/webhooks/target";

/** What the page's api module throws for the gateway's refusal. */
function asThrown(status: number, error: ApiError) {
  const body = JSON.parse(JSON.stringify(error.toBody()));
  return new PageApiError(status, body.error.code, body.error.message, body);
}

/** The gateway's 400 for a body its schema refuses (src/http/body.ts). */
function refusedBody(schema: { safeParse: (v: unknown) => { success: boolean; error?: unknown } }, body: unknown) {
  const parsed = schema.safeParse(body);
  expect(parsed.success).toBe(false);
  return asThrown(400, invalid("the body is invalid", parsed.error as never));
}

const server = {
  name: "tools",
  url: "https://mcp.example.com/sse",
  authHeader: "Authorization",
  enabled: true,
  createdAt: "2026-12-05T10:00:00.000Z",
  updatedAt: "2026-12-05T10:00:00.000Z",
};

describe("what a form sends", () => {
  it("a key: the provider trimmed, the key as typed, an empty endpoint left out; the gateway's schema takes it", () => {
    const body = credentialBody({ provider: " anthropic ", key: " sk-test ", baseUrl: "  " });
    expect(body).toEqual({ provider: "anthropic", key: " sk-test " });
    expect(PutCredentialBody.safeParse(body).success).toBe(true);
    const withEndpoint = credentialBody({ provider: "zai", key: "k", baseUrl: " https://llm.example.com/v1 " });
    expect(withEndpoint).toEqual({ provider: "zai", key: "k", baseUrl: "https://llm.example.com/v1" });
    expect(PutCredentialBody.safeParse(withEndpoint).success).toBe(true);
  });

  it("an MCP server: auth only when a field of it is filled in (one alone is the gateway's to refuse, naming it)", () => {
    const plain = mcpServerBody({ url: " https://mcp.example.com/sse ", header: "", value: "", enabled: true });
    expect(plain).toEqual({ url: "https://mcp.example.com/sse", enabled: true });
    expect(PutMcpServerBody.safeParse(plain).success).toBe(true);
    const authed = mcpServerBody({ url: "https://a.example", header: " X-Token ", value: "v", enabled: false });
    expect(authed).toEqual({ url: "https://a.example", auth: { header: "X-Token", value: "v" }, enabled: false });
    expect(PutMcpServerBody.safeParse(authed).success).toBe(true);
    const headerOnly = mcpServerBody({ url: "https://a.example", header: "X-Token", value: "", enabled: true });
    expect(refusalOf(refusedBody(PutMcpServerBody, headerOnly)).fields).toEqual(["authValue"]);
    const valueOnly = mcpServerBody({ url: "https://a.example", header: "", value: "v", enabled: true });
    expect(refusalOf(refusedBody(PutMcpServerBody, valueOnly)).fields).toEqual(["authHeader"]);
  });

  it("replacing a server with auth: its header and no value keeps the stored auth; both emptied removes it", () => {
    const form = { url: "https://a.example", header: "Authorization", value: "", enabled: true };
    expect(mcpServerBody({ ...form, storedHeader: "Authorization" })).toEqual({
      url: "https://a.example",
      enabled: true,
    });
    expect(mcpServerBody({ ...form, header: "", storedHeader: "Authorization" })).toEqual({
      url: "https://a.example",
      auth: null,
      enabled: true,
    });
    expect(
      PutMcpServerBody.safeParse(mcpServerBody({ ...form, header: "", storedHeader: "Authorization" })).success,
    ).toBe(true);
    // Another header without its value is the gateway's to refuse.
    expect(mcpServerBody({ ...form, header: "X-Token", storedHeader: "Authorization" }).auth).toEqual({
      header: "X-Token",
      value: "",
    });
  });

  it("turning a server on or off sends its URL and state, no auth: the gateway keeps the stored one", () => {
    expect(toggleBody(server, false)).toEqual({ url: server.url, enabled: false });
    expect(PutMcpServerBody.parse(toggleBody(server, false)).auth).toBeUndefined();
  });
});

describe("what the view says", () => {
  it("saved: a new one by name; a rotation says the key was replaced", () => {
    expect(savedText("credential", { name: "mine", created: true })).toBe("Saved “mine”.");
    expect(savedText("credential", { name: "mine", created: false })).toBe("Saved: the key of “mine” was replaced.");
    expect(savedText("mcp", { name: "tools", created: false })).toBe("Saved: “tools” was replaced.");
  });

  it("the rows name what the API answers and nothing secret", () => {
    const credential = {
      name: "mine",
      provider: "anthropic",
      baseUrl: null,
      createdAt: server.createdAt,
      updatedAt: server.updatedAt,
    };
    expect(credentialLine(credential)).toBe("anthropic · the provider's own endpoint");
    expect(credentialLine({ ...credential, baseUrl: "https://llm.example.com" })).toBe(
      "anthropic · https://llm.example.com",
    );
    expect(serverLine(server)).toBe("https://mcp.example.com/sse · auth: Authorization header");
    expect(serverLine({ ...server, authHeader: null })).toBe("https://mcp.example.com/sse · no auth");
  });

  it("the instructions' count is the gateway's limit, counted as the gateway counts", () => {
    expect(INSTRUCTIONS_MAX).toBe(16_384);
    expect(instructionsCount("")).toBe("0 characters of 16,384");
    expect(instructionsCount("a")).toBe("1 character of 16,384");
    const full = "é".repeat(INSTRUCTIONS_MAX);
    expect(instructionsCount(full)).toBe("16,384 characters of 16,384");
    expect(InstructionsText.safeParse(full).success).toBe(true);
    expect(InstructionsText.safeParse(`${full}x`).success).toBe(false);
    expect(instructionsSavedText("Be brief.")).toBe("Saved.");
    expect(instructionsSavedText("")).toBe("Removed: no standing instructions.");
  });
});

describe("where a refusal belongs", () => {
  it("a 400 names its fields: the endpoint, the key, the provider", () => {
    const r = refusedBody(PutCredentialBody, {
      provider: "Not A Provider",
      key: "",
      baseUrl: "https://x.example/?q=1",
    });
    const { message, fields } = refusalOf(r);
    expect(message).toMatch(/^the body is invalid: /);
    expect(message).toContain("baseUrl: must not have a query or a fragment");
    expect(fields.sort()).toEqual(["baseUrl", "key", "provider"]);
  });

  it("the name, refused from the path before the body is read", () => {
    const parsed = SettingName.safeParse("has space");
    const r = asThrown(400, invalid("name", parsed.error as never));
    expect(refusalOf(r)).toEqual({ message: expect.stringMatching(/^name: /), fields: ["name"] });
  });

  it("the instructions' text", () => {
    const r = refusedBody(PutInstructionsBody, { text: "a\u0000b" });
    expect(refusalOf(r).fields).toEqual(["text"]);
  });

  it("422 mcp_server_url_refused names the URL; 409 settings_full names no field", () => {
    // As the route answers a private address (src/http/routes/agent-settings.ts).
    const target = checkTarget("https://10.0.0.1/x", false);
    if (target.ok) throw new Error("a private address is refused");
    const url = asThrown(422, new ApiError(422, "mcp_server_url_refused", `url ${target.reason}`, { field: "url" }));
    expect(refusalOf(url)).toEqual({ message: `url ${target.reason}`, fields: ["url"] });
    const full = asThrown(409, new ApiError(409, "settings_full", "at most 20 model credentials; delete one first"));
    expect(refusalOf(full)).toEqual({ message: "at most 20 model credentials; delete one first", fields: [] });
  });

  it("no answer at all: its message, no field", () => {
    expect(refusalOf(new PageApiError(0, "unreachable", "could not reach the server (offline)"))).toEqual({
      message: "could not reach the server (offline)",
      fields: [],
    });
  });
});

/** The emulator's catalog as GET /v1/agents answers it (opencode the default; codex takes no attachments). */
async function emulatorCatalog(): Promise<AgentCatalog> {
  const client = {
    json: async (_route: unknown, schema: { parse: (v: unknown) => unknown }) =>
      schema.parse(catalogAnswer("backends")),
  } as unknown as HttpTransport;
  return readCatalog(client, { backend: "opencode" });
}

describe("what a new conversation's first turn may name", () => {
  const credential = {
    name: "mine",
    provider: "anthropic",
    baseUrl: null,
    createdAt: server.createdAt,
    updatedAt: server.updatedAt,
  };
  const off = { ...server, name: "off", authHeader: null, enabled: false };

  it("nothing picked sends nothing; a key and the enabled servers are offered", async () => {
    const catalog = await emulatorCatalog();
    const view = turnSettingsView(catalog, "opencode", [credential], [server, off], NO_SETTINGS);
    expect(view.key).toEqual({
      shown: true,
      options: [
        { value: "", label: "The deployment's" },
        { value: "mine", label: "mine (anthropic)" },
      ],
      value: "",
    });
    expect(view.tools).toEqual({ shown: true, options: [{ name: "tools", checked: false }] });
    expect(view.send).toEqual({});
  });

  it("what was picked is sent; a pick no longer listed (deleted, disabled) is not", async () => {
    const catalog = await emulatorCatalog();
    const picked = { credential: "mine", mcpServers: ["tools", "off"] };
    expect(turnSettingsView(catalog, "opencode", [credential], [server, off], picked).send).toEqual({
      credential: "mine",
      mcpServers: ["tools"],
    });
    expect(turnSettingsView(catalog, "opencode", [], [off], picked).send).toEqual({});
  });

  it("no tools where the backend does not say it takes attachments; nothing with the CLI Bridge", async () => {
    const catalog = await emulatorCatalog();
    const picked = { credential: "mine", mcpServers: ["tools"] };
    for (const backend of ["codex", "pi"]) {
      const view = turnSettingsView(catalog, backend, [credential], [server], picked);
      expect(view.tools.shown).toBe(false);
      expect(view.send).toEqual({ credential: "mine" });
    }
    const bridge: AgentCatalog = { ...catalog, provider: "cli-bridge", perTurnBackend: false };
    const none = turnSettingsView(bridge, null, [credential], [server], picked);
    expect([none.key.shown, none.tools.shown, none.send]).toEqual([false, false, {}]);
  });
});
