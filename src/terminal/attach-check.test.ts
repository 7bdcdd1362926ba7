import { describe, expect, it } from "vitest";
import { checkMetadata, checkReady, expiresAt } from "./attach-check";

const ready = { sessionId: "pty-1", restored: false, detachTimeoutMs: 60_000 };
const metadata = {
  name: "shell",
  shell: "/bin/sh",
  cwd: "/home/agent",
  cols: 80,
  rows: 24,
  createdAt: "2026-12-05T10:00:00.000Z",
  lastActivityAt: "2026-12-05T10:01:00.000Z",
  isRunning: true,
};

describe("attach checks (seed 000: an attach with incomplete metadata fails closed)", () => {
  it("takes a complete ready and metadata", () => {
    const r = checkReady(ready);
    expect(r).toEqual({ ok: true, ...ready });
    const m = checkMetadata(ready, { ...metadata, exitCode: 2 });
    expect(m).toMatchObject({ ok: true, terminal: { cwd: "/home/agent", exitCode: 2, isRunning: true } });
  });

  it("names each ready field missing or malformed", () => {
    expect(checkReady({ sessionId: "", restored: true, detachTimeoutMs: undefined })).toEqual({
      ok: false,
      missing: ["sessionId", "detachTimeoutMs"],
    });
    expect(checkReady({ ...ready, detachTimeoutMs: 0 })).toEqual({ ok: false, missing: ["detachTimeoutMs"] });
  });

  it.each(Object.keys(metadata))("refuses metadata without %s", (field) => {
    const partial: Record<string, unknown> = { ...metadata };
    delete partial[field];
    expect(checkMetadata(ready, partial)).toEqual({ ok: false, missing: [field] });
  });

  it("refuses geometry out of range and timestamps that do not parse", () => {
    expect(checkMetadata(ready, { ...metadata, cols: 0, createdAt: "yesterday" })).toEqual({
      ok: false,
      missing: ["cols", "createdAt"],
    });
  });

  it("expires one detach window past the newest activity, the sandbox's or the gateway's", () => {
    const m = checkMetadata(ready, metadata);
    if (!m.ok) throw new Error("complete");
    const sandbox = Date.parse(metadata.lastActivityAt);
    expect(expiresAt(m.terminal, sandbox - 5_000)).toBe(sandbox + 60_000);
    expect(expiresAt(m.terminal, sandbox + 5_000)).toBe(sandbox + 65_000);
  });
});
