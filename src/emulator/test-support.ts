/**
 * Helpers for the emulator's own tests: they talk to one emulator object over `fetch`, never
 * through the client. Each test gets an object of its own (a unique name), so it neither sees nor
 * disturbs the shared "default" emulator the gateway tests use.
 */

import { env } from "cloudflare:test";
import { expect } from "vitest";

const ORIGIN = "http://sandbox-emulator.local";
const AUTH = { authorization: "Bearer emulator-test-key" };

let counter = 0;

export interface Emu {
  name: string;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A Sandbox API call with the bearer key; a JSON body when `body` is given. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A control call: GET without a body, POST with a JSON body. */
  control(path: string, body?: unknown): Promise<Response>;
}

export function emulator(label: string): Emu {
  counter++;
  const name = `emulator-test-${label}-${Date.now().toString(36)}-${counter}`;
  const stub = env.SANDBOX_EMULATOR!.get(env.SANDBOX_EMULATOR!.idFromName(name));
  const fetchPath = (path: string, init?: RequestInit) => stub.fetch(`${ORIGIN}${path}`, init);
  return {
    name,
    fetch: fetchPath,
    api: (method, path, body, headers = {}) =>
      fetchPath(path, {
        method,
        headers: { ...AUTH, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    control: (path, body) =>
      fetchPath(path, {
        method: body === undefined ? "GET" : "POST",
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
  };
}

/** Creates a sandbox and waits until it is running with a ready filesystem; answers its id. */
export async function runningSandbox(emu: Emu): Promise<string> {
  const created = await emu.api("POST", "/v1/sandboxes", { name: "test" });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  const { id } = (await created.json()) as { id: string };
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const sandbox = (await (await emu.api("GET", `/v1/sandboxes/${id}`)).json()) as {
      status: string;
      filesystemIncarnationReadiness?: string;
    };
    if (sandbox.status === "running" && sandbox.filesystemIncarnationReadiness === "ready") return id;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the sandbox did not come up");
}

/** A response's JSON body, untyped (tests look into it freely). */
export async function json(response: Response): Promise<any> {
  return response.json();
}

export const runtime = (sandboxId: string, path: string) => `/v1/sandboxes/${sandboxId}/runtime${path}`;

/**
 * Reads a stream's raw text until `until` says stop, the stream ends or the timeout passes; then
 * cancels it. A run-stream response must always be consumed or cancelled.
 */
export async function readRaw(
  response: Response,
  until: (text: string) => boolean = () => false,
  timeoutMs = 5_000,
): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  try {
    while (!until(text)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; read so far:\n${text}`);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const next = await Promise.race([
        reader.read(),
        new Promise<never>(
          (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out; read so far:\n${text}`)), left)),
        ),
      ]).finally(() => {
        if (timer !== undefined) clearTimeout(timer);
      });
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text;
}

/**
 * Reads a stream's raw text for `ms` or until it ends, then cancels it: what it sent in that
 * time, and whether it ended (closed by the emulator) meanwhile.
 */
export async function readFor(response: Response, ms: number): Promise<{ text: string; ended: boolean }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + ms;
  try {
    while (true) {
      const left = deadline - Date.now();
      if (left <= 0) return { text, ended: false };
      let timer: ReturnType<typeof setTimeout> | undefined;
      const next = await Promise.race([
        reader.read(),
        new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), left))),
      ]).finally(() => {
        if (timer !== undefined) clearTimeout(timer);
      });
      if (next === "timeout") return { text, ended: false };
      if (next.done) return { text, ended: true };
      text += decoder.decode(next.value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** The frames of raw SSE text, each as its lines (comment lines kept). */
export function rawFrames(text: string): string[][] {
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => block.split("\n"));
}

/** One frame's fields by name (a frame here has at most one line of each). */
export function fields(lines: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    out[line.slice(0, colon)] = line.slice(colon + 2);
  }
  return out;
}

/** Dispatches a run and reads its stream to the end (frame delay 0: the run finishes at once). */
export async function dispatch(
  emu: Emu,
  sandboxId: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return emu.api(
    "POST",
    runtime(sandboxId, "/agents/run/stream"),
    { message: "hello", sessionId: "s1", ...body },
    headers,
  );
}

/** A running sandbox of its own emulator, its frames unpaced (the workspace tests). */
export async function fastSandbox(label: string): Promise<{ emu: Emu; id: string }> {
  const emu = emulator(label);
  expect((await emu.control("/_emulator/faults", { frameDelayMs: 0 })).status).toBe(200);
  return { emu, id: await runningSandbox(emu) };
}

/** A sandbox's file as text, read by the control route; null when there is none. */
export async function fileText(emu: Emu, id: string, path: string): Promise<string | null> {
  const res = await emu.control(`/_emulator/sandboxes/${id}/files?path=${encodeURIComponent(path)}`);
  if (res.status === 404) return null;
  expect(res.status).toBe(200);
  return new TextDecoder().decode(await res.arrayBuffer());
}
