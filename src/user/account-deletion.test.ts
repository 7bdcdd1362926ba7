import { describe, expect, it } from "vitest";
import type { DeletionStep } from "../schemas/environment";
import { type DeletionDeps, runDeletion } from "./account-deletion";

/** A deletion over in-memory parts, recording what ran; `failOnce` names the calls that fail the first time. */
function fake(conversations: string[], failOnce: string[] = []) {
  const state = {
    step: "sealed" as DeletionStep,
    index: [...conversations],
    sandbox: true,
    webhooks: true,
    wiped: false,
  };
  const ran: string[] = [];
  const failing = new Set(failOnce);
  const call = async (name: string, effect: () => void) => {
    if (failing.delete(name)) throw new Error(`${name} failed`);
    ran.push(name);
    effect();
  };
  const deps: DeletionDeps = {
    step: () => state.step,
    advance: (step) => {
      state.step = step;
    },
    forgetWebhooks: () => call("webhooks", () => (state.webhooks = false)),
    conversations: () => [...state.index],
    closeStreams: (cid) => call(`streams:${cid}`, () => undefined),
    deleteConversation: (cid) =>
      call(`conversation:${cid}`, () => (state.index = state.index.filter((c) => c !== cid))),
    deleteSandbox: () => call("sandbox", () => (state.sandbox = false)),
    wipeIndex: () => {
      ran.push("index");
      state.wiped = true;
    },
  };
  return { state, ran, deps };
}

describe("runDeletion", () => {
  it("runs the steps in their order: webhooks, streams, conversations, sandbox, index", async () => {
    const { state, ran, deps } = fake(["a", "b"]);
    await runDeletion(deps);
    expect(ran).toEqual(["webhooks", "streams:a", "streams:b", "conversation:a", "conversation:b", "sandbox", "index"]);
    expect(state).toMatchObject({ step: "done", index: [], sandbox: false, webhooks: false, wiped: true });
  });

  it("a step that fails stays the next one; running again resumes there and nothing done is done twice", async () => {
    for (const failing of ["webhooks", "conversation:b", "sandbox"]) {
      const { state, ran, deps } = fake(["a", "b"], [failing]);
      await expect(runDeletion(deps)).rejects.toThrow(`${failing} failed`);
      expect(state.step).not.toBe("done");
      expect(state.wiped).toBe(false);
      await runDeletion(deps);
      expect(state).toMatchObject({ step: "done", index: [], sandbox: false, wiped: true });
      expect(ran.filter((r) => r === "conversation:a" || r === "sandbox" || r === "webhooks")).toEqual([
        "webhooks",
        "conversation:a",
        "sandbox",
      ]);
    }
  });

  it("a failing stream close does not stop it (best effort)", async () => {
    const { state, deps } = fake(["a"], ["streams:a"]);
    await runDeletion(deps);
    expect(state.step).toBe("done");
  });

  it("a conversation that reached the index after its step sends the deletion back to it before the wipe", async () => {
    const { state, ran, deps } = fake(["a"]);
    const deleteSandbox = deps.deleteSandbox;
    let late = true;
    deps.deleteSandbox = async () => {
      await deleteSandbox();
      if (late) state.index.push("late");
      late = false;
    };
    await runDeletion(deps);
    expect(ran).toEqual([
      "webhooks",
      "streams:a",
      "conversation:a",
      "sandbox",
      "conversation:late",
      "sandbox",
      "index",
    ]);
    expect(state.index).toEqual([]);
  });
});
