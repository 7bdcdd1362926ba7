/**
 * The page's reducer, in Node: a live stream, a reload that resumes from the transcript, two tabs,
 * asks, sends that fail, and repeats. The transcript fixtures come from the server's own pure
 * transcript builder, so a reload here is the reload the page really does.
 */
import { describe, expect, it } from "vitest";
import { activeTurn, type ConversationState, emptyConversation } from "../../public/lib/conversation.js";
import { type Action, reduce } from "../../public/lib/reducer.js";
import type { StreamEvent } from "../../public/lib/reducer-events.js";
import type { InteractionRecord, TurnRecord } from "../../src/session/store/records";
import { buildTranscript } from "../../src/session/transcript";

const AT = "2026-01-01T00:00:00.000Z";

const permission = {
  id: "ask-1",
  kind: "permission",
  title: "Run the test suite?",
  responseScopes: ["once", "session"],
  answerSpec: {
    fields: [
      { name: "grant", type: "select" as const, options: ["allow_once", "allow_session", "deny"], required: true },
    ],
  },
};

/** The events of one turn that asks for a permission, as the gateway logs them (seq from 1). */
function scriptedTurn(turnId = "t1", message = "Run the tests [permission]"): StreamEvent[] {
  const events: Array<Omit<StreamEvent, "seq">> = [
    { turnId, type: "turn.accepted", data: { turnId, message }, at: AT },
    { turnId, type: "status", data: { status: "started" }, at: AT },
    {
      turnId,
      type: "message.part.updated",
      data: { part: { id: "r1", type: "reasoning", text: "I will read the README first." } },
      at: AT,
    },
    // Text deltas as the gateway sends them: each once, without the text so far.
    { turnId, type: "message.part.updated", data: { part: { id: "p1", type: "text" }, delta: "Looking" }, at: AT },
    { turnId, type: "message.part.updated", data: { part: { id: "p1", type: "text" }, delta: " into it." }, at: AT },
    { turnId, type: "message.part.updated", data: { part: { id: "s1", type: "step-start" } }, at: AT },
    {
      turnId,
      type: "message.part.updated",
      data: {
        part: {
          id: "tool1",
          type: "tool",
          tool: "read",
          state: { status: "running", input: { filePath: "README.md" } },
        },
      },
      at: AT,
    },
    {
      turnId,
      type: "message.part.updated",
      data: {
        part: {
          id: "tool1",
          type: "tool",
          tool: "read",
          state: { status: "completed", input: { filePath: "README.md" }, output: "# Demo" },
        },
      },
      at: AT,
    },
    { turnId, type: "interaction.requested", data: { turnId, interaction: permission }, at: AT },
    {
      turnId,
      type: "interaction.resolved",
      data: { turnId, interactionId: "ask-1", status: "answered", outcome: "accepted" },
      at: AT,
    },
    { turnId, type: "message.part.updated", data: { part: { id: "p2", type: "text" }, delta: "The tests" }, at: AT },
    {
      turnId,
      type: "message.part.updated",
      data: { part: { id: "p2", type: "text", text: "The tests pass." } },
      at: AT,
    },
    {
      turnId,
      type: "usage.updated",
      data: {
        turnId,
        usage: { inputTokens: 10, outputTokens: 5, cost: 0.001, source: "receipt" },
        conversation: { inputTokens: 10, outputTokens: 5, cost: 0.001, complete: true },
      },
      at: AT,
    },
    {
      turnId,
      type: "turn.completed",
      data: { turnId, status: "completed", result: { text: "Looking into it.\n\nThe tests pass." } },
      at: AT,
    },
  ];
  return events.map((e, i) => ({ ...e, seq: i + 1 }));
}

const applyAll = (state: ConversationState, events: StreamEvent[]) =>
  events.reduce((s, event) => reduce(s, { type: "event", event }), state);

