import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BranchRecord, TreeTurn, TurnRecord } from "./store/records";
import { buildTranscript } from "./transcript";
import { branchThrough, pathOf, place, siblingsOf, tipOf } from "./turn-tree";

/** A tree built by sending turns one after another, as the dispatcher records them. */
class Tree {
  turns: TreeTurn[] = [];
  branches: BranchRecord[] = [];
  messages = new Map<string, string>();
  active = 0;

  send(turnId: string, message: string, parent?: string | null, refused = false) {
    const p = place(this.turns, this.branches, this.active, parent);
    if (p.kind === "unknown_parent") throw new Error(`unknown parent ${p.parentTurnId}`);
    if (p.kind === "branch" && !p.reused)
      this.branches.push({ branch: p.branch, forkOf: p.forkOf, at: p.parentTurnId });
    // A refused dispatch forgets its turn; the branch it made stays, to be reused.
    if (refused) return p;
    this.turns.push({ turnId, parentTurnId: p.parentTurnId, branch: p.branch, ordinal: this.turns.length + 1 });
    this.messages.set(turnId, message);
    this.active = p.branch;
    return p;
  }

  texts(branch: number): string[] {
    return pathOf(this.turns, branch, this.branches).map((t) => this.messages.get(t.turnId)!);
  }
}

describe("the turn tree", () => {
  it("a line of turns is branch 0; an edit of an earlier message forks the branch there; the fork point's own branch goes on", () => {
    const tree = new Tree();
    expect(tree.send("t1", "a")).toEqual({ kind: "continue", parentTurnId: null, branch: 0 });
    tree.send("t2", "b");
    tree.send("t3", "c");
    expect(tree.send("t4", "b2", "t1")).toEqual({
      kind: "branch",
      parentTurnId: "t1",
      branch: 1,
      forkOf: 0,
      reused: false,
    });
    expect(tree.texts(0)).toEqual(["a", "b", "c"]);
    expect(tree.texts(1)).toEqual(["a", "b2"]);
    expect(tree.send("t5", "d")).toMatchObject({ kind: "continue", parentTurnId: "t4", branch: 1 });
    // After the tip of branch 0: it goes on in branch 0.
    expect(tree.send("t6", "d0", "t3")).toMatchObject({ kind: "continue", branch: 0 });
    // A fork of branch 1 at its own turn forks branch 1's session.
    expect(tree.send("t7", "d1", "t4")).toMatchObject({ kind: "branch", branch: 2, forkOf: 1 });
    expect(tree.texts(2)).toEqual(["a", "b2", "d1"]);
    expect(siblingsOf(tree.turns, "t5").map((t) => t.turnId)).toEqual(["t5", "t7"]);
    expect(siblingsOf(tree.turns, "t2").map((t) => t.turnId)).toEqual(["t2", "t4"]);
  });

  it("the first message sent again starts a branch afresh (nothing to fork); an unknown parent is refused", () => {
    const tree = new Tree();
    tree.send("t1", "a");
    expect(tree.send("t2", "a again", null)).toEqual({
      kind: "branch",
      parentTurnId: null,
      branch: 1,
      forkOf: null,
      reused: false,
    });
    expect(tree.texts(1)).toEqual(["a again"]);
    expect(place(tree.turns, tree.branches, 0, "nope")).toEqual({ kind: "unknown_parent", parentTurnId: "nope" });
  });

  it("a branch whose first turn was refused is reused by the next turn with the same origin, never made twice", () => {
    const tree = new Tree();
    tree.send("t1", "a");
    tree.send("t2", "b");
    expect(tree.send("x", "b2", "t1", true)).toMatchObject({ kind: "branch", branch: 1, reused: false });
    expect(tree.send("t3", "b2", "t1")).toMatchObject({ kind: "branch", branch: 1, reused: true });
    expect(tree.branches).toHaveLength(1);
  });

  it("a split's choice shows the active branch when it goes through it, else the newest branch that does", () => {
    const tree = new Tree();
    tree.send("t1", "a");
    tree.send("t2", "b");
    tree.send("t3", "c");
    tree.send("t4", "b2", "t1");
    tree.send("t5", "c2", "t2");
    expect(tipOf(tree.turns, 2)?.turnId).toBe("t5");
    expect(branchThrough(tree.turns, "t2", 2)).toBe(2);
    expect(branchThrough(tree.turns, "t2", 1)).toBe(2);
    expect(branchThrough(tree.turns, "t3", 1)).toBe(0);
    expect(branchThrough(tree.turns, "t4", 0)).toBe(1);
    expect(branchThrough(tree.turns, "zz", 0)).toBeNull();
  });
});

