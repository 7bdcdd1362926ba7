/**
 * The user's sandbox and account (docs/api.md#the-sandboxs-life): the sandbox as the provider
 * reports it, stopping and deleting it, and deleting the account. Mounted at `/v1/environment`
 * and `/v1/me`, authenticated by the app (whose account gate refuses every other route of an
 * account being deleted). Each route declared once (../route-declaration.ts).
 */

import type { Context } from "hono";
import {
  AccountAnswer,
  AccountDeletion,
  EnvironmentAnswer,
  EnvironmentDeleteAnswer,
  EnvironmentStopAnswer,
} from "../../schemas/environment";
import { type AppEnv, userObject } from "../app-context";
import { unwrapRpc } from "../errors";
import { DeclaredRoutes, json } from "../route-declaration";

const userOf = userObject;

export const environmentRoutes = new DeclaredRoutes();

environmentRoutes.serve(
  {
    method: "get",
    path: "/",
    summary:
      "The user's sandbox as the provider reports it (each value reported or unavailable), and what the gateway did to it",
    answers: { 200: json(EnvironmentAnswer, "The environment") },
    errors: [401, 409, 410],
  },
  async (c) => c.json(unwrapRpc(await userOf(c).environmentView())),
);

environmentRoutes.serve(
  {
    method: "post",
    path: "/stop",
    summary:
      "Stop the user's sandbox now; the next turn resumes it (the agent's memory kept). A running turn ends failed environment_lost",
    answers: { 200: json(EnvironmentStopAnswer, "Stopped") },
    errors: [401, 404, 409, 410, 501, 502, 503],
  },
  async (c) => c.json(unwrapRpc(await userOf(c).stopEnvironment())),
);

environmentRoutes.serve(
  {
    method: "delete",
    path: "/",
    summary: "Delete the user's sandbox upstream and here; the next turn creates another and says agent_memory_reset",
    answers: { 200: json(EnvironmentDeleteAnswer, "Deleted (or there was none)") },
    errors: [401, 409, 410, 501, 502, 503],
  },
  async (c) => c.json(unwrapRpc(await userOf(c).deleteEnvironment())),
);

export const accountRoutes = new DeclaredRoutes();

const issuedAt = (c: Context<AppEnv>) => c.get("identity").issuedAt;

accountRoutes.serve(
  {
    method: "get",
    path: "/",
    summary: "The user's account: its deletion, if one began",
    answers: { 200: json(AccountAnswer, "The account") },
    errors: [401],
  },
  async (c) => c.json(await userOf(c).account(issuedAt(c))),
);

accountRoutes.serve(
  {
    method: "delete",
    path: "/",
    summary:
      "Delete the account: every conversation upstream and here, the sandbox, the webhooks and the index (docs/api.md#deleting-an-account); call again to resume one cut short",
    answers: {
      200: json(AccountDeletion, "Deleted"),
      202: json(
        AccountDeletion,
        "Begun and cut short (lastError says why): nothing of the account is readable; the alarm or another call resumes it",
      ),
    },
    errors: [401],
  },
  async (c) => {
    const { userId } = c.get("identity");
    const deletion = await userOf(c).deleteAccount(userId, issuedAt(c));
    return c.json(deletion, deletion.state === "deleted" ? 200 : 202);
  },
);