/** What the server's /messages answers after `events` (the turn record and the ask as stored then). */
function transcriptAfter(events: StreamEvent[], turnId = "t1") {
  const done = events.find((e) => e.type === "turn.completed");
  const asked = events.some((e) => e.type === "interaction.requested");
  const answered = events.some((e) => e.type === "interaction.resolved");
  // A cast: the record grows fields the page never reads.
  const turn = {
    turnId,
    ordinal: 1,
    requestDigest: "sha256:x",
    request: { message: "Run the tests [permission]" },
    executionId: "exe-1",
    status: done ? "completed" : "running",
    controlRef: null,
    upstreamCursor: null,
    resultText: done ? (done.data.result.text as string) : null,
    error: null,
    usage: null,
    cancelReason: null,
    acceptedSeq: 1,
    createdAt: Date.parse(AT),
    updatedAt: Date.parse(AT),
    completedAt: done ? Date.parse(AT) : null,
    lostAt: null,
    parts: null,
  } as TurnRecord;
  const interactions: InteractionRecord[] = asked
    ? [
        {
          interactionId: "ask-1",
          turnId,
          executionId: "exe-1",
          request: permission,
          status: answered ? "answered" : "outstanding",
          outcome: answered ? "accepted" : null,
          answerHmac: null,
          operationId: null,
          createdAt: Date.parse(AT),
          resolvedAt: answered ? Date.parse(AT) : null,
        },
      ]
    : [];
  const logged = events.map((e) => ({ ...e, executionId: "exe-1" }));
  return { messages: buildTranscript([{ turn, events: logged, interactions }]), lastEventId: events.at(-1)?.seq ?? 0 };
}

/** What a person sees of a turn (times aside: the transcript's and the stream's differ by design). */
const shown = (state: ConversationState) =>
  state.order.map((id) => {
    const turn = state.turns[id]!;
    return {
      turnId: turn.turnId,
      userText: turn.userText,
      status: turn.status,
      blocks: turn.blocks,
      error: turn.error,
      cancelReason: turn.cancelReason,
    };
  });
const asksShown = (state: ConversationState) =>
  Object.values(state.asks).map(({ id, turnId, request, status, outcome }) => ({
    id,
    turnId,
    request,
    status,
    outcome,
  }));

