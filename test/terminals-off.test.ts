/**
 * A deployment that offers no terminals (`TERMINAL_MAX_PER_USER=0`, docs/configuration.md): every
 * terminal route, and interactive mode, answers 501 naming the capability, and nothing is opened in
 * the sandbox.
 */
import { describe, expect, it } from "vitest";
import { api, json, runTurn, tokenFor, uid } from "./helpers";

describe("terminals turned off", () => {
  it("answers 501 capability_denied naming interactiveTerminal (interactiveAgent for the agent's UI)", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await runTurn(token, cid, "hello");
    for (const [method, path, missing] of [
      ["POST", "/v1/environment/terminals", "interactiveTerminal"],
      ["GET", "/v1/environment/terminals", "interactiveTerminal"],
      ["GET", "/v1/environment/terminals/t1/ws", "interactiveTerminal"],
      ["POST", `/v1/conversations/${cid}/interactive`, "interactiveAgent"],
    ] as const) {
      const res = await api(path, { token, method, ...(method === "POST" ? { body: {} } : {}) });
      expect(res.status, `${method} ${path}`).toBe(501);
      const body = await json(res);
      expect(body.error).toMatchObject({ code: "capability_denied", details: { missing: [missing] } });
      expect(body.error.message).toContain("TERMINAL_MAX_PER_USER");
    }
  });
});
