/**
 * The age bound on a capability document (docs/api.md#capabilities). This file runs in the `limits`
 * project, where CAPABILITIES_MAX_AGE_MS is 3 s: a document is read again at the first turn after
 * that, with no refusal to prompt it, and turns before that do not read it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { counters, json, sendTurn, setFaults, tokenFor, uid } from "./helpers";

const MAX_AGE_MS = 3_000;
const reads = (c: Record<string, number>) => c["requests.runtime.capabilities"] ?? 0;

afterEach(async () => {
  await setFaults({});
});

describe("the capability document's age bound", () => {
  it("a document older than CAPABILITIES_MAX_AGE_MS is read again at the next turn: a flag gone since is no longer claimed", async () => {
    await setFaults({});
    const token = await tokenFor(uid("user"));
    expect((await sendTurn(token, uid("conv"), uid("turn"), "hello")).status).toBe(202);
    const made = await counters();
    await setFaults({ capabilities: { runs: { eventReplay: false } } });
    // Read moments ago: the document is trusted as read, not read for every turn.
    expect((await sendTurn(token, uid("conv"), uid("turn"), "soon after")).status).toBe(202);
    expect(reads(await counters())).toBe(reads(made));

    await new Promise((resolve) => setTimeout(resolve, MAX_AGE_MS + 200));
    const late = await sendTurn(token, uid("conv"), uid("turn"), "later");
    expect(late.status).toBe(501);
    expect((await json(late)).error).toMatchObject({
      code: "capability_denied",
      details: { missing: ["streaming.replay"] },
    });
    const after = await counters();
    expect(reads(after) - reads(made)).toBe(1);
    expect(after["sandboxes.created"]).toBe(made["sandboxes.created"]);
  });
});