describe("the page's reducer", () => {
  it("builds a turn from its live events: deltas appended, a whole text replacing, tool, ask, usage, end", () => {
    const state = applyAll(emptyConversation("c1"), scriptedTurn());
    const turn = state.turns.t1!;
    expect(turn).toMatchObject({
      userText: "Run the tests [permission]",
      status: "completed",
      usage: { inputTokens: 10 },
    });
    expect(turn.blocks.map((b) => `${b.kind}:${b.id}`)).toEqual([
      "reasoning:r1",
      "text:p1",
      "tool:tool1",
      "ask:ask-1",
      "text:p2",
    ]);
    expect(turn.blocks[1]).toMatchObject({ text: "Looking into it." });
    expect(turn.blocks[2]).toMatchObject({ status: "completed", output: "# Demo" });
    expect(state.asks["ask-1"]).toMatchObject({ status: "answered", outcome: "accepted", choice: null });
    expect(state.title).toBe("Run the tests [permission]");
    expect(turn.blocks[4]).toMatchObject({ text: "The tests pass." });
    expect(state.lastSeq).toBe(14);
    expect(activeTurn(state)).toBeNull();
  });

  it("ignores an event it has applied already: same state object", () => {
    const events = scriptedTurn();
    const state = applyAll(emptyConversation("c1"), events);
    for (const event of events) expect(reduce(state, { type: "event", event })).toBe(state);
  });

  it("a reload at any point (transcript, then the stream after it) shows what the uninterrupted page shows", () => {
    const events = scriptedTurn();
    const live = applyAll(emptyConversation("c1"), events);
    for (let cut = 0; cut <= events.length; cut++) {
      const loaded = reduce(emptyConversation("c1"), {
        type: "loaded",
        transcript: transcriptAfter(events.slice(0, cut)),
      });
      // EventSource resumes strictly after the transcript; an overlap (a late cursor) is harmless too.
      const resumed = applyAll(loaded, events.slice(Math.max(0, cut - 2)));
      expect(shown(resumed), `reload after event ${cut}`).toEqual(shown(live));
      expect(asksShown(resumed), `asks after event ${cut}`).toEqual(asksShown(live));
      expect(resumed.lastSeq).toBe(live.lastSeq);
    }
  });

  it("a part's update with neither text nor delta keeps the text held, as /messages does: one rule (public/wire/part-text.js)", () => {
    const base = scriptedTurn();
    // The part's end as upstream may send it: its other fields, no text and no delta.
    const ended = {
      turnId: "t1",
      type: "message.part.updated",
      data: { part: { id: "p1", type: "text", time: { end: 1 } } },
      at: AT,
    };
    const events: StreamEvent[] = [...base.slice(0, 5), ended, ...base.slice(5)].map((e, i) => ({ ...e, seq: i + 1 }));
    const live = applyAll(emptyConversation("c1"), events);
    expect(live.turns.t1!.blocks[1]).toMatchObject({ kind: "text", id: "p1", text: "Looking into it." });
    const loaded = reduce(emptyConversation("c1"), { type: "loaded", transcript: transcriptAfter(events.slice(0, 6)) });
    expect(shown(applyAll(loaded, events.slice(6)))).toEqual(shown(live));
  });

  it("a warning (the agent's memory reset) shows after a reload at any point as it did live", () => {
    const reset = {
      turnId: "t1",
      type: "warning",
      data: { code: "agent_memory_reset", message: "the agent's environment was replaced" },
      at: AT,
    };
    const base = scriptedTurn();
    const events = [base[0]!, reset, ...base.slice(1)].map((e, i) => ({ ...e, seq: i + 1 }));
    const live = applyAll(emptyConversation("c1"), events);
    expect(live.turns.t1!.blocks[0]).toEqual({
      key: "warning:2",
      kind: "warning",
      id: "2",
      text: "the agent's environment was replaced",
    });
    for (let cut = 0; cut <= events.length; cut++) {
      const loaded = reduce(emptyConversation("c1"), {
        type: "loaded",
        transcript: transcriptAfter(events.slice(0, cut)),
      });
      expect(shown(applyAll(loaded, events.slice(cut))), `reload after event ${cut}`).toEqual(shown(live));
    }
  });

  it("a turn's real changes and its undo and redo (issue 40): kept on the turn, the same after a reload at any point", () => {
    const changes = {
      source: "workspace",
      files: [{ path: "notes.txt", status: "added", binary: false, sizeAfter: 5, diff: "@@ -0,0 +1 @@\n+hello" }],
      truncated: false,
    };
    const base = scriptedTurn();
    const events = [
      ...base,
      { turnId: "t1", type: "workspace.changes", data: { turnId: "t1", ...changes }, at: AT },
      {
        turnId: "t1",
        type: "workspace.restored",
        data: { turnId: "t1", direction: "undo", operationId: "op-1", restoredAt: AT },
        at: AT,
      },
      {
        turnId: "t1",
        type: "workspace.restored",
        data: { turnId: "t1", direction: "redo", operationId: "op-2", restoredAt: AT },
        at: AT,
      },
    ].map((e, i) => ({ ...e, seq: i + 1 }));
    const n = base.length;
    const live = applyAll(emptyConversation("c1"), events);
    expect(live.turns.t1!.workspace).toMatchObject(changes);
    expect(live.turns.t1!.blocks.filter((b) => b.key.startsWith("restore:"))).toEqual([
      { key: `restore:${n + 2}`, kind: "file", id: "undo", label: "Undone: this turn's file changes" },
      { key: `restore:${n + 3}`, kind: "file", id: "redo", label: "Redone: this turn's file changes" },
    ]);
    for (let cut = 0; cut <= events.length; cut++) {
      const loaded = reduce(emptyConversation("c1"), {
        type: "loaded",
        transcript: transcriptAfter(events.slice(0, cut)),
      });
      const after = applyAll(loaded, events.slice(cut));
      expect(shown(after), `reload after event ${cut}`).toEqual(shown(live));
      expect(after.turns.t1!.workspace, `reload after event ${cut}`).toMatchObject(changes);
    }
  });

  it("the subagents: one block where the first came, each child task as its latest update says, the same after a reload at any point", () => {
    const update = (childId: string, n: number, status: string, extra: Record<string, unknown> = {}) => ({
      turnId: "t1",
      type: "child-task",
      data: {
        childId,
        sourceEventId: `${childId}#${n}`,
        status,
        time: { started: AT, updated: AT, ...(status === "running" ? {} : { ended: AT }) },
        ...extra,
      },
      at: AT,
    });
    const base = scriptedTurn();
    const events = [
      base[0]!,
      base[1]!,
      update("c1", 1, "running", { title: "Explore", runner: "explore" }),
      ...base.slice(2, 5),
      update("c2", 1, "running", { parentChildId: "c1" }),
      update("c2", 2, "failed", { parentChildId: "c1", terminalReason: "tool_error" }),
      update("c1", 2, "completed", { title: "Explore", runner: "explore", usage: { inputTokens: 5, outputTokens: 2 } }),
      ...base.slice(5),
    ].map((e, i) => ({ ...e, seq: i + 1 }));
    const live = applyAll(emptyConversation("c1"), events);
    const blocks = live.turns.t1!.blocks;
    expect(blocks.findIndex((b) => b.kind === "subagents")).toBe(0);
    expect(blocks.find((b) => b.kind === "subagents")).toEqual({
      key: "subagents",
      kind: "subagents",
      id: "subagents",
      tasks: [
        {
          childId: "c1",
          parentChildId: null,
          status: "completed",
          title: "Explore",
          runner: "explore",
          model: null,
          usage: { inputTokens: 5, outputTokens: 2 },
          terminalReason: null,
          startedAt: AT,
          endedAt: AT,
        },
        {
          childId: "c2",
          parentChildId: "c1",
          status: "failed",
          title: null,
          runner: null,
          model: null,
          usage: null,
          terminalReason: "tool_error",
          startedAt: AT,
          endedAt: AT,
        },
      ],
    });
    for (let cut = 0; cut <= events.length; cut++) {
      const loaded = reduce(emptyConversation("c1"), {
        type: "loaded",
        transcript: transcriptAfter(events.slice(0, cut)),
      });
      expect(shown(applyAll(loaded, events.slice(cut))), `reload after event ${cut}`).toEqual(shown(live));
    }
  });

  it("a finished conversation loads with its answered ask and its outcome, and nothing is running", () => {
    const state = reduce(emptyConversation("c1"), {
      type: "loaded",
      transcript: transcriptAfter(scriptedTurn()),
      title: "Tests",
    });
    expect(state.asks["ask-1"]).toMatchObject({
      status: "answered",
      outcome: "accepted",
      request: { title: "Run the test suite?" },
    });
    expect(state.turns.t1!.blocks.map((b) => b.kind)).toEqual(["reasoning", "text", "tool", "ask", "text"]);
    expect(state.title).toBe("Tests");
    expect(activeTurn(state)).toBeNull();
  });

  it("two tabs: the one that sent and answered, and one that only watched, show the same turn", () => {
    const events = scriptedTurn();
    // Tab A sends, then follows the stream; it answers the ask itself.
    let a = reduce(emptyConversation("c1"), {
      type: "send",
      turnId: "t1",
      message: "Run the tests [permission]",
      at: AT,
    });
    expect(a.turns.t1!.status).toBe("sending");
    a = reduce(a, { type: "sent", turnId: "t1", status: "pending" });
    a = applyAll(a, events.slice(0, 9));
    a = reduce(a, {
      type: "answered",
      interactionId: "ask-1",
      outcome: "accepted",
      choice: "Allowed for this session",
    });
    a = applyAll(a, events.slice(9));
    // Tab B opened the conversation mid-turn and follows the same stream.
    let b = reduce(emptyConversation("c1"), { type: "loaded", transcript: transcriptAfter(events.slice(0, 4)) });
    b = applyAll(b, events.slice(4));
    expect(shown(b)).toEqual(shown(a));
    // Only the tab that answered knows what was chosen; the other knows how (accepted), not what.
    expect(a.asks["ask-1"]).toMatchObject({ status: "answered", choice: "Allowed for this session" });
    expect(b.asks["ask-1"]).toMatchObject({ status: "answered", outcome: "accepted", choice: null });
  });

  it("an ask answered here stays answered when the run's end closes the others", () => {
    const [accepted, , , , , , , , requested] = scriptedTurn();
    let state = applyAll(emptyConversation("c1"), [accepted!, requested!]);
    state = reduce(state, { type: "answered", interactionId: "ask-1", outcome: "accepted", choice: "Denied" });
    state = reduce(state, {
      type: "event",
      event: {
        seq: 20,
        turnId: "t1",
        type: "interaction.resolved",
        data: { interactionId: "ask-1", status: "cancelled", reason: "the run ended" },
        at: AT,
      },
    });
    expect(state.asks["ask-1"]).toMatchObject({ status: "answered", choice: "Denied" });
  });

  it("a turn waiting for a person says what for, from the stream or a reload's summary, and runs again when the server says so", () => {
    const [accepted, , , , , , , , requested, resolved, , , , completed] = scriptedTurn();
    const waiting = (seq: number, waitingFor: string | null): StreamEvent => ({
      seq,
      turnId: "t1",
      type: "turn.waiting",
      data: { turnId: "t1", waitingFor, interactionId: waitingFor ? "ask-1" : null },
      at: AT,
    });
    const events = [accepted!, requested!, waiting(10, "awaiting_permission"), resolved!, waiting(11, null)].map(
      (e, i) => ({ ...e, seq: i + 1 }),
    );
    let state = applyAll(emptyConversation("c1"), events.slice(0, 2));
    expect(state.turns.t1!.waitingFor).toBeNull();
    state = applyAll(state, events.slice(2, 3));
    expect(state.turns.t1).toMatchObject({ status: "running", waitingFor: "awaiting_permission" });
    // The card's answer is not the server's word that the turn runs again; its turn.waiting is.
    state = applyAll(state, events.slice(3, 4));
    expect(state.turns.t1!.waitingFor).toBe("awaiting_permission");
    state = applyAll(state, events.slice(4));
    expect(state.turns.t1).toMatchObject({ status: "running", waitingFor: null });

    // A reload while it waits: the summary says what for; the stream after the transcript goes on.
    const loaded = reduce(emptyConversation("c1"), {
      type: "loaded",
      transcript: transcriptAfter(events.slice(0, 3)),
      waiting: { turnId: "t1", waitingFor: "awaiting_permission" },
    });
    expect(loaded.turns.t1).toMatchObject({ status: "running", waitingFor: "awaiting_permission" });
    expect(applyAll(loaded, events.slice(3)).turns.t1!.waitingFor).toBeNull();

    // A turn that ends while waiting waits no more; a late word for a finished turn changes nothing.
    const ended = applyAll(emptyConversation("c1"), [...events.slice(0, 3), { ...completed!, seq: 4 }]);
    expect(ended.turns.t1).toMatchObject({ status: "completed", waitingFor: null });
    expect(reduce(ended, { type: "event", event: waiting(5, "awaiting_question") })).toMatchObject({
      lastSeq: 5,
      turns: { t1: ended.turns.t1 },
    });
  });

  it("a send that did not reach the server keeps its text and turn id; a retry that succeeds is the same turn", () => {
    let state = reduce(emptyConversation("c1"), { type: "send", turnId: "t9", message: "hello", at: AT });
    state = reduce(state, { type: "sendFailed", turnId: "t9", error: { message: "could not reach the server" } });
    expect(state.turns.t9).toMatchObject({
      status: "unsent",
      userText: "hello",
      sendError: { message: "could not reach the server" },
    });
    expect(activeTurn(state)).toBeNull();
    state = reduce(state, { type: "send", turnId: "t9", message: "hello", at: AT });
    state = reduce(state, {
      type: "event",
      event: { seq: 1, turnId: "t9", type: "turn.accepted", data: { message: "hello" }, at: AT },
    });
    expect(state.order).toEqual(["t9"]);
    expect(state.turns.t9).toMatchObject({ status: "running", sendError: null });
  });

  it("an unsent message survives a reload, unless the server has the turn after all", () => {
    const unsent = [{ turnId: "t9", message: "still here", at: AT, error: { message: "offline" } }];
    const empty = { messages: [], lastEventId: 0 };
    const state = reduce(emptyConversation("c1"), { type: "loaded", transcript: empty, unsent });
    expect(state.turns.t9).toMatchObject({ status: "unsent", userText: "still here" });
    expect(state.title).toBe("still here");
    const reached = reduce(emptyConversation("c1"), {
      type: "loaded",
      transcript: transcriptAfter(scriptedTurn("t9").slice(0, 3), "t9"),
      unsent,
    });
    expect(reached.turns.t9!.status).toBe("running");
  });

  it("the answer to a send the page no longer shows (a reload came between) adds nothing", () => {
    const state = emptyConversation("c1");
    expect(reduce(state, { type: "sent", turnId: "gone", status: "pending" })).toBe(state);
    expect(reduce(state, { type: "sendFailed", turnId: "gone", error: { message: "offline" } })).toBe(state);
  });

  it("a refused send (a 4xx) removes the message: the composer gets it back", () => {
    let state = reduce(emptyConversation("c1"), { type: "send", turnId: "t1", message: "too big", at: AT });
    state = reduce(state, { type: "sendRefused", turnId: "t1" });
    expect(state.order).toEqual([]);
    expect(state.title).toBeNull();
  });

  it("a failed turn keeps its error; a cancelled turn its reason; the result text shows when no text streamed", () => {
    const events: StreamEvent[] = [
      { seq: 1, turnId: "a", type: "turn.accepted", data: { message: "one" }, at: AT },
      {
        seq: 2,
        turnId: "a",
        type: "turn.failed",
        data: { status: "failed", error: { code: "AGENT_CRASHED", message: "exited" } },
        at: AT,
      },
      { seq: 3, turnId: "b", type: "turn.accepted", data: { message: "two" }, at: AT },
      {
        seq: 4,
        turnId: "b",
        type: "turn.cancelled",
        data: { status: "cancelled", reason: "stopped by the user" },
        at: AT,
      },
      { seq: 5, turnId: "c", type: "turn.accepted", data: { message: "three" }, at: AT },
      {
        seq: 6,
        turnId: "c",
        type: "turn.completed",
        data: { status: "completed", result: { text: "Only the result." } },
        at: AT,
      },
    ];
    const state = applyAll(emptyConversation("c1"), events);
    expect(state.turns.a).toMatchObject({ status: "failed", error: { message: "exited" } });
    expect(state.turns.b).toMatchObject({ status: "cancelled", cancelReason: "stopped by the user" });
    expect(state.turns.c!.blocks).toMatchObject([{ kind: "text", text: "Only the result." }]);
  });

  it("keeps the identity of what did not change, so views redraw only what did", () => {
    const first = applyAll(emptyConversation("c1"), scriptedTurn("t1"));
    const second = reduce(first, {
      type: "event",
      event: { seq: 14, turnId: "t2", type: "turn.accepted", data: { message: "next" }, at: AT },
    });
    expect(second.turns.t1).toBe(first.turns.t1);
    const part = reduce(second, {
      type: "event",
      event: {
        seq: 15,
        turnId: "t2",
        type: "message.part.updated",
        data: { part: { id: "x", type: "text", text: "a" } },
        at: AT,
      },
    });
    expect(part.turns.t1).toBe(first.turns.t1);
    expect(part.turns.t2).not.toBe(second.turns.t2);
    // The same part again (an upstream repeat under a new seq) changes no block.
    const repeat = reduce(part, {
      type: "event",
      event: {
        seq: 16,
        turnId: "t2",
        type: "message.part.updated",
        data: { part: { id: "x", type: "text", text: "a" } },
        at: AT,
      },
    });
    expect(repeat.turns.t2).toBe(part.turns.t2);
  });

  it("a conversation deleted elsewhere takes no more events", () => {
    const deleted = reduce(emptyConversation("c1"), { type: "deleted" });
    const action: Action = { type: "event", event: scriptedTurn()[0]! };
    expect(reduce(deleted, action)).toBe(deleted);
  });

  it("usage read back fills the turns that reported some, and the total and budget", () => {
    let state = applyAll(emptyConversation("c1"), scriptedTurn().slice(0, 3));
    state = reduce(state, {
      type: "usage",
      total: { inputTokens: 1, outputTokens: 2, cost: null, complete: false },
      budget: { tokens: 100, used: 3, complete: false, exceeded: false, scope: "conversation" },
      turns: [
        { turnId: "t1", usage: { inputTokens: 1, outputTokens: 2, cost: null, source: "running" } },
        { turnId: "gone", usage: { inputTokens: 1, outputTokens: 2, cost: null, source: "running" } },
      ],
    });
    expect(state.turns.t1!.usage).toMatchObject({ inputTokens: 1 });
    expect(state.order).toEqual(["t1"]);
    expect(state.budget).toMatchObject({ tokens: 100 });
  });

  it("a turn keeps the model it asked for and the usage as the stream reports it: provenance, request count, served models", () => {
    const usage = {
      inputTokens: 17,
      outputTokens: 23,
      cost: null,
      source: "running",
      provenance: { inputTokens: "estimated", outputTokens: "estimated", cost: null },
      modelRequests: 2,
      servedModels: ["gpt-5.4"],
    } as const;
    const events: StreamEvent[] = [
      {
        seq: 1,
        turnId: "t1",
        type: "turn.accepted",
        data: { turnId: "t1", message: "hi", model: "codex/default" },
        at: AT,
      },
      {
        seq: 2,
        turnId: "t1",
        type: "usage.updated",
        data: { turnId: "t1", usage, conversation: { ...usage, complete: true } },
        at: AT,
      },
    ];
    const state = applyAll(emptyConversation("c1"), events);
    expect(state.turns.t1).toMatchObject({
      model: "codex/default",
      usage: { provenance: { inputTokens: "estimated" }, modelRequests: 2, servedModels: ["gpt-5.4"] },
    });
    expect(state.usageTotal?.provenance?.inputTokens).toBe("estimated");
    // A turn that named no model has none: the provider's default is not shown as asked for.
    expect(applyAll(emptyConversation("c2"), scriptedTurn()).turns.t1!.model).toBeNull();
  });

  it("the budget follows the stream: each usage.updated's budget replaces the one read at load, from a new conversation's first turn on", () => {
    const budget = (used: number) => ({
      tokens: 9000,
      used,
      complete: true,
      exceeded: false,
      scope: "conversation" as const,
      provenance: "measured" as const,
    });
    const total = (inputTokens: number, outputTokens: number) => ({
      inputTokens,
      outputTokens,
      cost: null,
      complete: true,
    });
    const usage = { inputTokens: 995, outputTokens: 40, cost: null, source: "running" } as const;
    const update = (seq: number, data: Record<string, unknown>): StreamEvent => ({
      seq,
      turnId: "t1",
      type: "usage.updated",
      data: { turnId: "t1", usage, ...data },
      at: AT,
    });
    // A new conversation: nothing read from /usage; the first report brings the budget.
    let state = applyAll(emptyConversation("c1"), [scriptedTurn()[0]!]);
    expect(state.budget).toBeNull();
    state = applyAll(state, [update(2, { conversation: total(995, 40), budget: budget(1035) })]);
    expect(state.budget).toEqual(budget(1035));
    expect(state.usageTotal).toMatchObject({ inputTokens: 995 });
    state = applyAll(state, [update(3, { conversation: total(1980, 80), budget: budget(2060) })]);
    expect(state.budget).toEqual(budget(2060));
    // A report without a budget (an older server) keeps the one known; null says none is set.
    state = applyAll(state, [update(4, { conversation: total(1980, 80) })]);
    expect(state.budget).toEqual(budget(2060));
    expect(applyAll(state, [update(5, { conversation: total(1980, 80), budget: null })]).budget).toBeNull();
  });

  it("a budget read once a turn ended fills in only where none is known: the stream's is newer", () => {
    const budget = (used: number) => ({
      tokens: 9000,
      used,
      complete: false,
      exceeded: false,
      scope: "conversation" as const,
      provenance: "measured" as const,
    });
    const state = applyAll(emptyConversation("c1"), [scriptedTurn()[0]!]);
    const read = reduce(state, { type: "budget", budget: budget(0) });
    expect(read.budget).toEqual(budget(0));
    expect(reduce(read, { type: "budget", budget: budget(5) }).budget).toEqual(budget(0));
    expect(reduce(state, { type: "budget", budget: null })).toBe(state);
  });

  it("usage read back names the model each turn asked for, and a served model even before any count", () => {
    let state = applyAll(emptyConversation("c1"), scriptedTurn().slice(0, 3));
    const silent = {
      inputTokens: null,
      outputTokens: null,
      cost: null,
      source: "none" as const,
      servedModels: ["gpt-5.4"],
    };
    state = reduce(state, {
      type: "usage",
      total: { inputTokens: null, outputTokens: null, cost: null, complete: false },
      budget: {
        tokens: 100,
        used: 0,
        complete: false,
        exceeded: false,
        scope: "conversation",
        provenance: "estimated",
      },
      turns: [{ turnId: "t1", model: "codex/default", usage: silent }],
    });
    expect(state.turns.t1).toMatchObject({ model: "codex/default", usage: { servedModels: ["gpt-5.4"] } });
    expect(state.budget?.provenance).toBe("estimated");
    // Read again, unchanged: the turn keeps its identity (nothing to redraw).
    const again = reduce(state, {
      type: "usage",
      total: state.usageTotal,
      budget: state.budget,
      turns: [{ turnId: "t1", model: "codex/default", usage: { ...silent, servedModels: null } }],
    });
    expect(again.turns.t1!.model).toBe("codex/default");
  });
});

