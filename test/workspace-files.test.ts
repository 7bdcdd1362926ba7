/**
 * The workspace in the user's hands (docs/api.md#the-workspace, #attachments), through the public
 * API against the emulator's file tree (its seeded project: README.md, package.json, src/server.ts,
 * src/http.ts, assets/logo.png): listing, reading text and binary, path refusals, downloads of a
 * file and of the whole workspace (a real tar.gz), a stopped sandbox resumed, no sandbox, a
 * deployment without the routes; attachments written, sniffed, named safely and handed to a turn.
 */
import { SELF } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { api, BASE, emulator, json, sendTurn, tokenFor, uid, userWithSandbox, waitForTurn } from "./helpers";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
});

const files = (token: string, path?: string, route = "") =>
  api(`/v1/environment/files${route}${path === undefined ? "" : `?path=${encodeURIComponent(path)}`}`, { token });

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function upload(token: string, cid: string, parts: Array<[string, Blob | string, string?]>): Promise<Response> {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, value, filename);
  }
  return SELF.fetch(`${BASE}/v1/conversations/${cid}/attachments`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
}

/** The files of a tar (ustar: 512-byte headers, each file's bytes padded to 512), by name. */
function untar(tar: Uint8Array): Map<string, Uint8Array> {
  const out = new Map<string, Uint8Array>();
  const text = (from: number, length: number) =>
    new TextDecoder().decode(tar.subarray(from, from + length)).replace(/\0.*$/s, "");
  for (let at = 0; at + 512 <= tar.length; ) {
    const name = text(at, 100);
    if (name === "") break;
    expect(text(at + 257, 5)).toBe("ustar");
    const size = Number.parseInt(text(at + 124, 12).trim() || "0", 8);
    const prefix = text(at + 345, 155);
    const type = text(at + 156, 1);
    if (type === "0" || type === "") out.set(prefix ? `${prefix}/${name}` : name, tar.slice(at + 512, at + 512 + size));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

async function gunzip(bytes: ArrayBuffer): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

describe("browsing the workspace", () => {
  it("a user without a sandbox: 404 environment_not_found, and no sandbox is created by the read", async () => {
    const token = await tokenFor(uid("user"));
    for (const route of ["", "/content", "/download"]) {
      const res = await files(token, route === "/content" ? "README.md" : undefined, route);
      expect(res.status).toBe(404);
      expect((await json(res)).error.code).toBe("environment_not_found");
    }
    expect((await json(await api("/v1/environment", { token }))).environment).toBeNull();
  });

  it("lists the root and a folder: directories first, then by name, paths repository-relative", async () => {
    const { token } = await userWithSandbox();
    const root = await json(await files(token));
    expect(root.path).toBe(".");
    expect(root.truncated).toBe(false);
    expect(root.entries.map((e: { path: string; kind: string }) => [e.path, e.kind])).toEqual([
      ["assets", "dir"],
      ["src", "dir"],
      ["README.md", "file"],
      ["package.json", "file"],
    ]);
    const readme = root.entries.find((e: { name: string }) => e.name === "README.md");
    expect(readme.size).toBe(new TextEncoder().encode("# Demo project\n\nA small service with a test suite.\n").length);
    expect(Date.parse(readme.modified)).not.toBeNaN();
    const src = await json(await files(token, "src/"));
    expect(src.path).toBe("src");
    expect(src.entries.map((e: { path: string }) => e.path)).toEqual(["src/http.ts", "src/server.ts"]);
  });

  it("reads a text file as text and a binary file as base64, marked binary", async () => {
    const { token } = await userWithSandbox();
    const text = await json(await files(token, "./README.md", "/content"));
    expect(text).toEqual({
      path: "README.md",
      size: 51,
      binary: false,
      encoding: "utf8",
      content: "# Demo project\n\nA small service with a test suite.\n",
    });
    const logo = await json(await files(token, "assets/logo.png", "/content"));
    expect(logo.binary).toBe(true);
    expect(logo.encoding).toBe("base64");
    expect(logo.size).toBe(300);
    const bytes = Uint8Array.from(atob(logo.content), (c) => c.charCodeAt(0));
    expect(bytes.length).toBe(300);
    expect([...bytes.subarray(0, 8)]).toEqual(PNG);
  });

  it("refuses paths that escape the workspace, are absolute, carry control characters or are overlong", async () => {
    const { token } = await userWithSandbox();
    const cases: Array<[string, RegExp]> = [
      ["../etc/passwd", /no \.\. segment/],
      ["src/../../x", /no \.\. segment/],
      ["src/../README.md", /no \.\. segment/],
      ["/etc/passwd", /relative to the workspace/],
      ["a\u0001b", /control characters/],
      ["line\nbreak", /control characters/],
      ["src\\http.ts", /backslash/],
      ["x".repeat(5000), /longer than/],
    ];
    for (const [path, message] of cases) {
      for (const route of ["", "/content", "/download"]) {
        const res = await files(token, path, route);
        expect(res.status, `${route} ${JSON.stringify(path)}`).toBe(400);
        const body = await json(res);
        expect(body.error.code).toBe("path_invalid");
        expect(body.error.message).toMatch(message);
      }
    }
  });

  it("a missing file is 404 file_not_found; a folder's content, a file's listing are 400", async () => {
    const { token } = await userWithSandbox();
    const missing = await files(token, "nope/none.txt", "/content");
    expect(missing.status).toBe(404);
    expect((await json(missing)).error.code).toBe("file_not_found");
    expect((await json(await files(token, "nope"))).error.code).toBe("file_not_found");
    const folder = await files(token, "src", "/content");
    expect(folder.status).toBe(400);
    expect((await json(folder)).error.code).toBe("not_a_file");
    const file = await files(token, "README.md");
    expect(file.status).toBe(400);
    expect((await json(file)).error.code).toBe("not_a_directory");
  });

  it("a file over 1 MiB is 413 file_too_large naming its size (nothing read); it can still be downloaded", async () => {
    const { token, sandboxId } = await userWithSandbox();
    const big = "a".repeat(1024 * 1024 + 1);
    await emulator(`/_emulator/sandboxes/${sandboxId}/files`, { path: "big.txt", content: big });
    const res = await files(token, "big.txt", "/content");
    expect(res.status).toBe(413);
    const body = await json(res);
    expect(body.error.code).toBe("file_too_large");
    expect(body.error.details).toMatchObject({ size: 1024 * 1024 + 1, maxBytes: 1024 * 1024 });
    expect(body.error.message).toContain("1048577 bytes");
    const download = await files(token, "big.txt", "/download");
    expect(download.status).toBe(200);
    expect((await download.text()).length).toBe(1024 * 1024 + 1);
  });

  it("downloads a file as an attachment with its name, and the whole workspace as a tar.gz holding its files", async () => {
    const { token, sandboxId } = await userWithSandbox();
    const file = await files(token, "src/http.ts", "/download");
    expect(file.status).toBe(200);
    expect(file.headers.get("content-disposition")).toBe(`attachment; filename="http.ts"; filename*=UTF-8''http.ts`);
    expect(await file.text()).toContain("export function serve");

    await emulator(`/_emulator/sandboxes/${sandboxId}/files`, {
      path: "notes/today.md",
      content: "written by a test\n",
    });
    const whole = await files(token, undefined, "/download");
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-type")).toBe("application/gzip");
    expect(whole.headers.get("content-disposition")).toContain('filename="workspace.tar.gz"');
    const entries = untar(await gunzip(await whole.arrayBuffer()));
    expect(new TextDecoder().decode(entries.get("README.md"))).toBe(
      "# Demo project\n\nA small service with a test suite.\n",
    );
    expect(new TextDecoder().decode(entries.get("notes/today.md"))).toBe("written by a test\n");
    expect([...entries.get("assets/logo.png")!.subarray(0, 8)]).toEqual(PNG);

    const folder = await files(token, "src", "/download");
    expect(folder.headers.get("content-disposition")).toContain('filename="src.tar.gz"');
    expect([...untar(await gunzip(await folder.arrayBuffer())).keys()].sort()).toEqual(["http.ts", "server.ts"]);
  });

  it("a stopped sandbox is resumed for a read, as a turn would, and the files are there", async () => {
    const { token, sandboxId } = await userWithSandbox();
    expect((await api("/v1/environment/stop", { token, method: "POST" })).status).toBe(200);
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("stopped");
    const res = await files(token, "README.md", "/content");
    expect(res.status).toBe(200);
    expect((await json(res)).content).toContain("Demo project");
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("running");
    const view = await json(await api("/v1/environment", { token }));
    expect(view.environment.environmentId).toBe(sandboxId);
    expect(view.actions[0]).toMatchObject({ action: "resumed", environmentId: sandboxId });
  });

  it("a sandbox that stopped since the gateway last looked: the read finds it stopped, resumes it and is made again", async () => {
    const { token, sandboxId } = await userWithSandbox();
    // Stopped upstream (its idle timeout, say) while the gateway still trusts its last check.
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "stopped" });
    const res = await files(token, "src");
    expect(res.status).toBe(200);
    expect((await json(res)).entries.map((e: { path: string }) => e.path)).toEqual(["src/http.ts", "src/server.ts"]);
    expect((await emulator(`/_emulator/sandboxes/${sandboxId}`)).status).toBe("running");
  });

  it("a gone sandbox is not replaced by a read: 404 environment_not_found", async () => {
    const { token, sandboxId } = await userWithSandbox();
    await emulator(`/_emulator/sandboxes/${sandboxId}/status`, { status: "expired" });
    const res = await files(token);
    expect(res.status).toBe(404);
    expect((await json(res)).error.code).toBe("environment_not_found");
    expect((await json(await api("/v1/environment", { token }))).environment.environmentId).toBe(sandboxId);
  });

  it("a deployment without the file routes: 501 capability_denied naming workspace.files", async () => {
    const { token, cid } = await userWithSandbox();
    await variants({ workspace: "missing" });
    for (const [path, route] of [
      [undefined, ""],
      ["README.md", "/content"],
      ["src", "/download"],
    ] as const) {
      const res = await files(token, path, route);
      expect(res.status, route).toBe(501);
      const body = await json(res);
      expect(body.error.code).toBe("capability_denied");
      expect(body.error.details.missing).toEqual(["workspace.files"]);
    }
    const attach = await upload(token, cid, [["file", new Blob(["hi"]), "a.txt"]]);
    expect(attach.status).toBe(501);
    expect((await json(attach)).error.details.missing).toEqual(["workspace.files"]);
  });

  it("needs the user's token", async () => {
    expect((await api("/v1/environment/files")).status).toBe(401);
  });
});

