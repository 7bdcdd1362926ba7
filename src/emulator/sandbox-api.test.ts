/**
 * The Sandbox API as the emulator serves it, read over `fetch`: turns one at a time per session,
 * exact replay after a cursor, and the plan decision routes.
 */
import { describe, expect, it } from "vitest";
import { dispatch, emulator, fields, json, rawFrames, readRaw, runningSandbox, runtime } from "./test-support";

describe("the emulator's Sandbox API", () => {
  it("runs one turn per session at a time (409 SESSION_BUSY), and replays strictly after a cursor", async () => {
    const emu = emulator("busy-replay");
    const id = await runningSandbox(emu);
    const first = await dispatch(emu, id, { message: "hello [slow]", executionId: "exe-b1", turnId: "t1" });
    const busy = await dispatch(emu, id, { executionId: "exe-b2", turnId: "t2" });
    expect(busy.status).toBe(409);
    expect((await json(busy)).error.code).toBe("SESSION_BUSY");
    await emu.api("POST", runtime(id, "/agents/sessions/s1/abort"), { executionId: "exe-b1" });
    const all = rawFrames(await readRaw(first)).map(fields);
    expect(all.map((f) => Number(f.id))).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)!.event).toBe("done");

    const replay = async (cursor: string) =>
      emu.api(
        "POST",
        runtime(id, "/agents/run/stream"),
        { message: "", sessionId: "s1" },
        { "x-execution-id": "exe-b1", "last-event-id": cursor },
      );
    const after = rawFrames(await readRaw(await replay("3"))).map(fields);
    expect(after.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
    const invalid = await replay(String(all.length + 1));
    expect(invalid.status).toBe(409);
    expect((await json(invalid)).error).toMatchObject({
      code: "INVALID_CURSOR",
      firstAvailableEventId: "1",
      lastEventId: String(all.length),
    });
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({ "runs.dispatches": 2, "runs.started": 1, "runs.replays": 2 });
  });

  it("streams [words:N] as OpenCode does: one text part, its text cumulative, each delta the new suffix; [paragraphs] splits it", async () => {
    const emu = emulator("one-part");
    const id = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { frameDelayMs: 0 });
    const textFrames = async (executionId: string, message: string) =>
      rawFrames(await readRaw(await dispatch(emu, id, { message, executionId, sessionId: executionId, turnId: "t1" })))
        .map(fields)
        .filter((f) => f.event === "message.part.updated")
        .map((f) => JSON.parse(f.data!) as { part: { id: string; type: string; text?: string }; delta?: string })
        // The answer's parts (the first step's short text part aside).
        .filter((d) => d.part.type === "text" && d.part.id.includes(":text-2"));

    const one = await textFrames("exe-w1", "answer [words:60]");
    expect(one).toHaveLength(60);
    expect(new Set(one.map((d) => d.part.id)).size).toBe(1);
    let so = "";
    for (const d of one) {
      expect(d.delta).toBeTruthy();
      so += d.delta;
      expect(d.part.text).toBe(so);
    }
    expect(so.split(" ")).toHaveLength(60);

    const split = await textFrames("exe-w2", "answer [words:60] [paragraphs]");
    expect(split).toHaveLength(60);
    expect(new Set(split.map((d) => d.part.id)).size).toBe(3);
  });

  it("answers a plan with plan/approve or plan/reject (feedback gives a revised plan)", async () => {
    const emu = emulator("plan");
    const id = await runningSandbox(emu);
    await emu.control("/_emulator/faults", { frameDelayMs: 0 });
    /** Waits until the session has an outstanding plan ask of this revision. */
    const planAsked = async (revision: number) => {
      const deadline = Date.now() + 5_000;
      while (Date.now() < deadline) {
        const asks = (await json(await emu.api("GET", runtime(id, "/agents/sessions/s1/interactions")))).data
          .interactions as Array<{ kind: string; subject: { revision: number } }>;
        if (asks.some((a) => a.kind === "plan" && a.subject.revision === revision)) return;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      throw new Error(`no plan revision ${revision} asked`);
    };

    const none = await emu.api("POST", runtime(id, "/agents/sessions/s1/plan/approve"), {});
    expect(none.status).toBe(404);

    const stream = await dispatch(emu, id, { message: "do it [plan]", executionId: "exe-p", turnId: "t1" });
    await planAsked(1);
    const reject = await emu.api("POST", runtime(id, "/agents/sessions/s1/plan/reject"), { feedback: "smaller steps" });
    expect(reject.status).toBe(200);
    expect((await emu.api("POST", runtime(id, "/agents/sessions/s1/plan/reject"), {})).status).toBe(400);
    await planAsked(2);
    const approve = await emu.api("POST", runtime(id, "/agents/sessions/s1/plan/approve"), {});
    expect(approve.status).toBe(200);
    const text = await readRaw(stream);
    expect(text.split("event: plan.submitted\n").length).toBe(3);
    expect(text).toContain("(Revised for: smaller steps)");
    expect(text).toContain("Plan revision 2 approved.");
    expect((await emu.api("POST", runtime(id, "/agents/sessions/s1/plan/approve"), {})).status).toBe(409);
  });
});
