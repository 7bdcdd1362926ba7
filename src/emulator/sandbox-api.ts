/**
 * The Sandbox HTTP API of docs/sandbox-wire.md §2–3, as the emulator serves it: the control plane
 * (`/v1/sandboxes…`) and the runtime proxy (`/v1/sandboxes/{id}/runtime…`). Every call is
 * authenticated, counted by route, and subject to injected failures (`failNext`): that middleware
 * is here, with the route groups registered behind it. The route table and what the routes share
 * are ./api-common.ts; each group's handlers one file (./api-control-plane.ts,
 * ./api-capabilities.ts, ./api-runs.ts, ./api-sessions.ts, ./api-interactions.ts, ./api-files.ts,
 * ./api-snapshots.ts, ./api-terminals.ts); what a route
 * does beyond shaping its answer lives in ./runner.ts, ./sandboxes.ts and ./asks.ts.
 */
import type { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { registerCapabilityRoute } from "./api-capabilities";
import { API_PATHS, apiKit, type SandboxApiDeps } from "./api-common";
import { registerControlPlaneRoutes } from "./api-control-plane";
import { registerFileRoutes } from "./api-files";
import { registerInteractionRoutes } from "./api-interactions";
import { registerInteractiveRoutes } from "./api-interactive";
import { registerRunRoutes } from "./api-runs";
import { registerSessionRoutes } from "./api-sessions";
import { registerSnapshotRoutes } from "./api-snapshots";
import { registerTerminalRoutes } from "./api-terminals";

/** A stable name for a route, for counters (`requests.<key>`) and targeted fault injection. */
function routeKey(method: string, path: string): string {
  if (path === API_PATHS.accountUsage) return "account.usage";
  if (path === API_PATHS.backends) return "backends.list";
  const terminal = path.match(/^\/v1\/sidecar-proxy\/[^/]+\/terminals\/[^/]+(\/ws)?$/);
  if (terminal) return terminal[1] ? "terminals.socket" : "terminals.get";
  const p = path.replace(/^\/v1\/sandboxes/, "");
  if (p === "" || p === "/") return method === "POST" ? "sandboxes.create" : "sandboxes.list";
  const runtime = p.match(/^\/[^/]+\/runtime(\/.*)$/);
  if (!runtime) {
    const action = p.match(/^\/[^/]+\/(resume|stop)$/);
    if (action) return `sandboxes.${action[1]}`;
    if (/^\/[^/]+\/snapshot$/.test(p)) return "snapshots.create";
    if (/^\/[^/]+\/snapshots$/.test(p)) return "snapshots.list";
    const snap = p.match(/^\/[^/]+\/snapshots\/[^/]+(?:\/(diff|restore))?$/);
    if (snap) return `snapshots.${snap[1] ?? "delete"}`;
    return method === "DELETE" ? "sandboxes.delete" : "sandboxes.get";
  }
  const rest = runtime[1]!;
  if (rest === "/capabilities") return "runtime.capabilities";
  if (rest === "/agents/run/stream") return "runtime.run";
  if (rest === "/agents/sessions") return "runtime.sessions.list";
  if (rest === "/files/read") return "runtime.files.read";
  if (rest.startsWith("/terminals/")) return "runtime.terminals";
  const fs = rest.match(/^\/fs\/(list|stat|download-dir|download|upload)(?:\/|$)/);
  if (fs) return `runtime.fs.${fs[1] === "download-dir" ? "downloadDir" : fs[1]}`;
  const tui = rest.match(/^\/agents\/sessions\/[^/]+\/interactive(?:\/(control|stop))?$/);
  if (tui) return `runtime.interactive.${tui[1] ?? (method === "POST" ? "start" : "status")}`;
  const m = rest.match(/^\/agents\/sessions\/[^/]+(?:\/(abort|fork|interactions|plan|turns|executions))?/);
  if (m)
    return m[1] ? `runtime.session.${m[1]}` : method === "DELETE" ? "runtime.session.delete" : "runtime.session.get";
  return "runtime.other";
}

export function registerSandboxApi(app: Hono, deps: SandboxApiDeps): void {
  const api = apiKit(deps);
  const { store, fail } = api;

  // Authentication, counting and injected failures, for every Sandbox API call.
  app.use("/v1/*", async (c, next) => {
    const auth = c.req.header("authorization") ?? "";
    if (!/^Bearer \S+$/.test(auth)) return fail(c, 401, "UNAUTHORIZED", "missing or malformed bearer token");
    const route = routeKey(c.req.method, c.req.path);
    store.count(`requests.${route}`);
    const faults = store.faults();
    const failNext = faults.failNext;
    if (failNext && failNext.count > 0 && (!failNext.route || route.startsWith(failNext.route))) {
      store.setFaults({
        ...faults,
        failNext: failNext.count > 1 ? { ...failNext, count: failNext.count - 1 } : undefined,
      });
      store.count("faults.injected");
      const headers: Record<string, string> = {};
      if (failNext.retryAfterSeconds !== undefined) headers["retry-after"] = String(failNext.retryAfterSeconds);
      if (failNext.nonJson)
        return c.html(
          "<html><body><h1>502 Bad Gateway</h1></body></html>",
          failNext.status as ContentfulStatusCode,
          headers,
        );
      return fail(c, failNext.status, "INJECTED_FAILURE", `injected ${failNext.status}`, undefined, headers);
    }
    await next();
  });

  // §2 the control plane, then §3 the runtime proxy, a group of routes at a time.
  registerControlPlaneRoutes(app, api);
  registerCapabilityRoute(app, api);
  registerRunRoutes(app, api);
  registerSessionRoutes(app, api);
  registerInteractionRoutes(app, api);
  // §10 the workspace: its files after /runtime, its snapshots on the control plane.
  registerFileRoutes(app, api);
  registerSnapshotRoutes(app, api);
  // §12 the terminal, under the sidecar proxy.
  registerTerminalRoutes(app, api);
  registerInteractiveRoutes(app, api);
}
