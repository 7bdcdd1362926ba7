/**
 * Terminals through the public API (docs/api.md#terminals, issue 41): the Worker's routes and socket,
 * the terminal object's relay, against the emulator's PTYs (docs/sandbox-wire.md §12), with
 * workerd's WebSocket client as the browser.
 */
import { env } from "cloudflare:test";
import { SignJWT } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { api, emulator, json, tokenFor, uid } from "./helpers";
import { openSocket, type as typeLine } from "./terminal-socket";

const variants = (v: Record<string, unknown>) => emulator("/_emulator/variants", v);

afterEach(async () => {
  await variants({});
  await emulator("/_emulator/faults", {});
});

async function openTerminal(token: string, body: Record<string, unknown> = {}) {
  const res = await api("/v1/environment/terminals", { token, body });
  return { status: res.status, body: await json(res) };
}

async function newTerminal(token?: string) {
  const user = token ?? (await tokenFor(uid("user")));
  const opened = await openTerminal(user);
  if (opened.status !== 201) throw new Error(`not opened: ${opened.status} ${JSON.stringify(opened.body)}`);
  const viewer = await openSocket(opened.body.url);
  await viewer.until((v) => v.frames.some((f) => f.type === "ready"), "ready");
  await viewer.until((v) => v.output().includes("$ "), "the prompt");
  return { token: user, opened: opened.body, viewer, terminalId: opened.body.terminal.terminalId as string };
}

const sandboxTerminals = async (sandboxId: string) =>
  (await emulator(`/_emulator/sandboxes/${sandboxId}/terminals`)).terminals as { sockets: number; alive: boolean }[];

async function sandboxOf(token: string): Promise<string> {
  return (await json(await api("/v1/environment", { token }))).environment.environmentId;
}

describe("opening a terminal and typing into it", () => {
  it("attaches a PTY proven live, relays input and output, and numbers only the output", async () => {
    const { opened, viewer } = await newTerminal();
    expect(opened.status).toBe("attached");
    expect(opened.terminal).toMatchObject({ kind: "shell", isRunning: true, cols: 80, rows: 24, attachCount: 1 });
    for (const field of ["name", "shell", "cwd", "createdAt", "lastActivityAt", "expiresAt"])
      expect(typeof opened.terminal[field]).toBe("string");
    expect(opened.token).not.toContain("emulator-local-key");
    const first = viewer.frames[0];
    expect(first).toMatchObject({ type: "ready", terminalId: opened.terminal.terminalId, status: "running" });

    typeLine(viewer, "echo hello terminal");
    await viewer.until((v) => v.output().includes("hello terminal\r\n"), "echo's output");
    for (const frame of viewer.frames) expect("seq" in frame).toBe(frame.type === "output");
    const seqs = viewer.seqs();
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    viewer.ws.close();
  });

  it("reads the workspace's files with ls and cat", async () => {
    const { viewer, token } = await newTerminal();
    const sandboxId = await sandboxOf(token);
    await emulator(`/_emulator/sandboxes/${sandboxId}/files`, { path: "notes/terminal.txt", content: "from the file" });
    typeLine(viewer, "ls notes");
    await viewer.until((v) => v.output().includes("terminal.txt"), "ls");
    typeLine(viewer, "cat notes/terminal.txt");
    await viewer.until((v) => v.output().includes("from the file"), "cat");
    viewer.ws.close();
  });

  it("relays a resize, logged in its place for every viewer", async () => {
    const { viewer, opened, token, terminalId } = await newTerminal();
    const second = await openSocket(opened.url);
    await second.until((v) => v.frames.some((f) => f.type === "ready"), "second ready");
    viewer.send({ type: "resize", cols: 100, rows: 30 });
    await second.until((v) => v.frames.some((f) => f.type === "resize" && f.cols === 100), "the resize");
    typeLine(viewer, "stty size");
    await viewer.until((v) => v.output().includes("30 100"), "stty size");
    const ref = await json(await api(`/v1/environment/terminals/${terminalId}`, { token }));
    expect(ref).toMatchObject({ cols: 100, rows: 30, viewers: 2 });
    viewer.ws.close();
    second.ws.close();
  });
});

