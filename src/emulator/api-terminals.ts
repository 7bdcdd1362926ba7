/**
 * §12 the terminal's routes under the sidecar proxy (docs/sandbox-wire.md): the socket
 * (`…/terminals/{connectionId}/ws`, a WebSocket onto a PTY of ./terminals.ts running the shell of
 * ./shell.ts) and a PTY's metadata (`…/terminals/{sessionId}`); the same paths under `/runtime`
 * answer 500, as measured. Variant `terminalRoutes: "missing"`: every one 404 `NOT_FOUND`. Also the
 * control routes a test reads and ends PTYs with (`/_emulator/sandboxes/{id}/terminals…`).
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { API_PATHS, type ApiKit, apiNotFound } from "./api-common";
import { Shell } from "./shell";
import type { EmulatorStore } from "./store";
import { shellProgram, type Terminals } from "./terminals";
import { TuiProgram } from "./tui";
import type { Workspace } from "./workspace";

const ConnectionId = z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, "connectionId is [A-Za-z0-9._-]{1,128}");
const Size = z.coerce.number().int().min(1).max(1000);
const SocketQuery = z.object({
  cols: Size.default(80),
  rows: Size.default(24),
  generation: z.coerce.number().int().nonnegative().optional(),
});

/** The socket's query: its size and (the TUI's) generation; a 400 answer when it is not valid. */
function socketQuery(api: ApiKit, c: Context): z.infer<typeof SocketQuery> | Response {
  const parsed = SocketQuery.safeParse(c.req.query());
  return parsed.success ? parsed.data : api.invalid(c, "VALIDATION_ERROR", parsed.error);
}

/** The checks before a socket's upgrade, in order: the routes served, the sandbox running, the id, an upgrade. */
function socketCheck(api: ApiKit, c: Context): { sandboxId: string; connectionId: string } | Response {
  if (api.variants().terminalRoutes === "missing") return apiNotFound(api.store, c);
  const sb = api.runningSandbox(c);
  if (sb instanceof Response) return sb;
  const id = ConnectionId.safeParse(c.req.param("cid"));
  if (!id.success) return api.invalid(c, "VALIDATION_ERROR", id.error);
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
    return api.fail(c, 426, "UPGRADE_REQUIRED", "the terminal is a WebSocket: send Upgrade: websocket");
  return { sandboxId: sb.id, connectionId: id.data };
}

/** The workspace as the shell reads it. */
function shellFiles(workspace: Workspace, sandboxId: string) {
  return {
    list(rel: string) {
      if (!workspace.node(sandboxId, rel)?.isDir) return undefined;
      return workspace.children(sandboxId, rel).map((n) => (n.isDir ? `${n.name}/` : n.name));
    },
    read: (rel: string) => workspace.read(sandboxId, rel),
  };
}

export function registerTerminalRoutes(app: Hono, api: ApiKit): void {
  const { store, terminals, interactives, workspace, variants, fail, runningSandbox } = api;

  app.get(API_PATHS.terminalSocket, (c) => {
    const target = socketCheck(api, c);
    if (target instanceof Response) return target;
    const query = socketQuery(api, c);
    if (query instanceof Response) return query;
    // A session's TUI (./api-interactive.ts) has its own connection id; any other starts a shell.
    const tui = interactives.byConnection(target.sandboxId, target.connectionId);
    return terminals.open({
      ...target,
      cols: query.cols,
      rows: query.rows,
      generation: query.generation,
      program: () =>
        tui
          ? new TuiProgram(api, tui, (reason, code) => interactives.end(tui, reason, code))
          : shellProgram(new Shell(shellFiles(workspace, target.sandboxId), query)),
    });
  });

  app.get(API_PATHS.terminal, (c) => {
    if (variants().terminalRoutes === "missing") return apiNotFound(store, c);
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const data = terminals.metadata(sb.id, c.req.param("tid"));
    if (!data) return fail(c, 404, "TERMINAL_NOT_FOUND", "no terminal session with that id");
    return c.json({ success: true, data });
  });

  // Not through the runtime proxy: measured, a 500.
  app.all(API_PATHS.runtimeTerminals, (c) =>
    fail(c, 500, "INTERNAL", "terminals are served under /v1/sidecar-proxy/{sandboxId}/terminals"),
  );
}

/** The control routes of the terminals: list a sandbox's PTYs; end its detached ones now. */
export function registerTerminalControlRoutes(app: Hono, deps: { store: EmulatorStore; terminals: Terminals }): void {
  const { store, terminals } = deps;
  const known = (c: Context) =>
    store.sandbox(c.req.param("id") ?? "")
      ? undefined
      : c.json({ error: { code: "SANDBOX_NOT_FOUND", message: "no such sandbox" } }, 404);
  app.get("/_emulator/sandboxes/:id/terminals", (c) => {
    return known(c) ?? c.json({ terminals: terminals.list(c.req.param("id")) });
  });
  app.post("/_emulator/sandboxes/:id/terminals/expire", (c) => {
    return known(c) ?? c.json({ expired: terminals.expireDetached(c.req.param("id")) });
  });
}