/** What users do: send after the active branch's tip, edit or regenerate a message of the active branch, switch, cancel, or send one that is refused. */
type Op =
  | { kind: "send"; text: string; refused: boolean }
  | { kind: "edit"; at: number; text: string; refused: boolean }
  | { kind: "regenerate"; at: number }
  | { kind: "switch"; to: number }
  | { kind: "cancel" };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("send" as const),
    text: fc.string({ minLength: 1, maxLength: 4 }),
    refused: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("edit" as const),
    at: fc.nat(),
    text: fc.string({ minLength: 1, maxLength: 4 }),
    refused: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("regenerate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("switch" as const), to: fc.nat() }),
  fc.record({ kind: fc.constant("cancel" as const) }),
);

function record(turn: TreeTurn, message: string, status: TurnRecord["status"]): TurnRecord {
  return {
    ...turn,
    requestDigest: "sha256:x",
    request: { message },
    executionId: `exe-${turn.turnId}`,
    status,
    controlRef: null,
    upstreamCursor: null,
    resultText: `answer to ${message}`,
    answerInParts: false,
    error: null,
    usage: null,
    cancelReason: null,
    acceptedSeq: null,
    lostAt: null,
    parts: null,
    createdAt: turn.ordinal,
    startedAt: turn.ordinal,
    updatedAt: turn.ordinal,
    completedAt: turn.ordinal,
  };
}

describe("the turn tree, property", () => {
  it("any sequence of sends, edits, regenerates, switches, cancels and refusals keeps every branch's transcript equal to its turns in order", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const tree = new Tree();
        // The model: each branch's conversation as a list, copied at a fork.
        const model = new Map<number, string[]>();
        const cancelled = new Set<string>();
        let n = 0;
        for (const o of ops) {
          const active = model.get(tree.active) ?? [];
          if (o.kind === "switch") {
            const ids = [...model.keys()];
            if (ids.length > 0) tree.active = ids[o.to % ids.length]!;
            continue;
          }
          if (o.kind === "cancel") {
            const tip = tipOf(tree.turns, tree.active);
            if (tip) cancelled.add(tip.turnId);
            continue;
          }
          const path = pathOf(tree.turns, tree.active);
          let parent: string | null | undefined;
          let text: string;
          let keep: string[];
          if (o.kind === "send") {
            [parent, text, keep] = [undefined, o.text, active];
          } else {
            if (path.length === 0) continue;
            const k = o.at % path.length;
            parent = path[k]!.parentTurnId;
            text = o.kind === "edit" ? o.text : tree.messages.get(path[k]!.turnId)!;
            keep = active.slice(0, k);
          }
          const refused = o.kind !== "regenerate" && o.refused;
          const p = tree.send(`t${++n}`, text, parent, refused);
          if (refused) continue;
          // An edit or a regenerate always branches (the turn it replaces follows its parent); a send never does.
          expect(p.kind).toBe(o.kind === "send" ? "continue" : "branch");
          model.set(p.branch, [...keep, text]);
        }
        for (const [branch, texts] of model) {
          expect(tree.texts(branch)).toEqual(texts);
          const transcript = buildTranscript(
            pathOf(tree.turns, branch).map((t) => ({
              turn: record(t, tree.messages.get(t.turnId)!, cancelled.has(t.turnId) ? "cancelled" : "completed"),
              events: [],
              interactions: [],
            })),
          );
          expect(transcript.filter((m) => m.role === "user").map((m) => m.text)).toEqual(texts);
          expect(transcript.filter((m) => m.role === "assistant").map((m) => m.text)).toEqual(
            texts.map((t) => `answer to ${t}`),
          );
        }
        // A branch left without turns (its first turn refused) is reused: never two for one origin.
        const held = new Set(tree.turns.map((t) => t.branch));
        const empty = tree.branches.filter((b) => !held.has(b.branch)).map((b) => `${b.forkOf}|${b.at}`);
        expect(new Set(empty).size).toBe(empty.length);
      }),
      { numRuns: 300 },
    );
  });
});