describe("attachments", () => {
  it("writes the file under uploads/, its type sniffed from its bytes and its name made safe; it reads back", async () => {
    const { token, cid } = await userWithSandbox();
    const png = new Uint8Array([...PNG, 0, 0, 0, 13, 1, 2, 3]);
    const res = await upload(token, cid, [
      ["file", new Blob([png], { type: "text/plain" }), "../../.evil\u0007 name.png"],
    ]);
    expect(res.status).toBe(201);
    const attachment = await json(res);
    expect(attachment).toEqual({
      id: expect.stringMatching(/^att_[A-Za-z0-9]{12}$/),
      path: `uploads/${attachment.id.slice(4)}-evil name.png`,
      name: "evil name.png",
      size: png.length,
      mediaType: "image/png",
    });
    const back = await json(await files(token, attachment.path, "/content"));
    expect(back.binary).toBe(true);
    expect(Uint8Array.from(atob(back.content), (c) => c.charCodeAt(0))).toEqual(png);
    const listed = await json(await files(token, "uploads"));
    expect(listed.entries.map((e: { path: string }) => e.path)).toEqual([attachment.path]);
  });

  it("an image whose bytes do not match its declared type is sniffed, not trusted", async () => {
    const { token, cid } = await userWithSandbox();
    const text = await json(
      await upload(token, cid, [["file", new Blob(["plain words"], { type: "image/png" }), "x.png"]]),
    );
    expect(text.mediaType).toBe("text/plain");
    const other = await json(
      await upload(token, cid, [
        ["file", new Blob([new Uint8Array([0, 1, 2, 0xff])], { type: "image/jpeg" }), "y.jpg"],
      ]),
    );
    expect(other.mediaType).toBe("application/octet-stream");
    const pdf = await json(await upload(token, cid, [["file", new Blob(["%PDF-1.7\n%\u00e2\u00e3"]), "doc"]]));
    expect(pdf.mediaType).toBe("application/pdf");
  });

  it("refuses what is not one file field: 400 naming the field, 415 for another body type", async () => {
    const { token, cid } = await userWithSandbox();
    const two = await upload(token, cid, [
      ["file", new Blob(["a"]), "a.txt"],
      ["file", new Blob(["b"]), "b.txt"],
    ]);
    expect(two.status).toBe(400);
    expect((await json(two)).error.code).toBe("invalid_request");
    const extra = await upload(token, cid, [
      ["file", new Blob(["a"]), "a.txt"],
      ["note", "hi"],
    ]);
    expect(extra.status).toBe(400);
    expect((await json(extra)).error.message).toContain("note");
    const notFile = await upload(token, cid, [["file", "just text"]]);
    expect(notFile.status).toBe(400);
    const asJson = await api(`/v1/conversations/${cid}/attachments`, { token, body: { file: "x" } });
    expect(asJson.status).toBe(415);
  });

  it("an upload may come first: a new user's new conversation gets its sandbox, and its first turn names the file", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const res = await upload(token, cid, [["file", new Blob(["the spec"]), "spec.txt"]]);
    expect(res.status, await res.clone().text()).toBe(201);
    const spec = await json(res);
    // Written into the sandbox the upload brought up, before any turn.
    expect((await json(await files(token, spec.path, "/content"))).content).toBe("the spec");
    // Not listed until a turn is sent; then its first turn names the file.
    const listed = async () =>
      (await json(await api("/v1/conversations", { token }))).conversations.map(
        (c: { conversationId: string }) => c.conversationId,
      );
    expect(await listed()).toEqual([]);
    expect((await sendTurn(token, cid, "t1", "read the spec", { attachments: [spec.id] })).status).toBe(202);
    const turn = await waitForTurn(token, cid, "t1");
    expect(turn.status).toBe("completed");
    const execution = await emulator(`/_emulator/executions/${turn.executionId}`);
    expect(execution.request.message).toContain(`Attached: ${spec.path}, text/plain, 8 bytes`);
    expect(await listed()).toEqual([cid]);
  });

  it("a turn naming attachments: the message it is dispatched with says where each is", async () => {
    const { token, cid } = await userWithSandbox();
    const notes = await json(await upload(token, cid, [["file", new Blob(["some notes"]), "notes.txt"]]));
    const data = await json(await upload(token, cid, [["file", new Blob([new Uint8Array(2048)]), "data.bin"]]));
    const sent = await sendTurn(token, cid, "t2", "look at these", { attachments: [notes.id, data.id] });
    expect(sent.status).toBe(202);
    const turn = await waitForTurn(token, cid, "t2");
    expect(turn.status).toBe("completed");
    const execution = await emulator(`/_emulator/executions/${turn.executionId}`);
    expect(execution.request.message).toBe(
      `look at these\n\nAttached: ${notes.path}, text/plain, 10 bytes\nAttached: ${data.path}, application/octet-stream, 2 KB`,
    );
    expect(execution.request.parts).toEqual([{ type: "text", text: execution.request.message }]);
    // The agent's next turn remembers the message as sent.
    await sendTurn(token, cid, "t3", "[recall]");
    expect((await waitForTurn(token, cid, "t3")).result.text).toContain(`Attached: ${notes.path}`);
    // The same turn id with other attachments is another request.
    const again = await sendTurn(token, cid, "t2", "look at these", { attachments: [notes.id] });
    expect(again.status).toBe(409);
    expect((await json(again)).error.code).toBe("turn_conflict");
  });

  it("an image goes as a file part where the backend's catalog says attachments (opencode)", async () => {
    const { token, cid } = await userWithSandbox();
    const png = new Uint8Array(2048);
    png.set(PNG);
    const image = await json(await upload(token, cid, [["file", new Blob([png]), "shot.png"]]));
    await sendTurn(token, cid, "t2", "look", { attachments: [image.id] });
    const turn = await waitForTurn(token, cid, "t2");
    const execution = await emulator(`/_emulator/executions/${turn.executionId}`);
    expect(execution.request.parts).toEqual([
      { type: "text", text: `look\n\nAttached: ${image.path}, image/png, 2 KB` },
      { type: "file", mediaType: "image/png", filename: "shot.png", url: `file:///home/agent/${image.path}` },
    ]);
  });

  it("a backend whose catalog says no attachments gets no image part; the message still says where it is", async () => {
    const { token, cid } = await userWithSandbox();
    const image = await json(await upload(token, cid, [["file", new Blob([new Uint8Array(PNG)]), "a.png"]]));
    await sendTurn(token, cid, "t2", "see", {
      attachments: [image.id],
      providerOptions: { backend: { type: "codex" } },
    });
    const turn = await waitForTurn(token, cid, "t2");
    const execution = await emulator(`/_emulator/executions/${turn.executionId}`);
    expect(execution.request.message).toContain(`Attached: ${image.path}, image/png, 8 bytes`);
    expect(execution.request.parts).toEqual([{ type: "text", text: execution.request.message }]);
  });

  it("an attachment id the conversation did not issue is 400 attachment_not_found, and no turn is stored", async () => {
    const { token, cid } = await userWithSandbox();
    const other = uid("conv");
    await sendTurn(token, other, "o1", "hello");
    await waitForTurn(token, other, "o1");
    const foreign = await json(await upload(token, other, [["file", new Blob(["x"]), "x.txt"]]));
    for (const id of [foreign.id, "att_AAAAAAAAAAAA"]) {
      const res = await sendTurn(token, cid, "t2", "with it", { attachments: [id] });
      expect(res.status).toBe(400);
      const body = await json(res);
      expect(body.error.code).toBe("attachment_not_found");
      expect(body.error.details.missing).toEqual([id]);
    }
    expect((await api(`/v1/conversations/${cid}/turns/t2`, { token })).status).toBe(404);
    const malformed = await sendTurn(token, cid, "t2", "with it", { attachments: ["../x"] });
    expect(malformed.status).toBe(400);
    expect((await json(malformed)).error.code).toBe("invalid_request");
  });
});
