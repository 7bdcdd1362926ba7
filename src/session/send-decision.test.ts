import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideSend, type SendFacts } from "./send-decision";
import { queuedTurn, turnRecord } from "./store/fixtures";
import type { QueuedTurn, TurnRecord, TurnStatus } from "./store/records";

const turn = (status: TurnStatus, requestDigest = "d1", turnId = "t1"): TurnRecord =>
  turnRecord({
    turnId,
    requestDigest,
    request: { message: "m" },
    executionId: "e1",
    status,
    createdAt: 0,
    startedAt: 0,
    updatedAt: 0,
    completedAt: null,
  });

const entry = queuedTurn;

const running = turn("running", "d-r", "r");

const facts = (over: Partial<SendFacts>): SendFacts => ({
  turn: null,
  dispatching: false,
  entry: null,
  active: null,
  waiting: [],
  whenBusy: "refuse",
  limit: 3,
  requestDigest: "d-new",
  ...over,
});

describe("a send's turn id names a turn", () => {
  it("same content: cached when it ended (failed too), in progress while pending or running", () => {
    for (const status of ["completed", "failed", "cancelled"] as const) {
      const t = turn(status);
      expect(decideSend(facts({ turn: t, requestDigest: "d1" }))).toEqual({ kind: "cached", turn: t });
    }
    const r = turn("running");
    expect(decideSend(facts({ turn: r, active: r, requestDigest: "d1" }))).toEqual({
      kind: "in_progress",
      turn: r,
      resume: false,
    });
  });

  it("a pending turn nothing here dispatches (a crash mid-dispatch) is resumed; one being dispatched is not", () => {
    const p = turn("pending");
    expect(decideSend(facts({ turn: p, active: p, requestDigest: "d1" }))).toEqual({
      kind: "in_progress",
      turn: p,
      resume: true,
    });
    expect(decideSend(facts({ turn: p, active: p, dispatching: true, requestDigest: "d1" }))).toEqual({
      kind: "in_progress",
      turn: p,
      resume: false,
    });
  });

  it("other content: conflict, whatever its state", () => {
    expect(decideSend(facts({ turn: turn("completed"), requestDigest: "d2" }))).toEqual({ kind: "conflict" });
    expect(decideSend(facts({ turn: turn("running"), active: turn("running"), requestDigest: "d2" }))).toEqual({
      kind: "conflict",
    });
  });

  it("is answered from that turn whatever the queue holds", () => {
    const t = turn("running");
    expect(
      decideSend(facts({ turn: t, active: running, waiting: [entry("q1")], whenBusy: "queue", requestDigest: "d1" })),
    ).toEqual({ kind: "in_progress", turn: t, resume: false });
  });
});

describe("a new send", () => {
  it("a free conversation dispatches, whether or not the send would queue", () => {
    expect(decideSend(facts({}))).toEqual({ kind: "dispatch" });
    expect(decideSend(facts({ whenBusy: "queue" }))).toEqual({ kind: "dispatch" });
  });

  it("busy: queued only when the send asks; refused by the running turn, or by the turns waiting (nothing overtakes them)", () => {
    expect(decideSend(facts({ active: running, whenBusy: "queue" }))).toEqual({ kind: "queued" });
    expect(decideSend(facts({ active: running }))).toEqual({ kind: "busy", active: running });
    expect(decideSend(facts({ active: running, waiting: [entry("q1")] }))).toEqual({ kind: "busy", active: running });
    // Between two turns, with turns waiting.
    const waiting = [entry("q1"), entry("q2", "queued", 2)];
    expect(decideSend(facts({ waiting }))).toEqual({ kind: "busy", next: waiting[0], queued: 2 });
    expect(decideSend(facts({ waiting, whenBusy: "queue" }))).toEqual({ kind: "queued" });
  });

  it("the bound: a queue holding `limit` turns refuses the next one", () => {
    const waiting = [entry("q1"), entry("q2", "queued", 2), entry("q3", "queued", 3)];
    expect(decideSend(facts({ active: running, waiting, whenBusy: "queue" }))).toEqual({ kind: "full", limit: 3 });
    expect(decideSend(facts({ active: running, waiting: waiting.slice(0, 2), whenBusy: "queue" }))).toEqual({
      kind: "queued",
    });
  });
});

