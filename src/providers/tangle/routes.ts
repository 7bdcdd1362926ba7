/**
 * Every Sandbox route this client calls, in one table (docs/sandbox-wire.md). Routes tagged [ours]
 * there are this project's reading of the service; correct them here and nowhere else.
 */
import type { Route } from "../http";

const enc = encodeURIComponent;
/** An absolute path, each segment percent-encoded (a name may hold `?`, `#` or `%`). */
const encPath = (abs: string) => abs.split("/").map(enc).join("/");
const runtime = (sandboxId: string, path: string) => `/v1/sandboxes/${enc(sandboxId)}/runtime${path}`;

const sidecar = (sandboxId: string, path: string) => `/v1/sidecar-proxy/${enc(sandboxId)}${path}`;

export const sandboxRoutes = {
  // The terminal (docs/sandbox-wire.md §11, §12): the socket's path [wire], under the sidecar proxy, not /runtime
  // (measured: 500 there); the metadata route [ours] on that base.
  terminalSocket: (id: string, connectionId: string): Route => ({
    method: "GET",
    path: sidecar(id, `/terminals/${enc(connectionId)}/ws`),
  }),
  terminalMetadata: (id: string, sessionId: string): Route => ({
    method: "GET",
    path: sidecar(id, `/terminals/${enc(sessionId)}`),
  }),
  // Control plane [wire]
  createSandbox: (): Route => ({ method: "POST", path: "/v1/sandboxes" }),
  getSandbox: (id: string): Route => ({ method: "GET", path: `/v1/sandboxes/${enc(id)}` }),
  resumeSandbox: (id: string): Route => ({ method: "POST", path: `/v1/sandboxes/${enc(id)}/resume` }),
  stopSandbox: (id: string): Route => ({ method: "POST", path: `/v1/sandboxes/${enc(id)}/stop` }),
  deleteSandbox: (id: string): Route => ({ method: "DELETE", path: `/v1/sandboxes/${enc(id)}` }),
  // [ours] (the provider's backend catalog, `getBackend()` [sdk]; docs/sandbox-wire.md §2)
  backends: (): Route => ({ method: "GET", path: "/v1/backends" }),
  // [ours] (SDK `client.usage()` [sdk]; docs/sandbox-wire.md §2)
  accountUsage: (): Route => ({ method: "GET", path: "/v1/account/usage" }),
  // Checkpoints (docs/sandbox-wire.md §10): the snapshot and its list [wire]; compare, restore and delete [ours]
  snapshot: (id: string): Route => ({ method: "POST", path: `/v1/sandboxes/${enc(id)}/snapshot` }),
  snapshotDiff: (id: string, snapshotId: string): Route => ({
    method: "GET",
    path: `/v1/sandboxes/${enc(id)}/snapshots/${enc(snapshotId)}/diff`,
  }),
  snapshotRestore: (id: string, snapshotId: string): Route => ({
    method: "POST",
    path: `/v1/sandboxes/${enc(id)}/snapshots/${enc(snapshotId)}/restore`,
  }),
  snapshotDelete: (id: string, snapshotId: string): Route => ({
    method: "DELETE",
    path: `/v1/sandboxes/${enc(id)}/snapshots/${enc(snapshotId)}`,
  }),
  // Runtime proxy [wire]
  capabilities: (id: string): Route => ({ method: "GET", path: runtime(id, "/capabilities") }),
  runStream: (id: string): Route => ({ method: "POST", path: runtime(id, "/agents/run/stream") }),
  sessionState: (id: string, sessionId: string): Route => ({
    method: "GET",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}`),
  }),
  abort: (id: string, sessionId: string): Route => ({
    method: "POST",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/abort`),
  }),
  listInteractions: (id: string, sessionId: string): Route => ({
    method: "GET",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/interactions`),
  }),
  answerInteraction: (id: string, sessionId: string): Route => ({
    method: "POST",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/interactions`),
  }),
  // [ours] (SDK approvePlan / rejectPlan)
  planDecision: (id: string, sessionId: string, decision: "approve" | "reject"): Route => ({
    method: "POST",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/plan/${decision}`),
  }),
  // [ours]
  executionResult: (id: string, sessionId: string, executionId: string): Route => ({
    method: "GET",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/executions/${enc(executionId)}/result`),
  }),
  // The agent's own TUI [ours] (SDK `session(id).interactive()` [sdk]; docs/sandbox-wire.md §12)
  interactive: (id: string, sessionId: string, action: "" | "/control" | "/stop", method: "GET" | "POST"): Route => ({
    method,
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/interactive${action}`),
  }),
  // [ours] (SDK `session(id).fork({ messageId })`; docs/sandbox-wire.md §3)
  forkSession: (id: string, sessionId: string): Route => ({
    method: "POST",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}/fork`),
  }),
  deleteSession: (id: string, sessionId: string): Route => ({
    method: "DELETE",
    path: runtime(id, `/agents/sessions/${enc(sessionId)}`),
  }),
  // The workspace's files [wire] (docs/sandbox-wire.md §10): `abs` is an absolute path in the sandbox,
  // appended after the route as the 0.1 SDK does, each segment percent-encoded.
  listFiles: (id: string, abs: string): Route => ({ method: "GET", path: runtime(id, `/fs/list${encPath(abs)}`) }),
  statFile: (id: string, abs: string): Route => ({ method: "GET", path: runtime(id, `/fs/stat${encPath(abs)}`) }),
  downloadFile: (id: string, abs: string): Route => ({
    method: "GET",
    path: runtime(id, `/fs/download${encPath(abs)}`),
  }),
  downloadDir: (id: string, abs: string): Route => ({
    method: "GET",
    path: runtime(id, `/fs/download-dir${encPath(abs)}`),
  }),
  uploadFile: (id: string): Route => ({ method: "POST", path: runtime(id, "/fs/upload") }),
} as const;
