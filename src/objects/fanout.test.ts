import { describe, expect, it } from "vitest";
import { SseParser } from "../lib/sse";
import { EventFanout } from "./fanout";
import type { EventRow } from "./session-store";

function log() {
  const rows: EventRow[] = [];
  let pages = 0;
  const append = (type = "x") => {
    const seq = rows.length + 1;
    const row = { seq, type, envelope: JSON.stringify({ seq, type }) };
    rows.push(row);
    return row;
  };
  return {
    rows,
    append,
    pages: () => pages,
    options: {
      readPage: (after: number, limit: number) => {
        pages++;
        return rows.filter((r) => r.seq > after).slice(0, limit);
      },
      lastSeq: () => rows.length,
      firstRetainedSeq: () => (rows.length ? 1 : null),
      pingIntervalMs: 60_000,
      maxPendingBytes: 10_000,
      pageSize: 100,
    },
  };
}

async function readIds(stream: ReadableStream<Uint8Array>, count: number): Promise<number[]> {
  const reader = stream.getReader();
  const parser = new SseParser();
  const ids: number[] = [];
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const f of parser.push(new TextDecoder().decode(value))) if (f.id) ids.push(Number(f.id));
  }
  await reader.cancel();
  return ids;
}

describe("fan-out", () => {
  it("replays page by page, joins live with nothing between, and sends each event once", async () => {
    const l = log();
    for (let i = 0; i < 250; i++) l.append();
    const fanout = new EventFanout(l.options);
    const stream = fanout.open(10);
    const reading = readIds(stream, 250 - 10 + 5);
    // Events appended while the reader is still replaying are read from the log, not pushed twice.
    for (let i = 0; i < 5; i++) fanout.publish(l.append());
    const ids = await reading;
    expect(ids).toEqual(Array.from({ length: 245 }, (_, i) => i + 11));
    expect(l.pages()).toBeGreaterThanOrEqual(3);
  });

  it("closes a reader that falls too far behind; it can reconnect from its last id", async () => {
    const l = log();
    const fanout = new EventFanout({ ...l.options, maxPendingBytes: 2_000 });
    const stream = fanout.open(0);
    const reader = stream.getReader();
    await reader.read(); // retry: header; the reader is now live and then stops reading
    await new Promise((r) => setTimeout(r, 0));
    for (let i = 0; i < 200; i++) {
      fanout.publish(l.append());
      await Promise.resolve();
    }
    await new Promise((r) => setTimeout(r, 0));
    expect(fanout.size).toBe(0);
    // What it had queued still drains, then the stream ends.
    let text = "";
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    const last = Number([...text.matchAll(/^id: (\d+)$/gm)].at(-1)![1]);
    expect(last).toBeLessThan(200);
    expect(await readIds(new EventFanout(l.options).open(last), 200 - last)).toEqual(Array.from({ length: 200 - last }, (_, i) => last + i + 1));
  });
});
