/**
 * A faithful local stand-in for one Tangle Sandbox deployment (docs/sandbox-wire.md), as a
 * Durable Object serving the same HTTP routes. The Tangle client reaches it through the same code
 * path as the real service, with this object's `fetch` in place of the network.
 *
 * The emulator is a peer of the client, not a part of it: it imports nothing of the client, the
 * project's schemas or its libraries, and reads the API from the doc on its own (wire.ts), so a
 * field the client puts in the wrong place is refused here.
 *
 * This class only wires the parts together:
 *   store.ts        SQLite state and typed accessors: the table stores (store-*.ts) composed
 *   sandboxes.ts    the sandbox lifecycle by the clock
 *   runner.ts       scripted runs advancing by the clock, asks, cancel
 *   streams.ts      live SSE streams (backlog + live, stream faults, burst batching)
 *   sandbox-api.ts  the Sandbox API: authentication, counting, injected failures; its routes by
 *                   group (api-*.ts, the route table in api-common.ts)
 *   control.ts      the /_emulator/* control routes
 *   holds.ts        the `[hold]` directive and its release route: a run held still for a test
 *   wire.ts         request/response shapes and the SSE writer
 *   variants.ts     the alternative wire shapes a control route switches on
 *   workspace.ts    each sandbox's files (seeded, changed by the agent's tool calls), served by
 *                   api-files.ts, snapshotted, compared and restored by api-snapshots.ts
 *   terminals.ts    the PTYs (in memory) behind the terminal sockets of api-terminals.ts: the
 *                   shell of shell.ts, or a session's TUI (tui.ts, its routes api-interactive.ts)
 * State lives in SQLite, so runs survive an eviction: the alarm picks the scripted agents up again.
 */
import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import { apiNotFound } from "./api-common";
import { registerTerminalControlRoutes } from "./api-terminals";
import { controlNotFound, registerControlRoutes } from "./control";
import { registerHoldRoutes } from "./holds";
import { Runner } from "./runner";
import { registerSandboxApi } from "./sandbox-api";
import { Sandboxes } from "./sandboxes";
import { EmulatorStore } from "./store";
import { StreamHub } from "./streams";
import { Terminals } from "./terminals";
import { Interactives } from "./tui";
import { Workspace } from "./workspace";

const DEFAULT_FRAME_DELAY_MS = 40;
const DEFAULT_PROVISION_MS = 300;

/** A non-negative number from the environment, or the default. */
function configuredMs(env: Env, name: string, fallback: number): number {
  const value = Number((env as unknown as Record<string, string | undefined>)[name]);
  return Number.isFinite(value) && value >= 0 ? value : fallback;
}

export class SandboxEmulator extends DurableObject<Env> {
  private readonly app: Hono;
  private readonly runner: Runner;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const store = new EmulatorStore(ctx.storage.sql);
    const streams = new StreamHub(store);
    const interactives = new Interactives();
    const terminals = new Terminals(
      store,
      () => {
        const ms = configuredMs(env, "EMULATOR_TERMINAL_DETACH_MS", -1);
        return ms < 0 ? undefined : ms;
      },
      (id) => interactives.sandboxEnded(id),
    );
    // A sandbox its limits ended: idle-stopped runs nothing; an expired one's runs die with it (no terminal frame).
    const ended = (id: string, status: "stopped" | "expired") => {
      terminals.sandboxEnded(id);
      if (status === "stopped") this.runner.sandboxStopped(id);
      else {
        for (const exe of store.runningExecutions(id))
          this.runner.finish(exe, "failed", { error: `sandbox ${status}` });
        this.runner.schedule();
      }
    };
    const sandboxes = new Sandboxes(
      store,
      () => configuredMs(env, "EMULATOR_PROVISION_MS", DEFAULT_PROVISION_MS),
      ended,
    );
    this.runner = new Runner({
      store,
      streams,
      frameDelayMs: () => configuredMs(env, "EMULATOR_FRAME_DELAY_MS", DEFAULT_FRAME_DELAY_MS),
      setAlarm: (at) => {
        ctx.storage.setAlarm(at).catch(() => {
          // The object is shutting down; its constructor re-arms the runs when it next wakes.
        });
      },
    });

    const workspace = new Workspace(store);
    const app = new Hono();
    registerControlRoutes(app, { store, runner: this.runner, streams, workspace, terminals, interactives });
    registerTerminalControlRoutes(app, { store, terminals });
    registerHoldRoutes(app, { store, runner: this.runner });
    registerSandboxApi(app, { store, sandboxes, runner: this.runner, streams, workspace, terminals, interactives });
    app.notFound((c) => (c.req.path.startsWith("/v1/") ? apiNotFound(store, c) : controlNotFound(c)));
    this.app = app;

    // After an eviction, resume any run that was in flight.
    ctx.blockConcurrencyWhile(async () => this.runner.schedule());
  }

  override async fetch(request: Request): Promise<Response> {
    return this.app.fetch(request);
  }

  override async alarm(): Promise<void> {
    this.runner.alarmFired();
    this.runner.tick();
  }
}
