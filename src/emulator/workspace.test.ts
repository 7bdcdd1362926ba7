/**
 * The emulator's workspace (docs/sandbox-wire.md §10), read over `fetch`: a new sandbox's seeded
 * project, the agent's tool calls changing it ([edits] and the file directives), and the file
 * routes after `/runtime` (list, stat, read, download, download-dir as a real tar.gz, upload with
 * its cap), paths outside the workspace refused, a deleted sandbox's files gone.
 */
import { describe, expect, it } from "vitest";
import { dispatch, type Emu, fastSandbox, fileText, json, readRaw, runningSandbox, runtime } from "./test-support";

const ROOT = "/home/agent";

/** Reads `{ entries }` of a folder. */
async function list(emu: Emu, id: string, path: string, query = "?all=true&long=true"): Promise<any[]> {
  const res = await emu.api("GET", runtime(id, `/fs/list${path}${query}`));
  expect(res.status).toBe(200);
  return (await json(res)).data.entries;
}

/** The entries of a tar archive: name and bytes (ustar, with PAX `path` records). */
function untar(tar: Uint8Array): Array<{ name: string; type: string; bytes: Uint8Array }> {
  const out: Array<{ name: string; type: string; bytes: Uint8Array }> = [];
  const text = (a: number, b: number, at: number) =>
    new TextDecoder().decode(tar.subarray(at + a, at + b)).replace(/\0.*$/s, "");
  let at = 0;
  let paxPath: string | undefined;
  while (at + 512 <= tar.length && tar[at] !== 0) {
    const size = Number.parseInt(text(124, 136, at).trim(), 8);
    const type = text(156, 157, at);
    const prefix = text(345, 500, at);
    const name = prefix ? `${prefix}/${text(0, 100, at)}` : text(0, 100, at);
    const bytes = tar.slice(at + 512, at + 512 + size);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : tar[at + i]!;
    expect(Number.parseInt(text(148, 156, at).trim(), 8)).toBe(sum);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      paxPath = /\d+ path=(.*)\n/.exec(new TextDecoder().decode(bytes))?.[1];
      continue;
    }
    out.push({ name: paxPath ?? name, type, bytes });
    paxPath = undefined;
  }
  return out;
}

