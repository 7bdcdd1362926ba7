/**
 * The workspace's bounds (docs/api.md#the-workspace, #attachments), in the limits project where
 * they are small: ATTACHMENT_MAX_BYTES 4096, ATTACHMENTS_PER_CONVERSATION 3,
 * WORKSPACE_DOWNLOAD_MAX_BYTES 2048 (vitest.config.ts).
 */
import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, BASE, emulator, json, userWithSandbox } from "./helpers";

afterEach(async () => {
  await emulator("/_emulator/variants", {});
});

function upload(token: string, cid: string, bytes: Uint8Array | string, name = "f.bin"): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob([bytes]), name);
  return SELF.fetch(`${BASE}/v1/conversations/${cid}/attachments`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
}

/** Bytes gzip cannot shrink (a fixed pseudo-random pattern). */
function noise(n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = 12345;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = x >> 16;
  }
  return out;
}

const b64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

describe("attachment bounds", () => {
  it("a file over ATTACHMENT_MAX_BYTES is 413 attachment_too_large, and nothing is written", async () => {
    const { token, cid } = await userWithSandbox();
    const res = await upload(token, cid, new Uint8Array(4097));
    expect(res.status).toBe(413);
    const body = await json(res);
    expect(body.error.code).toBe("attachment_too_large");
    expect(body.error.details.maxBytes).toBe(4096);
    expect((await api("/v1/environment/files?path=uploads", { token })).status).toBe(404);
    expect((await upload(token, cid, new Uint8Array(4096))).status).toBe(201);
  });

  it("past ATTACHMENTS_PER_CONVERSATION a conversation takes no more: 409 attachment_limit_reached", async () => {
    const { token, cid } = await userWithSandbox();
    for (let i = 0; i < 3; i++) expect((await upload(token, cid, `file ${i}`)).status).toBe(201);
    const res = await upload(token, cid, "one more");
    expect(res.status).toBe(409);
    expect((await json(res)).error).toMatchObject({ code: "attachment_limit_reached", details: { max: 3 } });
    const listed = await json(await api("/v1/environment/files?path=uploads", { token }));
    expect(listed.entries).toHaveLength(3);
  });

  it("a sandbox that refuses the file as too large: 413 attachment_too_large", async () => {
    const { token, cid } = await userWithSandbox();
    await emulator("/_emulator/variants", { uploadMaxBytes: 100 });
    const res = await upload(token, cid, new Uint8Array(200));
    expect(res.status).toBe(413);
    expect((await json(res)).error.code).toBe("attachment_too_large");
  });
});

describe("download bounds", () => {
  it("a file over WORKSPACE_DOWNLOAD_MAX_BYTES is 413 before any byte; a directory's tar.gz past it is cut off with an error", async () => {
    const { token, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/files`, {
      path: "big/noise.bin",
      content: b64(noise(3000)),
      encoding: "base64",
    });
    const file = await api("/v1/environment/files/download?path=big/noise.bin", { token });
    expect(file.status).toBe(413);
    expect((await json(file)).error).toMatchObject({ code: "file_too_large", details: { size: 3000, maxBytes: 2048 } });
    const dir = await api("/v1/environment/files/download?path=big", { token });
    expect(dir.status).toBe(200);
    // The stream errors past the bound rather than passing more (or buffering it).
    await expect(dir.arrayBuffer()).rejects.toThrow();
  });
});
