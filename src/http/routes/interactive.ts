/**
 * Interactive mode (docs/api.md#terminals, issue 41): a conversation's agent session opened in the
 * agent's own terminal UI, and given back to the chat. Mounted at `/v1/conversations`. The session
 * object holds the claim (src/session/interactive.ts); the terminal is a terminal of kind `agent`,
 * relayed as any other (./terminals.ts).
 */
import type { Context } from "hono";
import { z } from "zod";
import type { RpcResult } from "../../errors";
import { sha256Hex } from "../../lib/digest";
import { ConversationId } from "../../schemas/common";
import { OpenInteractiveRequest, TerminalOpenedSchema } from "../../schemas/terminals";
import type { InteractiveClaim } from "../../session/session";
import { type AppEnv, knownSession, userObject } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";
import { openTerminal, requireTerminals, terminalObject } from "./terminals";

const CAPABILITY = "interactiveAgent";

/** The terminal id of a conversation's agent UI: one per conversation, the same every time. */
async function agentTerminalId(conversationId: string): Promise<string> {
  return `agent-${(await sha256Hex(conversationId)).slice(0, 40)}`;
}

/** Lets go of the conversation's agent terminal, if the user has one: its socket closed, its row forgotten. */
export async function dropAgentTerminal(c: Context<AppEnv>, conversationId: string): Promise<void> {
  const terminalId = await agentTerminalId(conversationId);
  if (!(await userObject(c).terminal(terminalId))) return;
  await terminalObject(c, terminalId).close();
  await userObject(c).forgetTerminal(terminalId);
}

export const interactiveRoutes = new DeclaredRoutes();

interactiveRoutes.serve(
  {
    method: "post",
    path: "/:cid/interactive",
    summary:
      "Open the conversation's agent session in the agent's own terminal UI (interactive mode): no turn is sent while it holds the session",
    params: { cid: ConversationId },
    body: OpenInteractiveRequest,
    answers: {
      201: json(TerminalOpenedSchema, "The agent's terminal, attached, with its control generation"),
      200: json(TerminalOpenedSchema, "The agent's terminal, reattached"),
    },
    errors: [400, 401, 404, 409, 429, 501, 502, 503, 504],
  },
  async (c, readBody) => {
    const body = await readBody(4 * 1024);
    requireTerminals(c, CAPABILITY);
    const { stub, conversationId } = await knownSession(c);
    const terminalId = await agentTerminalId(conversationId);
    const geometry = { cols: body.cols ?? 80, rows: body.rows ?? 24 };
    // RPC typing drops the claim's shape; it is the session object's own.
    const claim = unwrapRpc(
      (await stub.startInteractive(conversationId, terminalId, geometry)) as unknown as RpcResult<InteractiveClaim>,
    );
    try {
      return await openTerminal(
        c,
        { terminalId, kind: "agent", conversationId, connectionId: claim.connectionId },
        geometry,
        { generation: claim.generation, environmentId: claim.environmentId },
      );
    } catch (err) {
      // No terminal, no interactive mode: the chat gets the session back.
      await stub.releaseInteractive(conversationId);
      throw err;
    }
  },
);

interactiveRoutes.serve(
  {
    method: "delete",
    path: "/:cid/interactive",
    summary: "Give the conversation's agent session back to the chat: the terminal UI is detached, not stopped",
    params: { cid: ConversationId },
    answers: {
      200: json(
        z.object({ status: z.enum(["released", "not_interactive"]) }).meta({ id: "InteractiveReleased" }),
        "released; not_interactive when no terminal UI held the session",
      ),
    },
    errors: [400, 401, 404],
  },
  async (c) => {
    const { stub, conversationId } = await knownSession(c);
    const claim = unwrapRpc(await stub.releaseInteractive(conversationId));
    await dropAgentTerminal(c, conversationId);
    return c.json({ status: claim ? ("released" as const) : ("not_interactive" as const) });
  },
);
