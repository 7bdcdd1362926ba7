/**
 * The workspace with PROVIDER=cli-bridge, against the stand-in: the CLI Bridge has no file routes
 * (docs/cli-bridge-wire.md), so browsing, downloads and attachments answer 501 capability_denied
 * naming `workspace.files`, before any call, and a turn naming an attachment is refused. Nor does it
 * take checkpoints: a turn says so, its changes are its tool calls', and undo is 501 naming
 * `workspace.checkpoints`.
 */
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, BASE, json, sendTurn, tokenFor, uid, waitForTurn } from "../helpers";

describe("the workspace with the CLI Bridge", () => {
  it("files, downloads and attachments: 501 capability_denied naming workspace.files", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "hello", { model: "codex/default" });
    expect((await waitForTurn(token, cid, "t1")).status).toBe("completed");
    for (const path of [
      "/v1/environment/files",
      "/v1/environment/files/content?path=README.md",
      "/v1/environment/files/download",
    ]) {
      const res = await api(path, { token });
      expect(res.status, path).toBe(501);
      const body = await json(res);
      expect(body.error.code).toBe("capability_denied");
      expect(body.error.details.missing).toEqual(["workspace.files"]);
    }
    const form = new FormData();
    form.append("file", new Blob(["hi"]), "a.txt");
    const attach = await SELF.fetch(`${BASE}/v1/conversations/${cid}/attachments`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: form,
    });
    expect(attach.status).toBe(501);
    expect((await json(attach)).error.details.missing).toEqual(["workspace.files"]);
    const turn = await sendTurn(token, cid, "t2", "with a file", {
      model: "codex/default",
      attachments: ["att_AAAAAAAAAAAA"],
    });
    expect(turn.status).toBe(400);
    expect((await json(turn)).error.code).toBe("attachment_not_found");
  });

  it("no checkpoints: a turn's view says so, and undo and redo are 501 naming workspace.checkpoints", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    await sendTurn(token, cid, "t1", "hello", { model: "codex/default" });
    const turn = await waitForTurn(token, cid, "t1");
    expect(turn.checkpoint).toEqual({ status: "unavailable", message: "this provider takes no checkpoints" });
    for (const direction of ["undo", "redo"]) {
      const res = await api(`/v1/conversations/${cid}/turns/t1/${direction}`, {
        token,
        body: { operationId: uid("op") },
      });
      expect(res.status).toBe(501);
      const body = await json(res);
      expect(body.error).toMatchObject({ code: "capability_denied", details: { missing: ["workspace.checkpoints"] } });
    }
  });
});
