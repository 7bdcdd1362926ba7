/**
 * The provider contract: one set of provider-level cases, written once and run against every
 * provider with its test peer (the Sandbox emulator for Tangle; the CLI Bridge stand-in for CLI
 * Bridge). A provider passes when, over its real wire, it admits a dispatch exactly once, replays
 * strictly after a cursor, gives repeated frames their stable ids, reaches a terminal event,
 * cancels exactly, answers an interaction once, reports usage the fold can total, and maps its
 * errors onto the shared codes.
 */
import { describe, expect, it } from "vitest";
import type { AgentProvider, DispatchInput, EnvironmentRecord, ProviderEvent } from "../src/providers/provider";
import type { AgentExactRunControlRef } from "../src/schemas/contracts";
import {
  type ExecutionUsageState,
  emptyExecutionUsage,
  executionView,
  foldReceipt,
  foldUsage,
} from "../src/usage/usage-fold";
import { upstreamRejection as rejection, uid } from "./helpers";

export interface ContractPeer {
  provider: AgentProvider;
  /** A ready environment of a new owner. */
  environment(): Promise<EnvironmentRecord>;
  /** Messages that make the peer's agent answer plainly, run slowly (long enough to cancel), or ask a question first. */
  messages: { plain: string; slow: string; ask: string };
  /** An accepted answer to the ask, and another accepted answer that differs from it. */
  answers: { first: Record<string, unknown>; other: Record<string, unknown> };
  /** The interaction posture the ask needs, where the peer asks only when told to. */
  askInteractions?: Record<string, boolean>;
  /** How many runs the peer has started, in all. */
  runsStarted(): Promise<number>;
  /** Makes the peer send every frame twice, or stop doing so (a peer that cannot is replayed whole instead). */
  repeatFrames?: (on: boolean) => Promise<void>;
  /** The provider has environments that can vanish (a bridge is one shared environment). */
  environmentsCanVanish: boolean;
  /** Upstream refuses a second turn while one runs in the session (one-shot bridge runs do not: the session object does). */
  refusesBusySession: boolean;
  /** The provider runs the conversation in upstream sessions of its own named after the conversation's (CLI Bridge: one per model route). */
  namesSessions?: true;
}

const TIMEOUT_MS = 15_000;

/** Reads a run's events until its terminal event (or until `until` says stop), with a deadline. */
async function readEvents(
  provider: AgentProvider,
  ref: AgentExactRunControlRef,
  options: { after?: string; until?: (event: ProviderEvent) => boolean } = {},
): Promise<ProviderEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error("timed out")), TIMEOUT_MS);
  const events: ProviderEvent[] = [];
  try {
    for await (const event of provider.events(ref, { after: options.after, signal: abort.signal })) {
      events.push(event);
      if (event.kind === "terminal" || options.until?.(event)) break;
    }
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return events;
}

/** The run's result once it is settled: asked until it is not null, for at most a few seconds. */
async function settledResult(provider: AgentProvider, ref: AgentExactRunControlRef) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const result = await provider.result(ref);
    if (result !== null || Date.now() > deadline) return result;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The events a reader keeps when it drops any id it has seen (what the session does). */
function distinct(events: ProviderEvent[]): ProviderEvent[] {
  const seen = new Set<string>();
  return events.filter(
    (e) => e.upstreamId === undefined || (!seen.has(e.upstreamId) && seen.add(e.upstreamId) !== undefined),
  );
}

