/**
 * The routes by resource: each sub-app with the prefix it is mounted at, and the prefixes whose
 * routes need a user's token. src/worker.ts mounts these and applies `authenticate` to those
 * prefixes; src/http/openapi.ts documents the same declarations, with `security` on the same
 * prefixes.
 */
import type { DeclaredRoutes } from "../route-declaration";
import { credentialRoutes, instructionsRoutes, mcpServerRoutes } from "./agent-settings";
import { agentRoutes } from "./agents";
import { attachmentRoutes } from "./attachments";
import { chatRoutes } from "./chat";
import { conversationRoutes } from "./conversations";
import { devRoutes } from "./dev";
import { accountRoutes, environmentRoutes } from "./environment";
import { interactionRoutes } from "./interactions";
import { interactiveRoutes } from "./interactive";
import { serviceRoutes } from "./service";
import { streamRoutes } from "./streams";
import { terminalRoutes } from "./terminals";
import { undoRoutes } from "./undo";
import { webhookRoutes } from "./webhooks";
import { workspaceRoutes } from "./workspace";

export interface Mount {
  readonly prefix: string;
  readonly routes: DeclaredRoutes;
}

export const MOUNTS: readonly Mount[] = [
  { prefix: "/", routes: serviceRoutes },
  // Local development only (dev login, the emulator, probes): 404 elsewhere.
  { prefix: "/", routes: devRoutes },
  { prefix: "/v1/conversations", routes: conversationRoutes },
  { prefix: "/v1/conversations", routes: interactionRoutes },
  { prefix: "/v1/conversations", routes: streamRoutes },
  // A turn's file changes undone and redone (docs/api.md#a-turns-changes-undo-and-redo).
  { prefix: "/v1/conversations", routes: undoRoutes },
  // Files attached to a conversation, written into the workspace (docs/api.md#attachments).
  { prefix: "/v1/conversations", routes: attachmentRoutes },
  // Interactive mode: the agent's own terminal UI (docs/api.md#terminals).
  { prefix: "/v1/conversations", routes: interactiveRoutes },
  // The AI SDK's UI message stream protocol over the same conversations.
  { prefix: "/v1/chat", routes: chatRoutes },
  // What the deployment can run (docs/api.md#choosing-the-agent).
  { prefix: "/v1/agents", routes: agentRoutes },
  // The user's agent settings: model keys, MCP servers, standing instructions.
  { prefix: "/v1/credentials", routes: credentialRoutes },
  { prefix: "/v1/mcp-servers", routes: mcpServerRoutes },
  { prefix: "/v1/instructions", routes: instructionsRoutes },
  // The user's sandbox and account (docs/api.md#the-sandboxs-life).
  { prefix: "/v1/environment", routes: environmentRoutes },
  // The workspace's files (docs/api.md#the-workspace).
  { prefix: "/v1/environment/files", routes: workspaceRoutes },
  // The user's terminals and their sockets (docs/api.md#terminals).
  { prefix: "/v1/environment/terminals", routes: terminalRoutes },
  { prefix: "/v1/me", routes: accountRoutes },
  // The user's webhook endpoints and their delivery logs.
  { prefix: "/v1/webhooks", routes: webhookRoutes },
];

/** Every route at or under these needs `Authorization: Bearer <user token>` (or, on an events route, a stream token). */
export const AUTHENTICATED_PREFIXES = [
  "/v1/agents",
  "/v1/credentials",
  "/v1/mcp-servers",
  "/v1/instructions",
  "/v1/conversations",
  "/v1/chat",
  "/v1/environment",
  "/v1/me",
  "/v1/webhooks",
] as const;