describe("reattaching", () => {
  it("a second tab sees the same output, and a reconnect from its cursor sees nothing twice", async () => {
    const { viewer, opened, token, terminalId } = await newTerminal();
    const tab = await openSocket(opened.url);
    typeLine(viewer, "echo one");
    await tab.until((v) => v.output().includes("one\r\n"), "the other tab's output");
    await viewer.until((v) => v.output().includes("one\r\n"), "output");
    const cursor = viewer.seqs().at(-1)!;
    const before = viewer.output();
    viewer.ws.close();

    // A reload: the same terminal id again (a new token), then the socket from the cursor.
    const again = await openTerminal(token, { terminalId });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("reattached");
    const back = await openSocket(`${again.body.url}&since=${cursor}`);
    await back.until((v) => v.frames.some((f) => f.type === "ready"), "ready");
    typeLine(tab, "echo two");
    await back.until((v) => v.output().includes("two\r\n"), "new output after the reconnect");
    expect(back.seqs()[0]).toBe(cursor + 1);
    expect(before + back.output()).toBe(tab.output());

    // No cursor: everything retained, from the start.
    const fresh = await openSocket(again.body.url);
    await fresh.until((v) => v.output().includes("two\r\n"), "the whole retained screen");
    expect(fresh.output()).toBe(tab.output());
    for (const v of [tab, back, fresh]) v.ws.close();
  });

  it("refuses a cursor the log no longer holds (cursor_evicted, with the live cursors) and one ahead of it", async () => {
    const { viewer, opened } = await newTerminal();
    typeLine(viewer, "seq 100000");
    await viewer.until((v) => v.output().includes("\r\n100000\r\n"), "a long output", 30_000);
    typeLine(viewer, "seq 100000");
    await viewer.until((v) => v.output().split("\r\n100000\r\n").length > 2, "more", 30_000);
    const latest = viewer.seqs().at(-1)!;

    const old = await openSocket(`${opened.url}&since=1`);
    await old.until((v) => v.closed !== null, "the refusal");
    const error = old.frames.find((f) => f.type === "error");
    expect(error).toMatchObject({ code: "cursor_evicted", details: { latest } });
    expect(error.details.earliest).toBeGreaterThan(2);
    expect(old.closed!.code).toBe(4409);

    const ahead = await openSocket(`${opened.url}&since=${latest + 5}`);
    await ahead.until((v) => v.closed !== null, "the refusal");
    expect(ahead.frames.find((f) => f.type === "error")).toMatchObject({ code: "cursor_invalid" });
    expect(ahead.closed!.code).toBe(4400);

    // The cursor the refusal named is good.
    const good = await openSocket(`${opened.url}&since=${error.details.earliest}`);
    await good.until((v) => v.frames.length > 1, "the replay");
    expect(good.closed).toBeNull();
    expect(good.seqs()[0]).toBe(error.details.earliest + 1);
    viewer.ws.close();
    good.ws.close();
  }, 60_000);

  it("reattaches the sandbox's socket when it drops, the retained screen after an in-stream ready", async () => {
    // The next socket the sandbox opens drops after its first output message (the prompt), with no exit.
    await emulator("/_emulator/faults", { terminalDrop: 1 });
    const { viewer, token } = await newTerminal();
    await viewer.until((v) => v.frames.some((f) => f.type === "ready" && f.restored === true), "the reattach");
    const sandboxId = await sandboxOf(token);
    typeLine(viewer, "echo after the drop");
    await viewer.until((v) => v.output().includes("after the drop\r\n"), "the shell goes on");
    expect(viewer.closed).toBeNull();
    // The retained screen came again after the in-stream ready (the page redraws from it).
    const at = viewer.frames.findIndex((f) => f.type === "ready" && f.restored === true);
    expect(viewer.frames[at + 1]).toMatchObject({ type: "output", data: expect.stringContaining("$ ") });
    const ptys = await sandboxTerminals(sandboxId);
    expect(ptys.filter((p) => p.alive)).toHaveLength(1);
    expect(ptys[0]!.sockets).toBe(1);
    const ref = await json(await api("/v1/environment/terminals", { token }));
    expect(ref.terminals[0].attachCount).toBe(2);
    viewer.ws.close();
  });
});