export function providerContract(
  name: string,
  makePeer: () => ContractPeer | Promise<ContractPeer>,
  options: { interactions: boolean } = { interactions: true },
): void {
  describe(`provider contract: ${name}`, () => {
    async function start(message: string, peer?: ContractPeer, interactions?: Record<string, boolean>) {
      const p = peer ?? (await makePeer());
      const environment = await p.environment();
      const input: DispatchInput = {
        environmentId: environment.environmentId,
        sessionId: uid("session"),
        turnId: uid("turn"),
        executionId: uid("exe"),
        message,
        ...(interactions ? { interactions } : {}),
      };
      const receipt = await p.provider.dispatch(input);
      return { peer: p, environment, input, receipt, ref: receipt.controlRef };
    }

    it("admits a dispatch exactly once: a retry under the same ids attaches to the same run", async () => {
      const peer = await makePeer();
      const before = await peer.runsStarted();
      const { input, receipt, ref } = await start(peer.messages.plain, peer);
      expect(receipt.alreadyExisted).toBe(false);
      expect(ref).toMatchObject({ executionId: input.executionId, environmentId: input.environmentId });
      if (peer.namesSessions) expect(ref.sessionId.startsWith(`${input.sessionId}:`), ref.sessionId).toBe(true);
      else expect(ref.sessionId).toBe(input.sessionId);
      expect(ref.requestDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
      const again = await peer.provider.dispatch(input);
      expect(again.alreadyExisted).toBe(true);
      expect(again.controlRef).toEqual(ref);
      expect((await peer.runsStarted()) - before).toBe(1);
      await readEvents(peer.provider, ref);
    });

    it("reaches a terminal event, and the result agrees with it", async () => {
      const { peer, ref } = await start((await makePeer()).messages.plain);
      const events = await readEvents(peer.provider, ref);
      const terminal = events.at(-1)!;
      expect(terminal).toMatchObject({ kind: "terminal", status: "completed" });
      expect(events.filter((e) => e.kind === "part").length).toBeGreaterThan(0);
      // The terminal frame may come before the run is settled (Sandbox sends `done` after `result`):
      // until then the result is "not finished" (null), so it is asked again, briefly.
      const result = await settledResult(peer.provider, ref);
      expect(result?.status).toBe("completed");
      // Where both say what the answer was, they agree (a bridge's run snapshot holds no text).
      if (terminal.kind === "terminal" && terminal.text !== undefined && result?.text !== undefined)
        expect(result.text).toBe(terminal.text);
    });

    it("replays strictly after a cursor: the suffix of the whole stream, nothing before it", async () => {
      const { peer, ref } = await start((await makePeer()).messages.plain);
      const all = distinct(await readEvents(peer.provider, ref)).filter((e) => e.upstreamId !== undefined);
      expect(all.length).toBeGreaterThan(4);
      const cut = all[2]!.upstreamId!;
      const rest = distinct(await readEvents(peer.provider, ref, { after: cut })).filter(
        (e) => e.upstreamId !== undefined,
      );
      expect(rest.map((e) => e.upstreamId)).toEqual(all.slice(3).map((e) => e.upstreamId));
      expect(rest).toEqual(all.slice(3));
    });

    it("repeated frames keep their ids, so a reader that drops seen ids gets each event once", async () => {
      const peer = await makePeer();
      const clean = await start(peer.messages.plain, peer);
      const expected = distinct(await readEvents(peer.provider, clean.ref));
      if (!peer.repeatFrames) {
        // A peer that cannot repeat frames: the whole run read again repeats every id, unchanged.
        const again = await readEvents(peer.provider, clean.ref);
        const both = distinct([...expected, ...again]);
        expect(both.map((e) => e.upstreamId)).toEqual(expected.map((e) => e.upstreamId));
        return;
      }
      await peer.repeatFrames(true);
      try {
        const noisy = await start(peer.messages.plain, peer);
        const raw = await readEvents(peer.provider, noisy.ref);
        const kept = distinct(raw);
        expect(raw.length).toBeGreaterThan(kept.length);
        // The same run shape as a clean stream (ids and kinds), each event once.
        expect(kept.map((e) => e.kind)).toEqual(expected.map((e) => e.kind));
      } finally {
        await peer.repeatFrames(false);
      }
    });

    it("reports usage the fold can total: input and output known, and a receipt (where one comes) agrees with the stream", async () => {
      const { peer, ref } = await start((await makePeer()).messages.plain);
      let state: ExecutionUsageState = emptyExecutionUsage(ref.executionId);
      for (const event of distinct(await readEvents(peer.provider, ref))) {
        if (event.kind === "usage") state = foldUsage(state, event.usage).state;
        if (event.kind === "terminal" && event.usage) state = foldUsage(state, event.usage).state;
        if (event.kind === "terminal" && event.receipt) state = foldReceipt(state, event.receipt);
      }
      const view = executionView(state);
      expect(["receipt", "running"]).toContain(view.source);
      expect(view.inputTokens).toBeGreaterThan(0);
      expect(view.outputTokens).toBeGreaterThan(0);
      expect(state.receiptDisagreements).toEqual([]);
      expect(state.conflicts).toEqual([]);
    });

    it("cancels exactly the run the ref names; the run ends cancelled; a repeat finds nothing live", async () => {
      const { peer, ref } = await start((await makePeer()).messages.slow);
      const stranger = { ...ref, executionId: uid("exe-other"), runId: uid("run-other") };
      expect((await peer.provider.cancel(stranger)).effect).toBe("not_live");
      const outcome = await peer.provider.cancel(ref, { operationId: uid("op"), reason: "changed my mind" });
      expect(["cancelled", "cancel_requested"]).toContain(outcome.effect);
      const events = await readEvents(peer.provider, ref);
      expect(events.at(-1)).toMatchObject({ kind: "terminal", status: "cancelled" });
      expect((await settledResult(peer.provider, ref))?.status).toBe("cancelled");
      // Again: nothing is live (a bridge may say the run is cancelled, which it is); never a new request.
      expect(["not_live", "cancelled"]).toContain((await peer.provider.cancel(ref)).effect);
    });

    it.skipIf(!options.interactions)(
      "answers an interaction once: the same answer again is already resolved, another is refused",
      async () => {
        const peer = await makePeer();
        const { ref, input, environment } = await start(peer.messages.ask, peer, peer.askInteractions);
        expect((await peer.provider.claimsFor(environment)).interactions).toBe(true);
        const events = await readEvents(peer.provider, ref, { until: (e) => e.kind === "interaction.requested" });
        const asked = events.at(-1)!;
        if (asked.kind !== "interaction.requested") throw new Error(`expected an ask, got ${asked.kind}`);
        const binding = {
          runId: ref.runId,
          provider: ref.provider,
          environmentId: ref.environmentId,
          sessionId: input.sessionId,
          executionId: ref.executionId,
          interactionId: asked.request.id,
        };
        const command = (data: Record<string, unknown>, operationId = uid("op")) => ({
          operationId,
          binding,
          commandDigest: `sha256:${"a".repeat(64)}` as const,
          request: asked.request,
          outcome: "accepted" as const,
          data,
        });
        expect(await peer.provider.respondToInteraction(ref, command(peer.answers.first))).toMatchObject({
          status: "accepted",
        });
        expect((await peer.provider.respondToInteraction(ref, command(peer.answers.first))).status).toBe(
          "already_resolved_same",
        );
        expect((await peer.provider.respondToInteraction(ref, command(peer.answers.other))).status).toBe(
          "already_resolved_different",
        );
        const rest = await readEvents(peer.provider, ref, { after: asked.upstreamId });
        expect(rest.at(-1)).toMatchObject({ kind: "terminal", status: "completed" });
      },
    );

    it("maps its errors: a busy session, a cursor ahead of the run, an environment that is gone", async () => {
      const peer = await makePeer();
      const { ref, input } = await start(peer.messages.slow, peer);
      if (peer.refusesBusySession) {
        const busy = await rejection(
          peer.provider.dispatch({
            ...input,
            turnId: uid("turn"),
            executionId: uid("exe"),
            message: peer.messages.plain,
            previous: ref,
          }),
        );
        expect(busy.code).toBe("session_busy");
      }
      const ahead = await rejection(readEvents(peer.provider, ref, { after: "999999" }));
      expect(ahead.code).toBe("cursor_ahead");
      if (peer.environmentsCanVanish) {
        const gone = await rejection(
          peer.provider.dispatch({
            ...input,
            environmentId: uid("missing-env"),
            turnId: uid("turn"),
            executionId: uid("exe"),
          }),
        );
        expect(gone.code).toBe("environment_gone");
      }
      await peer.provider.cancel(ref);
    });
  });
}