describe("a send's turn id names a queued turn", () => {
  it("the same send again is the same queued turn; other content is a conflict; removed or refused is final", () => {
    const q = entry("q1");
    expect(decideSend(facts({ entry: q, active: running, waiting: [q], requestDigest: "d-q1" }))).toEqual({
      kind: "in_progress",
      entry: q,
    });
    expect(decideSend(facts({ entry: q, active: running, waiting: [q], requestDigest: "other" }))).toEqual({
      kind: "conflict",
    });
    for (const state of ["removed", "refused"] as const) {
      const ended = entry("q1", state);
      expect(decideSend(facts({ entry: ended, requestDigest: "d-q1", whenBusy: "queue" }))).toEqual({
        kind: "cached",
        entry: ended,
      });
    }
  });

  it("one that started is its turn's from then on: without the turn's record, the send is the dispatcher's", () => {
    expect(decideSend(facts({ entry: entry("q1", "started"), active: running }))).toEqual({
      kind: "busy",
      active: running,
    });
    expect(decideSend(facts({ entry: entry("q1", "started"), waiting: [entry("q2")] }))).toEqual({ kind: "dispatch" });
  });
});

describe("every send", () => {
  const digest = fc.constantFrom("d1", "d2");
  const status = fc.constantFrom<TurnStatus>("pending", "running", "completed", "failed", "cancelled");
  const queuedEntry = (id: string) =>
    fc
      .record({ state: fc.constantFrom<QueuedTurn["state"]>("queued", "starting", "removed", "refused"), digest })
      .map(({ state, digest }) => entry(id, state, 1, digest));
  const arbitraryFacts = fc.record({
    turn: fc.option(
      fc.record({ status, digest }).map(({ status, digest }) => turn(status, digest)),
      { nil: null },
    ),
    dispatching: fc.boolean(),
    entry: fc.option(queuedEntry("t1"), { nil: null }),
    active: fc.option(
      status.filter((s) => s === "pending" || s === "running").map((s) => turn(s, "d-a", "a")),
      { nil: null },
    ),
    waiting: fc.array(
      fc.constantFrom("w1", "w2", "w3", "w4").map((id) => entry(id)),
      { maxLength: 5 },
    ),
    whenBusy: fc.constantFrom<SendFacts["whenBusy"]>("refuse", "queue"),
    limit: fc.integer({ min: 1, max: 4 }),
    requestDigest: digest,
  });

  it("a turn's record decides alone: the queue, the active turn, whenBusy and the bound change nothing", () => {
    fc.assert(
      fc.property(arbitraryFacts, arbitraryFacts, (a, b) => {
        fc.pre(a.turn !== null);
        expect(decideSend({ ...b, turn: a.turn, dispatching: a.dispatching, requestDigest: a.requestDigest })).toEqual(
          decideSend(a),
        );
      }),
    );
  });

  it("a new turn is dispatched only when nothing is active and nothing waits; queued only when asked and below the bound; refused busy only when it would not queue", () => {
    fc.assert(
      fc.property(arbitraryFacts, (f) => {
        const d = decideSend(f);
        const fresh = f.turn === null && f.entry === null;
        if (d.kind === "dispatch" && fresh) expect(f.active === null && f.waiting.length === 0).toBe(true);
        if (d.kind === "queued")
          expect(
            f.whenBusy === "queue" && f.waiting.length < f.limit && (f.active !== null || f.waiting.length > 0),
          ).toBe(true);
        if (d.kind === "full") expect(f.whenBusy === "queue" && f.waiting.length >= f.limit).toBe(true);
        if (d.kind === "busy") expect(f.whenBusy).toBe("refuse");
        if (fresh) expect(["dispatch", "queued", "full", "busy"]).toContain(d.kind);
        else expect(["cached", "in_progress", "conflict"]).toContain(d.kind);
      }),
    );
  });

  it("content other than what was sent under the id is a conflict, never another run", () => {
    fc.assert(
      fc.property(arbitraryFacts, (f) => {
        const known = f.turn ?? f.entry;
        fc.pre(known !== null);
        expect(decideSend(f).kind === "conflict").toBe(known.requestDigest !== f.requestDigest);
      }),
    );
  });
});
