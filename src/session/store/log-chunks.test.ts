import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import {
  CHUNK_TYPE,
  chunkEvents,
  chunkText,
  compactRows,
  encodeChunk,
  expandChunk,
  expandRows,
  extendChunk,
  type HeldUpdate,
  type RowRewrite,
  updateRow,
} from "./log-chunks";
import type { EventRow } from "./records";

const owner = { turnId: "t", executionId: "e" };

/** The log after rewrites: rows by key, rewritten or gone. */
function applied(rows: readonly EventRow[], rewrites: readonly RowRewrite[]): EventRow[] {
  const byKey = new Map(rows.map((r) => [r.seq, r]));
  for (const w of rewrites) {
    byKey.delete(w.seq);
    if (w.to) byKey.set(w.to.seq, w.to);
  }
  return [...byKey.values()].sort((a, b) => a.seq - b.seq);
}

/** The events once each run is replaced by its one event at its last seq. */
function expected(
  events: readonly EventRow[],
  runs: ReadonlyArray<{ fromSeq: number; toSeq: number; row: EventRow }>,
): EventRow[] {
  const out: EventRow[] = [];
  for (const e of events) {
    const run = runs.find((r) => e.seq >= r.fromSeq && e.seq <= r.toSeq);
    if (!run) out.push(e);
    else if (e.seq === run.toSeq) out.push(run.row);
  }
  return out;
}

describe("compacting stored rows", () => {
  it("property: any rows (chunks and plain), any runs: the rewritten log reads back as the events with each run replaced, touching only the rows runs touch", () => {
    fc.assert(
      fc.property(
        // Row sizes (1: a plain row), and runs as (start, length) over the events.
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 9 })), { maxLength: 4 }),
        (sizes, runSpecs) => {
          let seq = 1;
          const rows: EventRow[] = [];
          for (const size of sizes) {
            const updates: HeldUpdate[] = [];
            for (let i = 0; i < size; i++, seq++) {
              updates.push(
                seq % 3 === 0
                  ? { seq, atMs: 1000 + seq, whole: { id: `p${seq % 2}`, type: "text", text: `t${seq}` } }
                  : { seq, atMs: 1000 + seq, part: { id: `p${seq % 2}`, type: "text" }, delta: `d${seq} ` },
              );
            }
            rows.push(
              size === 1
                ? updateRow(owner, updates[0]!)
                : { seq: seq - 1, type: CHUNK_TYPE, envelope: encodeChunk(owner, updates) },
            );
          }
          const total = seq - 1;
          // Disjoint runs, in order.
          const runs: Array<{ fromSeq: number; toSeq: number; row: EventRow }> = [];
          let next = 1;
          for (const [gap, length] of runSpecs) {
            const fromSeq = next + (gap % 3);
            const toSeq = Math.min(total, fromSeq + length - 1);
            if (fromSeq > total) break;
            runs.push({
              fromSeq,
              toSeq,
              row: updateRow(owner, {
                seq: toSeq,
                atMs: 5000 + toSeq,
                whole: { id: "snap", type: "text", text: `s${toSeq}` },
              }),
            });
            next = toSeq + 1;
          }
          const events = expandRows(rows);
          const rewrites = compactRows(rows, runs);
          expect(expandRows(applied(rows, rewrites))).toEqual(expected(events, runs));
          // A row no run touches is not rewritten.
          const touched = new Set(rewrites.map((w) => w.seq));
          for (const row of rows) {
            const inRun = expandRows([row]).some((e) => runs.some((r) => e.seq >= r.fromSeq && e.seq <= r.toSeq));
            expect(touched.has(row.seq)).toBe(inRun);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("a chunk encoded as it grows", () => {
  const part = fc.constantFrom({ id: "p1", type: "text" }, { id: "p2", type: "text" }, { id: "r1", type: "reasoning" });
  const update = fc.oneof(
    fc.record({ ms: fc.nat(50), part, delta: fc.string() }),
    fc.record({ ms: fc.nat(50), whole: part.chain((p) => fc.string().map((text) => ({ ...p, text }))) }),
  );
  /** Updates of consecutive seqs from 5, each `ms` after the one before. */
  const consecutive = (
    entries: ReadonlyArray<{ ms: number } & ({ part: object; delta: string } | { whole: object })>,
  ) => {
    let atMs = 1_000;
    return entries.map((e, i): HeldUpdate => {
      atMs += e.ms;
      return "whole" in e
        ? { seq: 5 + i, atMs, whole: e.whole as Record<string, unknown> }
        : { seq: 5 + i, atMs, part: e.part as Record<string, unknown>, delta: e.delta };
    });
  };

  it("is the same text, piece by piece, as the whole chunk encoded at once", () => {
    fc.assert(
      fc.property(fc.array(update, { minLength: 1, maxLength: 30 }), fc.array(fc.nat(30)), (entries, cuts) => {
        const updates = consecutive(entries);
        const bounds = [...new Set([0, ...cuts.filter((c) => c > 0 && c < updates.length), updates.length])].sort(
          (a, b) => a - b,
        );
        let encoding = null as ReturnType<typeof extendChunk> | null;
        for (let i = 1; i < bounds.length; i++)
          encoding = extendChunk(encoding, updates.slice(bounds[i - 1], bounds[i]));
        expect(chunkText(owner, encoding!)).toBe(encodeChunk(owner, updates));
      }),
    );
  });

  it("encodes only the new updates when it grows: its cost is theirs, not the whole chunk's again", () => {
    const updates = consecutive(
      Array.from({ length: 1_001 }, (_, i) => ({ ms: 1, part: { id: "p1", type: "text" }, delta: `w${i} ` })),
    );
    const grown = extendChunk(null, updates.slice(0, 1_000));
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      chunkText(owner, extendChunk(grown, updates.slice(1_000)));
      // The new update's part key and its entry, and the chunk's head: not a thousand part keys again.
      expect(stringify.mock.calls.length).toBeLessThanOrEqual(4);
    } finally {
      stringify.mockRestore();
    }
  });

  it("read back as events is each of its rows' envelope, parsed", () => {
    fc.assert(
      fc.property(fc.array(update, { minLength: 1, maxLength: 30 }), (entries) => {
        const text = encodeChunk(owner, consecutive(entries));
        expect(chunkEvents(text)).toEqual(expandChunk(text).map((row) => JSON.parse(row.envelope)));
      }),
    );
  });

  it("refuses updates whose seqs do not follow the chunk's", () => {
    const updates = consecutive([
      { ms: 0, part: { id: "p1", type: "text" }, delta: "a" },
      { ms: 0, part: { id: "p1", type: "text" }, delta: "b" },
    ]);
    expect(() => extendChunk(extendChunk(null, [updates[0]!]), [{ ...updates[1]!, seq: 9 }])).toThrow(/consecutive/);
  });
});