describe("the emulator's workspace", () => {
  it("starts a sandbox with the seeded project, listed, stated and read (text, base64) under /home/agent", async () => {
    const { emu, id } = await fastSandbox("ws-seed");
    const root = await list(emu, id, ROOT);
    expect(root.map((e) => [e.name, e.isDir])).toEqual([
      ["assets", true],
      ["package.json", false],
      ["README.md", false],
      ["src", true],
    ]);
    const readme = root.find((e) => e.name === "README.md");
    expect(readme).toMatchObject({
      path: `${ROOT}/README.md`,
      isFile: true,
      isSymlink: false,
      permissions: "-rw-r--r--",
    });
    expect(Number.isNaN(Date.parse(readme.modTime))).toBe(false);
    // Hidden names only with all=true; permissions only with long=true.
    await emu.control(`/_emulator/sandboxes/${id}/files`, { path: ".env", content: "A=1\n" });
    expect((await list(emu, id, ROOT, "")).map((e) => e.name)).not.toContain(".env");
    expect((await list(emu, id, ROOT, "")).every((e) => e.permissions === undefined)).toBe(true);
    expect((await list(emu, id, ROOT)).map((e) => e.name)).toContain(".env");
    expect((await list(emu, id, `${ROOT}/src`)).map((e) => e.path)).toEqual([
      `${ROOT}/src/http.ts`,
      `${ROOT}/src/server.ts`,
    ]);

    const stat = await json(await emu.api("GET", runtime(id, `/fs/stat${ROOT}/assets/logo.png`)));
    expect(stat.data).toMatchObject({ name: "logo.png", size: 300, isFile: true });
    const read = await json(await emu.api("POST", runtime(id, "/files/read"), { path: "README.md" }));
    expect(read.data).toEqual({
      content: "# Demo project\n\nA small service with a test suite.\n",
      encoding: "utf8",
      size: 51,
    });
    const png = await json(
      await emu.api("POST", runtime(id, "/files/read"), { path: `${ROOT}/assets/logo.png`, encoding: "base64" }),
    );
    const bytes = Uint8Array.from(atob(png.data.content), (ch) => ch.charCodeAt(0));
    expect(png.data).toMatchObject({ encoding: "base64", size: 300 });
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const download = await emu.api("GET", runtime(id, `/fs/download${ROOT}/assets/logo.png`));
    expect(download.headers.get("content-length")).toBe("300");
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const counters = (await json(await emu.control("/_emulator/counters"))).counters;
    expect(counters).toMatchObject({
      "requests.runtime.fs.list": 5,
      "requests.runtime.files.read": 2,
      "requests.runtime.fs.stat": 1,
      "requests.runtime.fs.download": 1,
    });
  });

  it("answers FILE_NOT_FOUND, NOT_A_DIRECTORY, IS_A_DIRECTORY, and 403 outside the root, for `..` and .sidecar", async () => {
    const { emu, id } = await fastSandbox("ws-errors");
    const code = async (res: Response, status: number) => {
      expect(res.status).toBe(status);
      return (await json(res)).error.code;
    };
    expect(await code(await emu.api("GET", runtime(id, `/fs/list${ROOT}/nope`)), 404)).toBe("FILE_NOT_FOUND");
    expect(await code(await emu.api("GET", runtime(id, `/fs/stat${ROOT}/nope.ts`)), 404)).toBe("FILE_NOT_FOUND");
    expect(await code(await emu.api("GET", runtime(id, `/fs/list${ROOT}/README.md`)), 400)).toBe("NOT_A_DIRECTORY");
    expect(await code(await emu.api("GET", runtime(id, `/fs/download-dir${ROOT}/README.md`)), 400)).toBe(
      "NOT_A_DIRECTORY",
    );
    expect(await code(await emu.api("POST", runtime(id, "/files/read"), { path: "src" }), 400)).toBe("IS_A_DIRECTORY");
    expect(await code(await emu.api("POST", runtime(id, "/files/read"), { path: "gone.txt" }), 404)).toBe(
      "FILE_NOT_FOUND",
    );
    for (const path of ["/etc/passwd", "/home/agentx/a", "../secret", `${ROOT}/src/../../x`, `${ROOT}/.sidecar/token`])
      expect(await code(await emu.api("POST", runtime(id, "/files/read"), { path }), 403)).toBe("FORBIDDEN_PATH");
    expect(await code(await emu.api("GET", runtime(id, "/fs/list/etc")), 403)).toBe("FORBIDDEN_PATH");
    expect(await code(await emu.api("GET", runtime(id, `/fs/stat${ROOT}/%2E%2E/x`)), 403)).toBe("FORBIDDEN_PATH");
    expect(await code(await emu.api("POST", runtime(id, "/files/read"), { path: "a", extra: 1 }), 400)).toBe(
      "VALIDATION_ERROR",
    );
    // A sandbox not running has no runtime.
    await emu.control(`/_emulator/sandboxes/${id}/status`, { status: "stopped" });
    expect(await code(await emu.api("GET", runtime(id, `/fs/list${ROOT}`)), 409)).toBe("SANDBOX_NOT_RUNNING");
  });

  it("changes the files as the agent's completed tool calls are emitted: [edits] and the file directives", async () => {
    const { emu, id } = await fastSandbox("ws-edits");
    const before = await fileText(emu, id, "src/server.ts");
    expect(before).toContain('serve((request) => new Response("ok"));');
    await readRaw(await dispatch(emu, id, { message: "change it [edits]", executionId: "exe-e1", turnId: "t1" }));
    expect(await fileText(emu, id, "src/greeting.ts")).toContain("export function greet");
    const server = await fileText(emu, id, "src/server.ts");
    expect(server).toContain('import { greet } from "./greeting";');
    expect(server).not.toContain('new Response("ok")');
    expect(await fileText(emu, id, "README.md")).toContain("A small service that greets");
    expect(await fileText(emu, id, "src/missing.ts")).toBeNull();

    const message =
      "files [write:notes/a.txt:one\\ntwo] [binary:data.bin:1000] [rename:package.json:pkg.json] [delete:src/http.ts]";
    const text = await readRaw(
      await dispatch(emu, id, { message, executionId: "exe-e2", sessionId: "s2", turnId: "t1" }),
    );
    expect(text).toContain('"tool":"write"');
    expect(text).toContain("mv -- 'package.json' 'pkg.json'");
    expect(await fileText(emu, id, "notes/a.txt")).toBe("one\ntwo");
    expect(await fileText(emu, id, "package.json")).toBeNull();
    expect(await fileText(emu, id, "pkg.json")).toContain('"name": "demo-project"');
    expect(await fileText(emu, id, "src/http.ts")).toBeNull();
    const bin = await json(await emu.api("GET", runtime(id, `/fs/stat${ROOT}/data.bin`)));
    expect(bin.data.size).toBe(1000);
    const raw = new Uint8Array(
      await (await emu.control(`/_emulator/sandboxes/${id}/files?path=data.bin`)).arrayBuffer(),
    );
    expect(raw.includes(0)).toBe(true);
    expect((await json(await emu.control("/_emulator/counters"))).counters["files.changed"]).toBe(7);
  });

  it("downloads a folder as a tar.gz of its files, named relative to it", async () => {
    const { emu, id } = await fastSandbox("ws-tar");
    const long = `deep/${"d".repeat(90)}/${"e".repeat(90)}/${"f".repeat(120)}.txt`;
    expect((await emu.control(`/_emulator/sandboxes/${id}/files`, { path: long, content: "long name" })).status).toBe(
      200,
    );
    const res = await emu.api("GET", runtime(id, `/fs/download-dir${ROOT}`));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/gzip");
    const gz = await res.arrayBuffer();
    expect(res.headers.get("content-length")).toBe(String(gz.byteLength));
    const tar = new Uint8Array(
      await new Response(new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer(),
    );
    const entries = untar(tar);
    const files = entries.filter((e) => e.type === "0");
    expect(files.map((e) => e.name).sort()).toEqual(
      [long, "README.md", "assets/logo.png", "package.json", "src/http.ts", "src/server.ts"].sort(),
    );
    expect(new TextDecoder().decode(files.find((e) => e.name === "README.md")!.bytes)).toContain("# Demo project");
    expect(files.find((e) => e.name === "assets/logo.png")!.bytes.length).toBe(300);
    expect(entries.filter((e) => e.type === "5").map((e) => e.name)).toContain("src/");

    const src = untar(
      new Uint8Array(
        await new Response(
          (await emu.api("GET", runtime(id, `/fs/download-dir${ROOT}/src`))).body!.pipeThrough(
            new DecompressionStream("gzip"),
          ),
        ).arrayBuffer(),
      ),
    );
    expect(src.map((e) => e.name)).toEqual(["http.ts", "server.ts"]);
  });

  it("uploads a file (parents made), refuses one over the cap (413) or outside the root (403)", async () => {
    const { emu, id } = await fastSandbox("ws-upload");
    const upload = (path: string, bytes: Uint8Array | string) => {
      const form = new FormData();
      form.set("file", new File([bytes], "upload.bin"));
      form.set("path", path);
      return emu.fetch(runtime(id, "/fs/upload"), {
        method: "POST",
        headers: { authorization: "Bearer emulator-test-key" },
        body: form,
      });
    };
    const ok = await upload(`${ROOT}/uploads/new/photo.bin`, new Uint8Array([1, 0, 2, 0, 3]));
    expect(ok.status).toBe(200);
    expect((await json(ok)).data).toEqual({ path: `${ROOT}/uploads/new/photo.bin`, size: 5 });
    expect((await list(emu, id, `${ROOT}/uploads/new`)).map((e) => e.size)).toEqual([5]);
    for (const path of [`${ROOT}/../etc/x`, `${ROOT}/.sidecar/x`, "/tmp/x"]) {
      const res = await upload(path, "x");
      expect(res.status).toBe(403);
    }
    const onFile = await upload(`${ROOT}/README.md/inner`, "x");
    expect((await json(onFile)).error.code).toBe("NOT_A_DIRECTORY");

    // A file larger than a SQLite row holds (kept in chunks) comes back byte for byte.
    const large = new Uint8Array(3 * 1024 * 1024 + 7);
    for (let i = 0; i < large.length; i++) large[i] = (i * 7) % 256;
    expect((await upload(`${ROOT}/large.bin`, large)).status).toBe(200);
    const back = await emu.api("GET", runtime(id, `/fs/download${ROOT}/large.bin`));
    expect(back.headers.get("content-length")).toBe(String(large.length));
    const got = new Uint8Array(await back.arrayBuffer());
    expect(got.length).toBe(large.length);
    expect(got.findIndex((b, i) => b !== large[i])).toBe(-1);

    expect((await emu.control("/_emulator/variants", { uploadMaxBytes: 100 })).status).toBe(200);
    const big = await upload(`${ROOT}/big.bin`, new Uint8Array(101));
    expect(big.status).toBe(413);
    expect((await json(big)).error.code).toBe("PAYLOAD_TOO_LARGE");
    expect((await upload(`${ROOT}/fits.bin`, new Uint8Array(100))).status).toBe(200);
    expect(await fileText(emu, id, "big.bin")).toBeNull();
    expect((await json(await emu.control("/_emulator/counters"))).counters).toMatchObject({
      "files.uploaded": 3,
      "requests.runtime.fs.upload": 8,
    });
  });

  it("forgets a deleted sandbox's files, and a reset forgets every sandbox's", async () => {
    const { emu, id } = await fastSandbox("ws-delete");
    expect(await fileText(emu, id, "README.md")).not.toBeNull();
    expect((await emu.api("DELETE", `/v1/sandboxes/${id}`)).status).toBe(200);
    expect(await fileText(emu, id, "README.md")).toBeNull();
    const other = await runningSandbox(emu);
    expect(await fileText(emu, other, "README.md")).not.toBeNull();
    // A sandbox gone by the control route (deleted under a run, say) loses its files too.
    const gone = await runningSandbox(emu);
    await emu.control(`/_emulator/sandboxes/${gone}/status`, { status: "deleted" });
    expect(await fileText(emu, gone, "README.md")).toBeNull();
    await emu.control("/_emulator/reset", {});
    expect((await emu.control(`/_emulator/sandboxes/${other}/files?path=README.md`)).status).toBe(404);
  });
});
