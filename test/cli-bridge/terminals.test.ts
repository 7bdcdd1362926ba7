/**
 * Terminals with PROVIDER=cli-bridge: the CLI Bridge serves no terminal and no agent TUI
 * (docs/cli-bridge-wire.md), so the routes answer 501 capability_denied naming the capability, before
 * any call upstream.
 */
import { describe, expect, it } from "vitest";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

describe("terminals with the CLI Bridge", () => {
  it("a terminal, its list and its socket: 501 naming interactiveTerminal; interactive mode: 501 naming interactiveAgent", async () => {
    const token = await tokenFor(uid("user"));
    for (const [method, path] of [
      ["POST", "/v1/environment/terminals"],
      ["GET", "/v1/environment/terminals"],
      ["GET", "/v1/environment/terminals/t1"],
      ["DELETE", "/v1/environment/terminals/t1"],
    ] as const) {
      const res = await api(path, { token, method, ...(method === "POST" ? { body: {} } : {}) });
      expect(res.status, `${method} ${path}`).toBe(501);
      const body = await json(res);
      expect(body.error).toMatchObject({ code: "capability_denied", details: { missing: ["interactiveTerminal"] } });
    }
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "hello", { model: "codex/default" });
    expect((await waitForTurn(token, cid, "t1")).status).toBe("completed");
    const res = await api(`/v1/conversations/${cid}/interactive`, { token, body: {} });
    expect(res.status).toBe(501);
    expect((await json(res)).error.details.missing).toEqual(["interactiveAgent"]);
  });
});