describe("the seed's truth rules", () => {
  it("an exit is delivered in its place, closes the sockets 1000, and only then is a close `closed`", async () => {
    const { viewer, token, terminalId } = await newTerminal();
    typeLine(viewer, "exit 3");
    await viewer.until((v) => v.closed !== null, "the close");
    expect(viewer.frames.at(-1)).toEqual({ type: "exit", exitCode: 3 });
    expect(viewer.closed!.code).toBe(1000);
    const ref = await json(await api(`/v1/environment/terminals/${terminalId}`, { token }));
    expect(ref).toMatchObject({ isRunning: false, exitCode: 3 });
    const closed = await json(await api(`/v1/environment/terminals/${terminalId}`, { token, method: "DELETE" }));
    expect(closed).toEqual({ status: "closed", exitCode: 3 });
    expect((await api(`/v1/environment/terminals/${terminalId}`, { token })).status).toBe(404);
  });

  it("a close with no delivered exit is `unknown`, and its viewers are closed", async () => {
    const { viewer, token, terminalId } = await newTerminal();
    const closed = await json(await api(`/v1/environment/terminals/${terminalId}`, { token, method: "DELETE" }));
    expect(closed.status).toBe("unknown");
    await viewer.until((v) => v.closed !== null, "the viewer's close");
    expect(viewer.closed!.code).toBe(4499);
  });

  it("input on a terminal whose sandbox stopped is refused (terminal_ended), and the ref says it is not running", async () => {
    const { viewer, token, terminalId, opened } = await newTerminal();
    expect((await api("/v1/environment/stop", { token, method: "POST" })).status).toBe(200);
    await viewer.until((v) => v.closed !== null, "the end");
    expect(viewer.frames.find((f) => f.type === "error")).toMatchObject({ code: "terminal_ended" });
    expect(viewer.closed!.code).toBe(4410);
    const ref = await json(await api(`/v1/environment/terminals/${terminalId}`, { token }));
    expect(ref.isRunning).toBe(false);
    // A new socket on it: told it ended, and its input and resize go nowhere.
    const again = await openSocket(opened.url);
    await again.until((v) => v.closed !== null, "the new socket's end");
    expect(again.frames[0]).toMatchObject({ type: "ready", status: "lost" });
    expect(again.frames.find((f) => f.type === "error")).toMatchObject({ code: "terminal_ended" });
    expect(again.closed!.code).toBe(4410);
  });

  it("reads output a deployment sends as JSON text frames as it reads binary ones (variant terminalFrames: json)", async () => {
    await variants({ terminalFrames: "json" });
    const { viewer } = await newTerminal();
    typeLine(viewer, "echo as text frames");
    await viewer.until((v) => v.output().includes("as text frames\r\n$ "), "the echo");
    viewer.ws.close();
  });

  it("states expiry as one detach window past the newest activity", async () => {
    await variants({ terminalDetachMs: 45_000 });
    const { opened, viewer } = await newTerminal();
    const { lastActivityAt, expiresAt } = opened.terminal;
    expect(Date.parse(expiresAt) - Date.parse(lastActivityAt)).toBe(45_000);
    viewer.ws.close();
  });

  it.each(["cwd", "shell", "name", "cols", "isRunning", "lastActivityAt"])(
    "an attach whose metadata lacks %s fails closed, and lets go of the sandbox's socket",
    async (field) => {
      await variants({ terminalMetadata: `no-${field}` });
      const token = await tokenFor(uid("user"));
      const res = await openTerminal(token);
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({ code: "terminal_metadata_incomplete", details: { missing: [field] } });
      const sandboxId = await sandboxOf(token);
      const ptys = await sandboxTerminals(sandboxId);
      expect(ptys.every((p) => p.sockets === 0)).toBe(true);
      expect((await json(await api("/v1/environment/terminals", { token }))).terminals).toEqual([]);
    },
  );

  it("an attach whose ready has no detach window fails closed", async () => {
    await variants({ terminalReady: "no-detach-window" });
    const res = await openTerminal(await tokenFor(uid("user")));
    expect(res.status).toBe(502);
    expect(res.body.error.details.missing).toEqual(["detachTimeoutMs"]);
  });

  it('refuses mode "logical"', async () => {
    const res = await openTerminal(await tokenFor(uid("user")), { mode: "logical" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("logical_resume_unsupported");
  });

  it("answers 501 naming the capability where the deployment has no terminal routes", async () => {
    await variants({ terminalRoutes: "missing" });
    const res = await openTerminal(await tokenFor(uid("user")));
    expect(res.status).toBe(501);
    expect(res.body.error).toMatchObject({ code: "capability_denied", details: { missing: ["interactiveTerminal"] } });
  });
});

describe("who may open which terminal", () => {
  it("another user's terminal is not found, and their token opens only their own", async () => {
    const a = await newTerminal();
    const other = await tokenFor(uid("user"));
    expect((await api(`/v1/environment/terminals/${a.terminalId}`, { token: other })).status).toBe(404);
    expect((await api(`/v1/environment/terminals/${a.terminalId}`, { token: other, method: "DELETE" })).status).toBe(
      404,
    );
    // A token of theirs for another terminal does not open this one's socket.
    const own = await openTerminal(other);
    const foreign = await api(`/v1/environment/terminals/${a.terminalId}/ws?access_token=${own.body.token}`, {
      headers: { upgrade: "websocket" },
    });
    expect(foreign.status).toBe(401);
    // The same id, theirs: a terminal of their own, in their own sandbox.
    const same = await openTerminal(other, { terminalId: a.terminalId });
    expect(same.status).toBe(201);
    a.viewer.ws.close();
  });

  it("refuses an expired terminal token, a user token on the socket, and a socket without the upgrade", async () => {
    const { opened, token, terminalId } = await newTerminal();
    const expired = await new SignJWT({ use: "terminal", tid: terminalId })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("whoever")
      .setIssuedAt(Math.floor(Date.now() / 1000) - 1000)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 600)
      .sign(new TextEncoder().encode((env as unknown as Record<string, string>).AUTH_JWT_SECRET));
    const path = `/v1/environment/terminals/${terminalId}/ws`;
    const late = await api(`${path}?access_token=${expired}`, { headers: { upgrade: "websocket" } });
    expect(late.status).toBe(401);
    expect((await api(`${path}?access_token=${token}`, { headers: { upgrade: "websocket" } })).status).toBe(401);
    // The terminal token is good on its socket only.
    expect((await api("/v1/environment/terminals", { token: opened.token })).status).toBe(401);
    expect((await api(opened.url)).status).toBe(426);
  });
});

describe("releasing what a terminal holds", () => {
  it("deleting the account ends its terminals: the sandbox's PTYs go with it, the viewers are told, nothing is left open", async () => {
    const { viewer, token } = await newTerminal();
    const sandboxId = await sandboxOf(token);
    const deleted = await api("/v1/me", { token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    await viewer.until((v) => v.closed !== null, "the viewer's close");
    expect(viewer.closed!.code).toBe(4410);
    const ptys = await sandboxTerminals(sandboxId).catch(() => []);
    expect(ptys.every((p) => p.sockets === 0)).toBe(true);
  });
});

describe("the token in a subprotocol", () => {
  it("a terminal token offered as `bearer.<base64url>` (none in the URL) opens the socket, echoed on the 101; another is 401", async () => {
    const { opened, terminalId, token } = await newTerminal();
    const b64url = (text: string) => btoa(text).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
    const path = `/v1/environment/terminals/${terminalId}/ws`;
    const protocol = `bearer.${b64url(opened.token)}`;
    const viewer = await openSocket(path, { "sec-websocket-protocol": `terminal, ${protocol}` });
    expect(viewer.headers.get("sec-websocket-protocol")).toBe(protocol);
    typeLine(viewer, "echo by subprotocol");
    await viewer.until((v) => v.output().includes("by subprotocol\r\n"), "the echo");
    viewer.ws.close();
    // The user's own bearer token is no terminal token.
    const wrong = await api(path, {
      headers: { upgrade: "websocket", "sec-websocket-protocol": `bearer.${b64url(token)}` },
    });
    expect(wrong.status).toBe(401);
    expect((await api(path, { headers: { upgrade: "websocket" } })).status).toBe(401);
  });
});

describe("bounds", () => {
  it("bounds the terminals a user has open (429), and a closed one frees its place", async () => {
    const token = await tokenFor(uid("user"));
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const opened = await openTerminal(token);
      expect(opened.status).toBe(201);
      ids.push(opened.body.terminal.terminalId);
    }
    const fifth = await openTerminal(token);
    expect(fifth.status).toBe(429);
    expect(fifth.body.error.code).toBe("terminal_limit_reached");
    await api(`/v1/environment/terminals/${ids[0]}`, { token, method: "DELETE" });
    expect((await openTerminal(token)).status).toBe(201);
    const list = await json(await api("/v1/environment/terminals", { token }));
    expect(list.terminals).toHaveLength(4);
  });

  it("closes a viewer that sends a frame too large (4413), one that is not a frame (4400), one past the input rate (4429)", async () => {
    const { opened, viewer } = await newTerminal();
    const big = await openSocket(opened.url);
    big.send({ type: "input", data: "x".repeat(70 * 1024) });
    await big.until((v) => v.closed !== null, "4413");
    expect(big.closed!.code).toBe(4413);

    const junk = await openSocket(opened.url);
    junk.send({ type: "shout", data: "hi" });
    await junk.until((v) => v.closed !== null, "4400");
    expect(junk.closed!.code).toBe(4400);

    const flood = await openSocket(opened.url);
    for (let i = 0; i < 260; i++) flood.send({ type: "input", data: "" });
    await flood.until((v) => v.closed !== null, "4429");
    expect(flood.closed!.code).toBe(4429);
    expect(flood.frames.find((f) => f.type === "error")).toMatchObject({ code: "input_rate_exceeded" });

    // The others go on.
    typeLine(viewer, "echo still here");
    await viewer.until((v) => v.output().includes("still here\r\n"), "the first viewer");
    viewer.ws.close();
  });
});
