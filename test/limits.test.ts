/** Deployment limits reached (this project runs with EVENT_LOG_MAX_EVENTS=30). */
import { describe, expect, it } from "vitest";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

describe("a log trimmed into a turn", () => {
  it("keeps the turn's whole message: intro, reasoning and tool parts survive in /messages", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const first = uid("turn");
    await sendTurn(token, cid, first, "first answer [long]");
    await waitForTurn(token, cid, first);
    const before = (await json(await api(`/v1/conversations/${cid}/messages`, { token }))).messages[1];
    const second = uid("turn");
    await sendTurn(token, cid, second, "second answer");
    await waitForTurn(token, cid, second);
    const { messages } = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const after = messages[1];
    // The first turn's events are (partly) gone from the log, its message is not.
    expect(after.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`)).toEqual(before.parts.map((p: { type: string; id: string }) => `${p.type}:${p.id}`));
    expect(after.parts.some((p: { type: string }) => p.type === "reasoning")).toBe(true);
    expect(after.parts.some((p: { type: string }) => p.type === "tool")).toBe(true);
    expect(after.parts.filter((p: { type: string }) => p.type === "text").map((p: { text: string }) => p.text).join("\n\n")).toBe(after.text);
    const summary = await json(await api(`/v1/conversations/${cid}`, { token }));
    expect(summary.lastEventId).toBeGreaterThan(30);
  });
});
