import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyPartUpdate } from "../../public/wire/part-text.js";
import { compactPart } from "./part-deltas";

/** A client that knows only the public rule: `part.text` is the whole text; otherwise a delta appends. */
function clientText(
  previous: string | undefined,
  data: { part: Record<string, unknown>; delta?: string },
): string | undefined {
  if (typeof data.part.text === "string") return data.part.text;
  if (data.delta !== undefined) return (previous ?? "") + data.delta;
  return previous;
}

describe("each text delta stored and sent once", () => {
  it("a delta that continues the held text goes alone; the part's other fields go with it", () => {
    const out = compactPart({ id: "p", type: "reasoning", text: "ab", time: { start: 1 } }, "b", "a");
    expect(out).toEqual({ data: { part: { id: "p", type: "reasoning", time: { start: 1 } }, delta: "b" }, text: "ab" });
  });

  it("a part whose text does not continue the held text goes whole, without its delta", () => {
    expect(compactPart({ id: "p", type: "text", text: "xyz" }, "z", "a")).toEqual({
      data: { part: { id: "p", type: "text", text: "xyz" } },
      text: "xyz",
    });
    // A new instance holds nothing: a part already under way goes whole once.
    expect(compactPart({ id: "p", type: "text", text: "abc" }, "c", undefined)).toEqual({
      data: { part: { id: "p", type: "text", text: "abc" } },
      text: "abc",
    });
  });

  it("a text of the right length that differs from the held text inside, or ends otherwise, goes whole", () => {
    // Each is as long as the held text plus the delta: only the comparison of both ends tells.
    expect(compactPart({ id: "p", type: "text", text: "aXc" }, "c", "ab").data).toEqual({
      part: { id: "p", type: "text", text: "aXc" },
    });
    expect(compactPart({ id: "p", type: "text", text: "abX" }, "c", "ab").data).toEqual({
      part: { id: "p", type: "text", text: "abX" },
    });
    expect(compactPart({ id: "p", type: "text", text: "abc" }, "c", "ab").data).toEqual({
      part: { id: "p", type: "text" },
      delta: "c",
    });
  });

  it("parts that do not stream text (tools) are left as they are", () => {
    const part = { id: "t", type: "tool", state: { status: "running" } };
    expect(compactPart(part, undefined, undefined)).toEqual({ data: { part }, text: undefined });
  });

  it("whatever the upstream sends, a client replaying the events rebuilds the exact text; bytes stay linear", () => {
    // Upstream updates of one part: mostly cumulative text with its delta, sometimes a delta only,
    // a whole-text snapshot, or an edit that does not continue; the session may lose its memory.
    const update = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant("delta" as const), delta: fc.string({ maxLength: 8 }) }) },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("deltaOnly" as const), delta: fc.string({ maxLength: 8 }) }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("snapshot" as const), text: fc.string({ maxLength: 20 }) }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("forget" as const) }) },
    );
    fc.assert(
      fc.property(fc.array(update, { maxLength: 60 }), (updates) => {
        let upstream = "";
        let held: string | undefined;
        let client: string | undefined;
        for (const u of updates) {
          if (u.kind === "forget") {
            held = undefined;
            continue;
          }
          const before = upstream;
          let part: Record<string, unknown>;
          let delta: string | undefined;
          if (u.kind === "snapshot") {
            upstream = u.text;
            part = { id: "p", type: "text", text: upstream };
          } else {
            upstream += u.delta;
            delta = u.delta;
            part = u.kind === "delta" ? { id: "p", type: "text", text: upstream } : { id: "p", type: "text" };
          }
          // A delta-only update after the session lost its memory cannot be rebuilt by anyone.
          if (u.kind === "deltaOnly" && held === undefined && before !== "") return;
          const inSync = held === before;
          const out = compactPart(part, delta, held);
          held = out.text;
          // /messages applies the same rule as a client.
          expect(applyPartUpdate(client, out.data)).toBe(clientText(client, out.data));
          client = clientText(client, out.data);
          expect(client).toBe(upstream);
          // Linear: a delta that continues the held text costs its own bytes, not the text so far.
          if (delta !== undefined && inSync)
            expect(JSON.stringify(out.data).length).toBeLessThanOrEqual(50 + 6 * delta.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
