import { describe, expect, it } from "vitest";
import { ProviderError } from "../errors";
import { HttpTransport } from "../http";
import { TangleWorkspaceFiles } from "./workspace-files";

/** A workspace client over scripted answers, keeping the requests it made. */
function files(answers: Array<Response | ((req: Request) => Response)>, root = "/home/agent") {
  const seen: Request[] = [];
  const client = new HttpTransport({
    baseUrl: "https://sandbox.example",
    bearer: "key",
    headersTimeoutMs: 1000,
    fetch: async (req) => {
      seen.push(req);
      const next = answers.shift();
      if (!next) throw new Error("no more answers");
      return typeof next === "function" ? next(req) : next;
    },
    sleep: async () => undefined,
  });
  return { files: new TangleWorkspaceFiles(client, root), seen };
}

async function failure(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ProviderError) return err;
    throw err;
  }
  throw new Error("expected a failure");
}

const entry = { name: "a.ts", size: 3, isDir: false, isFile: true, isSymlink: false, modTime: 1_700_000_000_000 };

describe("the workspace's files on the Sandbox", () => {
  it("lists wrapped or flat, paths repository-relative, each segment percent-encoded after the root", async () => {
    const { files: wrapped, seen } = files([Response.json({ success: true, data: { entries: [entry] } })]);
    expect(await wrapped.list("sbx", "src/my dir")).toEqual([
      { name: "a.ts", path: "src/my dir/a.ts", kind: "file", size: 3, modified: "2023-11-14T22:13:20.000Z" },
    ]);
    expect(new URL(seen[0]!.url).pathname).toBe("/v1/sandboxes/sbx/runtime/fs/list/home/agent/src/my%20dir");
    expect(new URL(seen[0]!.url).search).toBe("?all=true&long=true");
    const { files: flat } = files([
      Response.json({
        entries: [
          { name: "lib", isDir: true, modTime: "2026-01-01T00:00:00Z" },
          { path: "/home/agent/x.png", isSymlink: true },
          { name: "..", isDir: true },
          { name: "a/b" },
        ],
      }),
    ]);
    expect(await flat.list("sbx", ".")).toEqual([
      { name: "lib", path: "lib", kind: "dir", size: null, modified: "2026-01-01T00:00:00.000Z" },
      { name: "x.png", path: "x.png", kind: "symlink", size: null, modified: null },
    ]);
  });

  it("a 404 is the sandbox gone, the file missing or the route missing, by its code or by a stat of the root", async () => {
    const gone = files([Response.json({ error: { code: "SANDBOX_NOT_FOUND", message: "x" } }, { status: 404 })]);
    expect((await failure(gone.files.stat("sbx", "a"))).code).toBe("environment_gone");
    const missing = files([Response.json({ error: { code: "FILE_NOT_FOUND", message: "x" } }, { status: 404 })]);
    expect(await failure(missing.files.stat("sbx", "a"))).toMatchObject({
      code: "not_found",
      options: { details: { missing: "file" } },
    });
    const route = files([Response.json({ error: { code: "NOT_FOUND", message: "no route" } }, { status: 404 })]);
    expect(await failure(route.files.list("sbx", "."))).toMatchObject({
      code: "capability_denied",
      options: { details: { missing: ["workspace.files"] } },
    });
    // The sidecar's other shape: `{ success: false, error: "text" }`, no code: the root says which.
    const text = () => Response.json({ success: false, error: "ENOENT: no such file" }, { status: 404 });
    const rootThere = files([text(), Response.json({ success: true, data: { name: "agent", isDir: true } })]);
    expect((await failure(rootThere.files.stat("sbx", "nope.txt"))).options.details).toEqual({ missing: "file" });
    expect(new URL(rootThere.seen[1]!.url).pathname).toBe("/v1/sandboxes/sbx/runtime/fs/stat/home/agent");
    const rootMissing = files([text(), new Response("Not Found", { status: 404 })]);
    expect((await failure(rootMissing.files.stat("sbx", "nope.txt"))).code).toBe("capability_denied");
    const unimplemented = files([new Response("", { status: 501 })]);
    expect((await failure(unimplemented.files.list("sbx", "."))).code).toBe("capability_denied");
  });

  it("a stopped sandbox, a listing of a file", async () => {
    const stopped = files([
      Response.json({ error: { code: "SANDBOX_NOT_RUNNING", message: "stopped" } }, { status: 409 }),
    ]);
    expect((await failure(stopped.files.list("sbx", "."))).code).toBe("environment_not_running");
    const file = files([Response.json({ error: { code: "NOT_A_DIRECTORY", message: "a file" } }, { status: 400 })]);
    expect((await failure(file.files.list("sbx", "README.md"))).options.details).toEqual({ notADirectory: true });
  });

  it("reads at most the bound through the download, and says when there was more", async () => {
    const bytes = new Uint8Array(10).map((_, i) => i);
    const { files: small } = files([new Response(bytes)]);
    expect(await small.read("sbx", "a.bin", 10)).toEqual({ bytes, truncated: false });
    const { files: large, seen } = files([new Response(bytes)]);
    expect(await large.read("sbx", "a.bin", 4)).toEqual({ bytes: bytes.subarray(0, 4), truncated: true });
    expect(new URL(seen[0]!.url).pathname).toBe("/v1/sandboxes/sbx/runtime/fs/download/home/agent/a.bin");
  });

  it("uploads a multipart file and path; a size answered wrapped or flat, or none (unknown)", async () => {
    const { files: up, seen } = files(
      [
        Response.json({ success: true, data: { path: "/srv/ws/uploads/x", size: 2 } }),
        Response.json({ size: 2 }),
        new Response(null, { status: 204 }),
      ],
      "/srv/ws/",
    );
    expect(await up.upload("sbx", "uploads/x", new Uint8Array([1, 2]), "x")).toEqual({ size: 2 });
    const form = await seen[0]!.formData();
    expect(form.get("path")).toBe("/srv/ws/uploads/x");
    const file = form.get("file") as File;
    expect(file.name).toBe("x");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(new Uint8Array([1, 2]));
    expect(await up.upload("sbx", "uploads/x", new Uint8Array([1, 2]), "x")).toEqual({ size: 2 });
    expect(await up.upload("sbx", "uploads/x", new Uint8Array([1, 2]), "x")).toEqual({ size: null });
  });

  it("a sandbox's 413 on an upload is said as too large", async () => {
    const big = files([Response.json({ error: { code: "PAYLOAD_TOO_LARGE", message: "cap" } }, { status: 413 })]);
    expect((await failure(big.files.upload("sbx", "uploads/x", new Uint8Array(1), "x"))).options.details).toEqual({
      payloadTooLarge: true,
    });
  });
});
