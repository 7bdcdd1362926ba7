/**
 * The user's agent settings (docs/api.md#bring-your-own-key, #mcp-servers, #standing-instructions):
 * model credentials at `/v1/credentials`, MCP servers at `/v1/mcp-servers`, standing instructions at
 * `/v1/instructions`, each kept by the user's object (src/user/agent-settings.ts). A key or an auth
 * header's value goes in and never comes out: no answer carries it. An MCP server's URL follows the
 * webhook target rules (../../webhooks/target.ts). Declared once (../route-declaration.ts).
 */
import type { Context } from "hono";
import { ApiError } from "../../errors";
import {
  CredentialList,
  InstructionsView,
  McpServerList,
  PutCredentialAnswer,
  PutCredentialBody,
  PutInstructionsBody,
  PutMcpServerAnswer,
  PutMcpServerBody,
  SettingName,
} from "../../schemas/agent-settings";
import { DeletedAnswer } from "../../schemas/api";
import { checkTarget } from "../../webhooks/target";
import { type AppEnv, userObject } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

const BODY_MAX_BYTES = 32 * 1024;
const named = { name: SettingName };

const user = userObject;

function nameOf(c: Context<AppEnv>): string {
  const parsed = SettingName.safeParse(c.req.param("name"));
  if (!parsed.success) {
    const message = parsed.error.issues[0]?.message ?? "is not a name";
    throw new ApiError(400, "invalid_request", `name: ${message}`, { issues: [{ path: "name", message }] });
  }
  return parsed.data;
}

export const credentialRoutes = new DeclaredRoutes();

credentialRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's model credentials (never their keys)",
    answers: { 200: json(CredentialList, "The credentials, by name") },
    errors: [401],
  },
  async (c) => c.json({ credentials: await user(c).credentials() }),
);

credentialRoutes.serve(
  {
    method: "put",
    path: "/:name",
    summary:
      "Store a model credential under a name, or replace its key (a rotation: turns naming it go on without conflict); the key is never answered",
    params: named,
    body: PutCredentialBody,
    answers: { 200: json(PutCredentialAnswer, "Stored (created: whether it is new)") },
    errors: [400, 401, 409, 410, 413, 415],
  },
  async (c, readBody) => {
    const name = nameOf(c);
    const body = await readBody(BODY_MAX_BYTES);
    return c.json(unwrapRpc(await user(c).putCredential(name, body, c.get("identity").issuedAt)));
  },
);

credentialRoutes.serve(
  {
    method: "delete",
    path: "/:name",
    summary: "Delete a model credential: a turn naming it is refused from now on",
    params: named,
    answers: { 200: json(DeletedAnswer, "Deleted") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const name = nameOf(c);
    if (!(await user(c).deleteCredential(name)))
      throw new ApiError(404, "credential_not_found", `no model credential named ${name}`);
    return c.json({ deleted: true as const });
  },
);

export const mcpServerRoutes = new DeclaredRoutes();

mcpServerRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's MCP servers (never their auth values)",
    answers: { 200: json(McpServerList, "The servers, by name") },
    errors: [401],
  },
  async (c) => c.json({ mcpServers: await user(c).mcpServers() }),
);

mcpServerRoutes.serve(
  {
    method: "put",
    path: "/:name",
    summary:
      "Store an MCP server under a name, or replace it; a turn enables it by naming it (mcpServers). Its auth value is never answered",
    params: named,
    body: PutMcpServerBody,
    answers: { 200: json(PutMcpServerAnswer, "Stored (created: whether it is new)") },
    errors: [400, 401, 409, 410, 413, 415, 422],
  },
  async (c, readBody) => {
    const name = nameOf(c);
    const body = await readBody(BODY_MAX_BYTES);
    const target = checkTarget(body.url, c.get("config").local);
    if (!target.ok) throw new ApiError(422, "mcp_server_url_refused", `url ${target.reason}`, { field: "url" });
    const stored = { ...body, url: target.url.href };
    return c.json(unwrapRpc(await user(c).putMcpServer(name, stored, c.get("identity").issuedAt)));
  },
);

mcpServerRoutes.serve(
  {
    method: "delete",
    path: "/:name",
    summary: "Delete an MCP server: a turn naming it is refused from now on",
    params: named,
    answers: { 200: json(DeletedAnswer, "Deleted") },
    errors: [400, 401, 404],
  },
  async (c) => {
    const name = nameOf(c);
    if (!(await user(c).deleteMcpServer(name)))
      throw new ApiError(404, "mcp_server_not_found", `no MCP server named ${name}`);
    return c.json({ deleted: true as const });
  },
);

export const instructionsRoutes = new DeclaredRoutes();

instructionsRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's standing instructions (appended to the agent's system prompt of every turn)",
    answers: { 200: json(InstructionsView, "The instructions (empty: none)") },
    errors: [401],
  },
  async (c) => c.json(await user(c).instructions()),
);

instructionsRoutes.serve(
  {
    method: "put",
    path: "/",
    summary: "Set the user's standing instructions (empty text removes them); turns sent from now on carry them",
    body: PutInstructionsBody,
    answers: { 200: json(InstructionsView, "Stored") },
    errors: [400, 401, 410, 413, 415],
  },
  async (c, readBody) => {
    const body = await readBody(BODY_MAX_BYTES);
    return c.json(unwrapRpc(await user(c).putInstructions(body.text, c.get("identity").issuedAt)));
  },
);

/**
 * A turn's named settings exist and may be used, checked before the turn is stored: a credential
 * or an MCP server the user does not have (or disabled) is a 400 naming it. Reads nothing when the
 * turn names none.
 */
export async function checkTurnSettings(
  c: Context<AppEnv>,
  request: { credential?: string; mcpServers?: string[] },
): Promise<void> {
  if (request.credential === undefined && !request.mcpServers?.length) return;
  unwrapRpc(await user(c).checkTurnSettings(request.credential, request.mcpServers));
}
