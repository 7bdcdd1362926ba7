/**
 * The user's terminals (docs/api.md#terminals, issue 41): opened or reattached, listed, read,
 * closed, and each one's WebSocket. Mounted at `/v1/environment/terminals`, authenticated by the
 * app (the socket by a terminal token: ../app-context.ts). The user object keeps which terminals a
 * user has (src/user/terminals.ts); one terminal object per terminal relays it (src/terminal/).
 */
import type { Context } from "hono";
import { z } from "zod";
import { signToken } from "../../auth/tokens";
import { ApiError, type RpcResult } from "../../errors";
import { PROTOCOL_HEADER, SPEC_HEADER } from "../../lib/terminal-wire";
import { createProvider } from "../../providers";
import {
  OpenTerminalRequest,
  SinceQuery,
  TerminalClosedSchema,
  TerminalId,
  TerminalListSchema,
  TerminalOpenedSchema,
  TerminalRefSchema,
} from "../../schemas/terminals";
import type { TerminalRef, TerminalSpec } from "../../terminal/terminal";
import type { TerminalRow } from "../../user/user";
import { type AppEnv, subprotocolToken, userObject } from "../app-context";
import { invalid } from "../body";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json, noContent } from "../route-declaration";

const CAPABILITY = "interactiveTerminal";

/** Refused where this deployment offers no terminals: 501 naming the capability. */
export function requireTerminals(c: Context<AppEnv>, capability = CAPABILITY): void {
  const config = c.get("config");
  const why =
    config.TERMINAL_MAX_PER_USER === 0
      ? "this deployment offers no terminals (TERMINAL_MAX_PER_USER is 0)"
      : !createProvider(config, c.env).terminals
        ? `this deployment's provider (${config.provider}) has no terminals to offer`
        : !config.AUTH_JWT_SECRET
          ? "terminal tokens need AUTH_JWT_SECRET to sign them"
          : null;
  if (why) throw new ApiError(501, "capability_denied", why, { missing: [capability] });
}

export function terminalObject(c: Context<AppEnv>, terminalId: string) {
  return c.env.TERMINALS.get(c.env.TERMINALS.idFromName(`${c.get("identity").ownerKey}/${terminalId}`));
}

function specOf(row: TerminalRow): TerminalSpec {
  return {
    terminalId: row.terminalId,
    kind: row.kind,
    ...(row.conversationId ? { conversationId: row.conversationId } : {}),
    environmentId: row.environmentId,
    connectionId: row.connectionId,
    ...(row.generation !== null ? { generation: row.generation } : {}),
  };
}

function terminalIdOf(c: Context<AppEnv>): string {
  const id = TerminalId.safeParse(c.req.param("tid"));
  if (!id.success) throw invalid("terminal id", id.error);
  return id.data;
}

async function rowOf(c: Context<AppEnv>, terminalId: string): Promise<TerminalRow> {
  const row = await userObject(c).terminal(terminalId);
  if (!row) throw new ApiError(404, "terminal_not_found", `no terminal ${terminalId}`);
  return row;
}

/**
 * Forgets the user's terminals the gateway no longer holds (nor is opening) whose PTY the sandbox has
 * ended: past their detach window as last proven. One never proven is kept (listed: the user may delete it).
 */
async function pruneEnded(c: Context<AppEnv>): Promise<void> {
  const rows = await userObject(c).terminalList();
  const now = Date.now();
  for (const row of rows) {
    const live = await terminalObject(c, row.terminalId).liveness();
    if (!live.held && live.expiresAt !== null && live.expiresAt <= now)
      await userObject(c).forgetTerminal(row.terminalId);
  }
}

/** A socket token for the terminal, and its path. */
async function socketToken(c: Context<AppEnv>, terminalId: string) {
  const config = c.get("config");
  const ttl = config.STREAM_TOKEN_TTL_SECONDS;
  const token = await signToken(config, { sub: c.get("identity").userId, use: "terminal", tid: terminalId }, ttl);
  const url = `/v1/environment/terminals/${terminalId}/ws?access_token=${token}`;
  return { token, expiresIn: ttl, url };
}

/**
 * Registers the terminal (or finds it; the user's bound pruned of ended terminals once when full),
 * attaches it, and answers it with a socket token. A terminal registered here whose attach failed is forgotten.
 */
export async function openTerminal(
  c: Context<AppEnv>,
  wanted: { terminalId: string; kind: "shell" | "agent"; conversationId: string | null; connectionId: string },
  geometry: { cols: number; rows: number },
  extra: { generation?: number; environmentId?: string } = {},
): Promise<Response> {
  const config = c.get("config");
  const { environmentId, generation } = extra;
  const open = (): Promise<RpcResult<{ terminal: TerminalRow; created: boolean }>> =>
    userObject(c).openTerminal(
      c.get("identity").ownerKey,
      { ...wanted, generation: generation ?? null },
      config.TERMINAL_MAX_PER_USER,
      environmentId,
    ) as never;
  let opened = await open();
  if (!opened.ok && opened.refusal.code === "terminal_limit_reached") {
    await pruneEnded(c);
    opened = await open();
  }
  const { terminal, created } = unwrapRpc(opened);
  const spec = specOf(terminal);
  // RPC typing loses the result's union; the shape is the terminal object's own.
  const attached = (await terminalObject(c, terminal.terminalId).attach(spec, geometry)) as unknown as RpcResult<{
    status: "attached" | "reattached";
    terminal: TerminalRef;
  }>;
  if (!attached.ok && created) await userObject(c).forgetTerminal(terminal.terminalId);
  const value = unwrapRpc(attached);
  const answer = {
    ...value,
    ...(await socketToken(c, terminal.terminalId)),
    ...(generation !== undefined ? { generation } : {}),
  };
  return c.json(answer, value.status === "attached" ? 201 : 200);
}

