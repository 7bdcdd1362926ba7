/**
 * The limits a sandbox is created with, kept by the emulator's lifecycle clock (./sandboxes.ts):
 * an expired sandbox (its runs dying with it), an idle one stopped, a run in flight keeping it
 * busy, activity counted from runtime calls; each sandbox's clock moved ahead by the control route.
 */
import { describe, expect, it } from "vitest";
import { dispatch, type Emu, emulator, json, runtime } from "./test-support";
import { SandboxView } from "./wire";

async function sandboxWith(emu: Emu, limits: Record<string, unknown>): Promise<string> {
  const created = await emu.api("POST", "/v1/sandboxes", { name: "test", ...limits });
  expect(created.status).toBe(201);
  const { id } = SandboxView.parse(await json(created));
  for (let i = 0; i < 500; i++) {
    if ((await read(emu, id)).status === "running") return id;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("the sandbox did not come up");
}

const read = async (emu: Emu, id: string) => SandboxView.parse(await json(await emu.api("GET", `/v1/sandboxes/${id}`)));
const advance = (emu: Emu, id: string, advanceSeconds: number) =>
  emu.control(`/_emulator/sandboxes/${id}/clock`, { advanceSeconds });

describe("the emulator keeps a sandbox's limits", () => {
  it("a sandbox past its lifetime is expired, whatever it was doing, and its runs die with it", async () => {
    const emu = emulator("lifetime");
    const id = await sandboxWith(emu, { maxLifetimeSeconds: 3600 });
    const run = await dispatch(emu, id, { executionId: "exe-l1", message: "a long job [slow] [long]" });
    await run.body?.cancel();
    expect((await advance(emu, id, 3599)).status).toBe(200);
    expect((await read(emu, id)).status).toBe("running");
    await advance(emu, id, 1);
    expect((await read(emu, id)).status).toBe("expired");
    expect((await json(await emu.control("/_emulator/executions/exe-l1"))).status).toBe("failed");
    const resume = await emu.api("POST", `/v1/sandboxes/${id}/resume`);
    expect(resume.status).toBe(409);
    expect((await json(await emu.control("/_emulator/counters"))).counters["sandboxes.expired"]).toBe(1);
  });

  it("a running sandbox unused for its idle timeout is stopped; a run in flight keeps it busy; a runtime call is use", async () => {
    const emu = emulator("idle");
    const id = await sandboxWith(emu, { idleTimeoutSeconds: 600 });
    // A run in flight: never idle, however long it runs.
    const run = await dispatch(emu, id, { executionId: "exe-i1", message: "a long job [slow] [long]" });
    await run.body?.cancel();
    await advance(emu, id, 3600);
    expect((await read(emu, id)).status).toBe("running");
    expect(
      (await json(await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-i1" }))).data
        .cancelled,
    ).toBe(true);
    // Its end is use: the idle timeout counts from it.
    await advance(emu, id, 599);
    expect((await read(emu, id)).status).toBe("running");
    await advance(emu, id, 1);
    const stopped = await read(emu, id);
    expect(stopped.status).toBe("stopped");
    expect((await json(await emu.control("/_emulator/counters"))).counters["sandboxes.idleStopped"]).toBe(1);
    // Resumed: used again now.
    expect((await emu.api("POST", `/v1/sandboxes/${id}/resume`)).status).toBe(200);
    for (let i = 0; i < 500 && (await read(emu, id)).status !== "running"; i++)
      await new Promise((r) => setTimeout(r, 10));
    const resumed = await read(emu, id);
    expect(resumed.status).toBe("running");
    expect(Date.parse(resumed.lastActivityAt!)).toBeGreaterThan(Date.parse(stopped.lastActivityAt!));
  });

  it("a sandbox created without limits never expires or idles; the clock route refuses a bad body and an unknown sandbox", async () => {
    const emu = emulator("no-limits");
    const id = await sandboxWith(emu, {});
    await advance(emu, id, 10 * 365 * 86400);
    const view = await read(emu, id);
    expect(view.status).toBe("running");
    expect(view).not.toHaveProperty("expiresAt");
    expect((await advance(emu, id, 0)).status).toBe(400);
    expect((await advance(emu, "sbx_unknown", 5)).status).toBe(404);
  });
});
