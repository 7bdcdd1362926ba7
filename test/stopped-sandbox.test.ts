/**
 * A sandbox stopped mid-turn (issue 19, defect 2), through the public API against both plausible
 * readings of what a stop does to a run in flight (docs/sandbox-wire.md §8, variant `stoppedRuns`):
 * the turn ends `failed` `environment_lost` at once; the run does not hold the agent session (the
 * next turn runs in the resumed sandbox, not `409 session_busy`); a run that went on is interrupted
 * upstream; and the usage its result reports is folded into the turn it belongs to.
 */
import { afterEach, describe, expect, it } from "vitest";
import { api, collect, counters, emulator, isTurnEnd, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
});

/** A turn whose run is under way (its first text seen), and the sandbox it runs in. */
async function runningTurn(message: string) {
  const token = await tokenFor(uid("user"));
  const cid = uid("conv");
  const turnId = uid("turn");
  const accepted = await json(await sendTurn(token, cid, turnId, message));
  await collect(
    await api(`/v1/conversations/${cid}/events?after=${accepted.after}`, { token }),
    (e) => e.type === "message.part.updated",
  );
  const run = await emulator(`/_emulator/executions/${accepted.executionId}`);
  return { token, cid, turnId, accepted, sandboxId: run.sandboxId as string };
}

async function stopAndSeeTheEnd(t: Awaited<ReturnType<typeof runningTurn>>) {
  const watching = collect(
    await api(`/v1/conversations/${t.cid}/events?after=${t.accepted.after}`, { token: t.token }),
    isTurnEnd,
  );
  await emulator(`/_emulator/sandboxes/${t.sandboxId}/status`, { status: "stopped" });
  return (await watching).events.at(-1)!;
}

async function executionStatus(id: string): Promise<string> {
  return (await emulator(`/_emulator/executions/${id}`)).status;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("a sandbox stopped mid-turn", () => {
  it("whose run dies with it: the turn fails environment_lost at once, and the next turn runs in the resumed sandbox, its memory kept", async () => {
    const t = await runningTurn("a long job [slow] [long]");
    const ended = await stopAndSeeTheEnd(t);
    expect(ended).toMatchObject({
      type: "turn.failed",
      data: { turnId: t.turnId, error: { code: "environment_lost" } },
    });
    expect(await executionStatus(t.accepted.executionId)).toBe("failed");

    const resumedBefore = (await counters())["sandboxes.resumed"] ?? 0;
    const next = uid("turn");
    const again = await sendTurn(t.token, t.cid, next, "are you there?");
    expect(again.status).toBe(202);
    const accepted = await json(again);
    expect((await waitForTurn(t.token, t.cid, next)).status).toBe("completed");
    expect((await counters())["sandboxes.resumed"]).toBe(resumedBefore + 1);
    expect((await emulator(`/_emulator/executions/${accepted.executionId}`)).sandboxId).toBe(t.sandboxId);
    const events = (
      await collect(
        await api(`/v1/conversations/${t.cid}/events?after=${accepted.after}`, { token: t.token }),
        isTurnEnd,
      )
    ).events;
    expect(events.some((e) => e.type === "warning" && e.data.code === "agent_memory_reset")).toBe(false);
  });

  it("whose run goes on: the next turn is not refused busy, because the run the gateway ended is interrupted upstream first", async () => {
    await variants({ stoppedRuns: "survive" });
    const t = await runningTurn("a long job [slow] [long]");
    const ended = await stopAndSeeTheEnd(t);
    expect(ended).toMatchObject({ type: "turn.failed", data: { error: { code: "environment_lost" } } });
    // The stop did not end the run: it is still going upstream.
    expect(await executionStatus(t.accepted.executionId)).toBe("running");

    const next = uid("turn");
    const again = await sendTurn(t.token, t.cid, next, "are you there?");
    expect(again.status).toBe(202);
    expect((await waitForTurn(t.token, t.cid, next)).status).toBe("completed");
    expect(await executionStatus(t.accepted.executionId)).toBe("cancelled");
    // The ended turn stays ended: interrupting its run afterwards does not rewrite it.
    expect((await json(await api(`/v1/conversations/${t.cid}/turns/${t.turnId}`, { token: t.token }))).status).toBe(
      "failed",
    );
  });

  it("whose run goes on to its end: the usage its result reports is folded into the turn it belongs to", async () => {
    await variants({ stoppedRuns: "survive" });
    const t = await runningTurn("count tokens [slow]");
    await stopAndSeeTheEnd(t);
    // The run finishes upstream while nobody reads it.
    await until("the run to end upstream", async () => (await executionStatus(t.accepted.executionId)) !== "running");
    const receipt = (await emulator(`/_emulator/executions/${t.accepted.executionId}`)).result;
    expect(receipt.usage).toBeTruthy();
    const before = await json(await api(`/v1/conversations/${t.cid}/usage`, { token: t.token }));
    expect(before.turns.find((u: any) => u.turnId === t.turnId).usage.source).not.toBe("receipt");

    const next = uid("turn");
    const accepted = await json(await sendTurn(t.token, t.cid, next, "hello"));
    expect((await waitForTurn(t.token, t.cid, next)).status).toBe("completed");
    const after = await json(await api(`/v1/conversations/${t.cid}/usage`, { token: t.token }));
    const stopped = after.turns.find((u: any) => u.turnId === t.turnId).usage;
    expect(stopped).toMatchObject({
      source: "receipt",
      inputTokens: receipt.usage.inputTokens,
      outputTokens: receipt.usage.outputTokens,
    });
    // Announced as that turn's usage, after that turn's end, before the next turn was accepted.
    const events = (
      await collect(
        await api(`/v1/conversations/${t.cid}/events`, { token: t.token }),
        (e) => e.type === "turn.accepted" && e.turnId === next,
      )
    ).events;
    const failedAt = events.findIndex((e) => e.type === "turn.failed" && e.turnId === t.turnId);
    const folded = events.findIndex(
      (e) => e.type === "usage.updated" && e.turnId === t.turnId && (e.data.usage as any).source === "receipt",
    );
    expect(failedAt).toBeGreaterThan(-1);
    expect(folded).toBeGreaterThan(failedAt);
    expect(folded).toBeLessThan(events.length - 1);
    void accepted;
  });
});