export const terminalRoutes = new DeclaredRoutes();

terminalRoutes.serve(
  {
    method: "post",
    path: "/",
    summary:
      "Open a terminal in the user's sandbox, or reattach one by its id: answers it with a short-lived token for its socket",
    body: OpenTerminalRequest,
    answers: {
      201: json(TerminalOpenedSchema, "A new terminal, attached"),
      200: json(TerminalOpenedSchema, "The terminal, reattached (its screen kept by the sandbox)"),
    },
    errors: [400, 401, 404, 409, 429, 501, 502, 503, 504],
  },
  async (c, readBody) => {
    const body = await readBody(4 * 1024);
    if (body.mode === "logical")
      throw new ApiError(
        400,
        "logical_resume_unsupported",
        'mode "logical" is refused: the Sandbox keeps no logical terminal to resume; attach with mode "attach"',
      );
    requireTerminals(c);
    return openTerminal(
      c,
      {
        terminalId: body.terminalId ?? crypto.randomUUID(),
        kind: "shell",
        conversationId: null,
        connectionId: `acg-${crypto.randomUUID()}`,
      },
      { cols: body.cols ?? 80, rows: body.rows ?? 24 },
    );
  },
);

terminalRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's terminals",
    answers: { 200: json(TerminalListSchema, "Each terminal as its ref") },
    errors: [401, 501],
  },
  async (c) => {
    requireTerminals(c);
    await pruneEnded(c);
    const rows = await userObject(c).terminalList();
    const terminals: TerminalRef[] = [];
    for (const row of rows) terminals.push(await terminalObject(c, row.terminalId).ref(specOf(row)));
    return c.json({ terminals });
  },
);

terminalRoutes.serve(
  {
    method: "get",
    path: "/:tid",
    summary: "A terminal: its metadata, expiry, running state and cursors",
    params: { tid: TerminalId },
    answers: { 200: json(TerminalRefSchema, "The terminal") },
    errors: [400, 401, 404, 501],
  },
  async (c) => {
    requireTerminals(c);
    const row = await rowOf(c, terminalIdOf(c));
    return c.json(await terminalObject(c, row.terminalId).ref(specOf(row)));
  },
);

terminalRoutes.serve(
  {
    method: "delete",
    path: "/:tid",
    summary:
      "Close a terminal: the gateway lets go of it and forgets it; closed only when its exit was delivered, else unknown",
    params: { tid: TerminalId },
    answers: { 200: json(TerminalClosedSchema, "What is known of its end") },
    errors: [400, 401, 404, 501],
  },
  async (c) => {
    requireTerminals(c);
    const row = await rowOf(c, terminalIdOf(c));
    const answer = await terminalObject(c, row.terminalId).close();
    await userObject(c).forgetTerminal(row.terminalId);
    return c.json(answer);
  },
);

terminalRoutes.serve(
  {
    method: "get",
    path: "/:tid/ws",
    summary:
      "The terminal's WebSocket (Upgrade: websocket), with the terminal token as ?access_token=: frames as docs/api.md#terminals says",
    params: { tid: TerminalId },
    query: {
      since: SinceQuery.optional(),
      access_token: z
        .string()
        .optional()
        .describe(
          "The terminal token POST /v1/environment/terminals answered; or offer it as the subprotocol `bearer.<base64url token>` (echoed on the 101)",
        ),
    },
    answers: { 101: noContent("Switching protocols: the terminal's frames") },
    errors: [400, 401, 404, 426, 501],
  },
  async (c) => {
    requireTerminals(c);
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
      throw new ApiError(426, "upgrade_required", "this route is a WebSocket: send Upgrade: websocket");
    const since = c.req.query("since");
    if (since !== undefined && !SinceQuery.safeParse(since).success)
      throw new ApiError(400, "invalid_request", "since must be a non-negative whole number (an output seq)");
    const row = await rowOf(c, terminalIdOf(c));
    const target = new URL(`https://terminal/${encodeURIComponent(row.terminalId)}`);
    if (since !== undefined) target.searchParams.set("since", since);
    // A token offered as a subprotocol is echoed on the 101, as a WebSocket client requires.
    const offered =
      c.req.query("access_token") === undefined && subprotocolToken(c.req.header("sec-websocket-protocol"));
    const headers: Record<string, string> = { upgrade: "websocket", [SPEC_HEADER]: JSON.stringify(specOf(row)) };
    if (offered) headers[PROTOCOL_HEADER] = offered.protocol;
    return terminalObject(c, row.terminalId).fetch(new Request(target, { headers }));
  },
);