describe("interactive mode (the agent's own terminal UI has the conversation)", () => {
  const event = (seq: number, type: string, data: Record<string, unknown>): StreamEvent => ({
    seq,
    turnId: null,
    type,
    data,
    at: AT,
  });

  it("is on from interactive.started until interactive.released, and a repeat changes nothing", () => {
    let state = applyAll(emptyConversation("c1"), scriptedTurn());
    expect(state.interactive).toBeNull();
    const last = state.lastSeq;
    state = applyAll(state, [event(last + 1, "interactive.started", { terminalId: "agent-1", generation: 2 })]);
    expect(state.interactive).toEqual({ terminalId: "agent-1" });
    state = applyAll(state, [event(last + 2, "interactive.released", { terminalId: "agent-1", reason: "released" })]);
    expect(state.interactive).toBeNull();
    // The start again, seen already (a reconnect's overlap): still released.
    expect(applyAll(state, [event(last + 1, "interactive.started", { terminalId: "agent-1" })]).interactive).toBeNull();
  });

  it("a reload takes it from the summary", () => {
    const loaded = reduce(emptyConversation("c1"), {
      type: "loaded",
      transcript: transcriptAfter(scriptedTurn()),
      interactive: { terminalId: "agent-1" },
    });
    expect(loaded.interactive).toEqual({ terminalId: "agent-1" });
    expect(
      reduce(emptyConversation("c1"), { type: "loaded", transcript: transcriptAfter(scriptedTurn()) }).interactive,
    ).toBeNull();
  });
});
