/**
 * The sandbox's life with PROVIDER=cli-bridge, against the stand-in (docs/api.md#the-sandboxs-life):
 * the bridge reports no lifecycle, limits, resources or account, so every surface is unavailable
 * with the reason; its one environment is every user's, so no user may stop or delete it; deleting
 * an account still ends every conversation's session on the bridge and leaves nothing readable.
 */
import { describe, expect, it } from "vitest";
import { api, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

const CODEX = "codex/default";

describe("the environment with the CLI Bridge", () => {
  it("GET /v1/environment: the one environment, every surface unavailable with the reason, stop and delete refused", async () => {
    const token = await tokenFor(uid("user"));
    expect(await json(await api("/v1/environment", { token }))).toMatchObject({
      provider: "cli-bridge",
      environment: null,
      capabilities: { stop: false, delete: false },
    });
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "hello", { model: CODEX });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");

    const view = await json(await api("/v1/environment", { token }));
    expect(view.environment).toMatchObject({ environmentId: "cli-bridge", requested: null });
    for (const surface of Object.values(view.environment.reported)) {
      expect(surface).toEqual({ state: "unavailable", reason: expect.stringContaining("CLI Bridge") });
    }
    expect(view.accountUsage).toBeUndefined();
    expect(view.actions).toEqual([{ action: "created", at: expect.any(String), environmentId: "cli-bridge" }]);

    for (const [path, method] of [
      ["/v1/environment/stop", "POST"],
      ["/v1/environment", "DELETE"],
    ] as const) {
      const res = await api(path, { token, method });
      expect(res.status).toBe(501);
      expect((await json(res)).error.code).toBe("environment_control_unsupported");
    }
  });

  it("DELETE /v1/me ends the conversations on the bridge and leaves nothing readable", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "hello", { model: CODEX });
    expect((await waitForTurn(token, cid, turnId)).status).toBe("completed");
    const res = await api("/v1/me", { token, method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ state: "deleted", conversationsDeleted: 1 });
    const read = await api(`/v1/conversations/${cid}/messages`, { token });
    expect(read.status).toBe(410);
    expect((await json(read)).error.code).toBe("account_deleted");
  });
});
