import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { deriveOwnerKey, deriveSessionId } from "../src/auth/ids";
import { type ApiOptions, api, collect, isTurnEnd, setFaults, tokenFor, uid, waitForTurn } from "./helpers";
import { openSocket, type as typeLine } from "./terminal-socket";

/**
 * Secrets never leave: a scripted conversation through every route, and turns under every
 * emulator fault, with a marker for each secret. No marker may appear in any response body or
 * header, any SSE frame, any stored row of the session and user objects, or any console line.
 */
const testEnv = env as unknown as Record<string, string>;
/** The value typed into an ask's secret field: the gateway forwards it upstream and keeps none of it. */
const SECRET_ANSWER = `secret-answer-${crypto.randomUUID()}`;
/** The key the gateway sends the Sandbox (the emulator's bearer; TANGLE_API_KEY in a deploy). */
const SANDBOX_BEARER = "emulator-local-key";
/** A user's model key (PUT /v1/credentials) and an MCP server's auth value (PUT /v1/mcp-servers): the gateway sends both upstream and answers neither. */
const MODEL_KEY = `sk-model-${crypto.randomUUID()}`;
const MCP_AUTH = `mcp-auth-${crypto.randomUUID()}`;

const markers = new Map<string, string>([
  ["AUTH_JWT_SECRET", testEnv.AUTH_JWT_SECRET!],
  ["SESSION_ID_SECRET", testEnv.SESSION_ID_SECRET!],
  ["the Sandbox bearer", SANDBOX_BEARER],
  ["a secret field's answer", SECRET_ANSWER],
  ["a user's model key", MODEL_KEY],
  ["an MCP server's auth value", MCP_AUTH],
]);
/** Adds a secret and the encodings it could leak in. */
function mark(name: string, value: string): void {
  markers.set(name, value);
  markers.set(`${name} (base64)`, btoa(value));
  markers.set(`${name} (base64url)`, btoa(value).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, ""));
}
for (const [name, value] of [...markers]) mark(name, value);
/** A user token: the whole of it and its signature alone. */
function markToken(name: string, token: string): void {
  markers.set(name, token);
  markers.set(`${name}'s signature`, token.split(".")[2]!);
}

/** Everything seen, labelled by where it was seen. */
let seen: Array<{ where: string; text: string }> = [];
let consoleLines: string[] = [];

function record(where: string, text: string): void {
  seen.push({ where, text });
}

/** A call to the gateway whose response (status, every header, body) is recorded. */
async function call(path: string, options: ApiOptions = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await api(path, options);
  const text = await res.text();
  record(
    `${options.method ?? (options.body !== undefined ? "POST" : "GET")} ${path} → ${res.status}`,
    `${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${text}`,
  );
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body, headers: res.headers };
}

/** Opens the event stream and reads it until `until`; every frame and header is recorded. */
async function stream(
  path: string,
  token: string | undefined,
  until: Parameters<typeof collect>[1],
  headers: Record<string, string> = {},
) {
  const res = await api(path, { ...(token ? { token } : {}), headers });
  record(`GET ${path} → ${res.status} (headers)`, [...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n"));
  expect(res.status).toBe(200);
  const collected = await collect(res, until, { timeoutMs: 10_000 });
  record(`GET ${path} (frames)`, JSON.stringify(collected.frames));
  return collected;
}

/** Every row of every SQLite table, and every key-value entry, of a Durable Object. */
async function dump(
  namespace: typeof env.SESSIONS | typeof env.USERS | typeof env.TERMINALS,
  name: string,
  label: string,
): Promise<number> {
  const stub = namespace.get(namespace.idFromName(name));
  return runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
    let rows = 0;
    const tables = state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'",
      )
      .toArray();
    for (const { name: table } of tables) {
      const all = state.storage.sql.exec(`SELECT * FROM "${table}"`).toArray();
      rows += all.length;
      record(`${label}: table ${table}`, JSON.stringify(all));
    }
    const entries = await state.storage.list();
    rows += entries.size;
    record(`${label}: key-value storage`, JSON.stringify([...entries]));
    return rows;
  });
}

async function dumpConversation(userId: string, cid: string, label: string): Promise<number> {
  const sessionId = await deriveSessionId(testEnv.SESSION_ID_SECRET!, userId, cid);
  const ownerKey = await deriveOwnerKey(testEnv.SESSION_ID_SECRET!, userId);
  return (
    (await dump(env.SESSIONS, sessionId, `${label}: session object`)) +
    (await dump(env.USERS, ownerKey, `${label}: user object`))
  );
}

/** Fails naming each marker found and where; the corpus is then cleared for the next test. */
function expectNoSecrets(): void {
  const corpus = [...seen, ...consoleLines.map((text, i) => ({ where: `console line ${i + 1}`, text }))];
  const found: string[] = [];
  for (const { where, text } of corpus) {
    for (const [name, value] of markers) if (value && text.includes(value)) found.push(`${name} in ${where}`);
  }
  if (found.length > 0) throw new Error(`secrets found:\n  ${found.join("\n  ")}`);
  // The scan saw something: a test that records nothing proves nothing.
  expect(corpus.length).toBeGreaterThan(0);
}

const spies: Array<{ mockRestore(): void }> = [];
beforeEach(() => {
  seen = [];
  consoleLines = [];
  for (const level of ["log", "info", "warn", "error", "debug"] as const) {
    const original = console[level].bind(console);
    spies.push(
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        consoleLines.push(
          args
            .map((a) => (typeof a === "string" ? a : a instanceof Error ? `${a.stack}` : JSON.stringify(a)))
            .join(" "),
        );
        original(...args);
      }),
    );
  }
});
afterEach(async () => {
  for (const spy of spies.splice(0)) spy.mockRestore();
  await setFaults({});
});

const GOOD = { project: "demo", framework: "vitest", coverage: true, workers: 2, labels: ["ci"], token: SECRET_ANSWER };

describe("no secret leaves the gateway", () => {
  it("the scan finds a planted marker: in a recorded text, in base64, and in a console line", () => {
    record("planted", `prefix ${SECRET_ANSWER} suffix`);
    expect(() => expectNoSecrets()).toThrow(/a secret field's answer in planted/);
    seen = [];
    record("planted", btoa(testEnv.AUTH_JWT_SECRET!));
    expect(() => expectNoSecrets()).toThrow(/AUTH_JWT_SECRET \(base64\) in planted/);
    seen = [];
    console.error("oops", { key: SANDBOX_BEARER });
    expect(() => expectNoSecrets()).toThrow(/the Sandbox bearer in console line 1/);
    consoleLines = [];
  });

  it("a whole conversation through every route: responses, headers, frames, stored rows and log lines", async () => {
    const userId = uid("alice");
    const token = await tokenFor(userId);
    markToken("alice's user token", token);
    const otherToken = await tokenFor(uid("bob"));
    markToken("bob's user token", otherToken);
    const cid = uid("conv");
    const base = `/v1/conversations/${cid}`;

    await call("/healthz");
    await call("/openapi.json");
    await call("/v1/dev/login", { body: { user: uid("dev") } });

    // Send a turn that asks, watch it with the bearer.
    const sent = await call(`${base}/turns`, { token, body: { turnId: "t1", message: "set up tests [ask]" } });
    expect(sent.status).toBe(202);
    const asked = await stream(`${base}/events?after=0`, token, (e) => e.type === "interaction.requested");
    const interaction = asked.events.at(-1)!.data.interaction as { id: string };

    // A stream token (its own response is where it is meant to be), then the stream with it.
    const minted = await call(`${base}/stream-token`, { token, body: {} });
    expect(minted.status).toBe(200);
    const streamToken = minted.body.token as string;
    seen.pop();
    markToken("the stream token", streamToken);
    record(
      `POST ${base}/stream-token (without the token)`,
      JSON.stringify({ ...minted.body, token: undefined, eventsUrl: undefined }),
    );
    const watching = stream(`${base}/events?access_token=${encodeURIComponent(streamToken)}`, undefined, isTurnEnd);

    // Answer with the secret: wrong first (the refusal names fields, never values), then right, then again.
    const answerPath = `${base}/interactions/${encodeURIComponent(interaction.id)}`;
    const refused = await call(answerPath, {
      token,
      body: {
        operationId: uid("op"),
        outcome: "accepted",
        data: { ...GOOD, extra: SECRET_ANSWER, workers: SECRET_ANSWER },
      },
    });
    expect(refused.status).toBe(422);
    const operationId = uid("op");
    expect((await call(answerPath, { token, body: { operationId, outcome: "accepted", data: GOOD } })).status).toBe(
      200,
    );
    expect((await call(answerPath, { token, body: { operationId, outcome: "accepted", data: GOOD } })).status).toBe(
      200,
    );
    expect(
      (
        await call(answerPath, {
          token,
          body: { operationId: uid("op"), outcome: "accepted", data: { ...GOOD, token: `${SECRET_ANSWER}-other` } },
        })
      ).status,
    ).toBe(409);
    const watched = await watching;
    expect(watched.events.at(-1)!.type).toBe("turn.completed");
    await stream(`${base}/events`, token, isTurnEnd, { "last-event-id": "0" });

    // Every read route.
    for (const path of [
      base,
      `${base}/messages`,
      `${base}/usage`,
      `${base}/turns/t1`,
      "/v1/conversations",
      "/v1/conversations?limit=5",
    ]) {
      expect((await call(path, { token })).status).toBe(200);
    }

    // A second turn, cancelled mid-run.
    await call(`${base}/turns`, { token, body: { turnId: "t2", message: "long job [long] [slow]" } });
    await call(`${base}/cancel`, { token, body: { operationId: uid("op"), reason: "stop it" } });
    await waitForTurn(token, cid, "t2");
    await call(`${base}/turns/t2`, { token });

    // The user's model key and an MCP server's auth: stored, listed, used by a turn, refused inline.
    const putSetting = (path: string, body: unknown) => call(path, { token, method: "PUT", body });
    expect((await putSetting("/v1/credentials/mine", { provider: "zai", key: MODEL_KEY })).status).toBe(200);
    expect(
      (
        await putSetting("/v1/mcp-servers/docs", {
          url: "https://mcp.example.test/sse",
          auth: { header: "Authorization", value: MCP_AUTH },
        })
      ).status,
    ).toBe(200);
    await call("/v1/credentials", { token });
    await call("/v1/mcp-servers", { token });
    await call(`${base}/turns`, {
      token,
      body: { turnId: "t4", message: "[whoami]", credential: "mine", mcpServers: ["docs"], model: "zai/glm-5.2" },
    });
    await waitForTurn(token, cid, "t4");
    await call(`${base}/turns/t4`, { token });
    await call(`${base}/messages`, { token });
    await call(`${base}/turns`, {
      token,
      body: { turnId: "t5", message: "x", providerOptions: { backend: { model: { model: "m", apiKey: MODEL_KEY } } } },
    });
    await putSetting("/v1/credentials/bad", { provider: "zai", key: MODEL_KEY, baseUrl: "https://x.test/?k=1" });

    // Refusals: other users, bad tokens, bad bodies, unknown routes.
    await call(base, { token: otherToken });
    await call(base, { token: await tokenFor(userId, { secret: "another-secret-that-is-long-enough-0123456789" }) });
    await call(base, { headers: { authorization: `Bearer ${token}x` } });
    await call(`${base}/events?access_token=${encodeURIComponent(streamToken)}x`);
    await call(`/v1/conversations/other/events?access_token=${encodeURIComponent(streamToken)}`);
    await call(`${base}/messages`, { token: streamToken });
    await call(`${base}/turns`, { token, body: "{not json", headers: { "content-type": "application/json" } });
    // A refusal names the field, never the value.
    await call(`${base}/turns`, { token, body: { turnId: "t3", message: "x", colour: SECRET_ANSWER } });
    await call(`${base}/turns`, { token, body: { turnId: SECRET_ANSWER.replaceAll("-", " "), message: "x" } });
    await call(`${base}/nope`, { token });

    // What is stored, then the delete, then what is left.
    expect(await dumpConversation(userId, cid, "before delete")).toBeGreaterThan(10);
    expect((await call(base, { token, method: "DELETE" })).status).toBe(200);
    await dumpConversation(userId, cid, "after delete");
    await call(base, { token });

    // The spy sees what the objects log (the sandbox they made ready), not only the test's own lines.
    expect(consoleLines.some((l) => l.includes("environment ready"))).toBe(true);
    expectNoSecrets();
  });

  it("a terminal: what it showed and its token are in no stored row and no log line; the Sandbox bearer in nothing", async () => {
    const userId = uid("user");
    const token = await tokenFor(userId);
    markToken("the user's token", token);
    const opened = await call("/v1/environment/terminals", { token, body: {} });
    expect(opened.status).toBe(201);
    const content = `terminal-content-${crypto.randomUUID()}`;
    const viewer = await openSocket(opened.body.url);
    typeLine(viewer, `echo ${content}`);
    await viewer.until((v) => v.output().includes(`${content}\r\n$ `), "the echo");
    record("the terminal's frames", JSON.stringify(viewer.frames));
    const tid = opened.body.terminal.terminalId as string;
    expect((await call(`/v1/environment/terminals/${tid}`, { token })).status).toBe(200);
    viewer.ws.close();
    const ownerKey = await deriveOwnerKey(testEnv.SESSION_ID_SECRET!, userId);
    const before = seen.length;
    await dump(env.USERS, ownerKey, "user object");
    expect(await dump(env.TERMINALS, `${ownerKey}/${tid}`, "terminal object")).toBeGreaterThan(0);
    // The rows and log lines hold neither what the terminal showed nor the token for its socket.
    const kept = [...seen.slice(before), ...consoleLines.map((text, i) => ({ where: `console line ${i + 1}`, text }))];
    for (const { where, text } of kept) {
      expect(text.includes(content), `the terminal's content in ${where}`).toBe(false);
      expect(text.includes(opened.body.token), `the terminal token in ${where}`).toBe(false);
    }
    expectNoSecrets();
  });

  it("a question with a secret field answered through the AI SDK's chat route", async () => {
    const userId = uid("carol");
    const token = await tokenFor(userId);
    markToken("carol's user token", token);
    const cid = uid("chat");
    const user = { id: "u1", role: "user", parts: [{ type: "text", text: "set up tests [ask]" }] };
    const asked = await call("/v1/chat", { token, body: { id: cid, trigger: "submit-message", messages: [user] } });
    expect(asked.status).toBe(200);
    const chunks = String(asked.body)
      .split("\n\n")
      .filter((f) => f.startsWith("data: {"))
      .map((f) => JSON.parse(f.slice(6)) as { type: string; toolName?: string; toolCallId?: string });
    const question = chunks.find((c) => c.type === "tool-input-available" && c.toolName === "question")!;
    const answer = (output: Record<string, unknown>) => ({
      id: cid,
      trigger: "submit-message",
      messageId: "u1:answer",
      messages: [
        user,
        {
          id: "u1:answer",
          role: "assistant",
          parts: [
            {
              type: "dynamic-tool",
              toolName: "question",
              toolCallId: question.toolCallId,
              state: "output-available",
              input: {},
              output,
            },
          ],
        },
      ],
    });
    // Refused first (the refusal names fields, never values), then answered.
    expect((await call("/v1/chat", { token, body: answer({ ...GOOD, workers: SECRET_ANSWER }) })).status).toBe(422);
    const continued = await call("/v1/chat", { token, body: answer(GOOD) });
    expect(continued.status).toBe(200);
    expect(String(continued.body)).toContain('"type":"finish"');
    await call(`/v1/chat/${cid}/messages`, { token });
    await call(`/v1/chat/${cid}/stream`, { token });
    await stream(`/v1/conversations/${cid}/events?after=0`, token, isTurnEnd);
    await dumpConversation(userId, cid, "chat");
    expectNoSecrets();
  });

  // Every fault of the emulator, each in a turn of a fresh user (so provisioning faults apply too).
  const faults: Array<[string, Record<string, unknown>, string]> = [
    ["severed streams", { dropStreamAfterFrames: 4, dropStreams: 2 }, "severed [long]"],
    ["repeated frames", { repeatFrames: true }, "repeat"],
    ["an inclusive replay", { inclusiveReplay: true, dropStreamAfterFrames: 4, dropStreams: 1 }, "inclusive"],
    ["a failing dispatch (503)", { failNext: { status: 503, count: 1, route: "runtime.run" } }, "fail dispatch"],
    [
      "an HTML error page (500)",
      { failNext: { status: 500, count: 1, route: "runtime.run", nonJson: true } },
      "html error",
    ],
    [
      "rate limited upstream (429)",
      { failNext: { status: 429, count: 1, route: "runtime.run", retryAfterSeconds: 2 } },
      "limited",
    ],
    ["a fast agent", { frameDelayMs: 0 }, "fast"],
    ["no answer dedupe claimed", { capabilities: { interactions: { responseDedupe: false } } }, "no dedupe [ask]"],
    ["capabilities that fail", { capabilitiesFail: true }, "caps fail"],
    ["a sandbox that fails to provision", { provisionOutcome: "failed" }, "provision fails"],
    ["a slow filesystem", { readinessLagMs: 30 }, "lagging"],
    ["a wrong execution admitted", { admitWrongExecutionId: true }, "wrong admission"],
    ["an ask bound to another session", { foreignBinding: true }, "foreign [ask]"],
    ["an answer whose delivery is unknown", { answerDeliveryUnknown: 1 }, "unknown delivery [ask]"],
    [
      "corrupt frames",
      {
        corruptFrames: [
          { id: 3, kind: "not_json" },
          { id: 5, kind: "invalid" },
          { id: 7, kind: "oversize" },
        ],
      },
      "corrupt",
    ],
    ["a withheld admission", { withholdAdmission: true }, "withheld"],
    ["a stalled stream", { stallStreamMs: 50, stallStreams: 1 }, "stalled"],
  ];
  for (const [name, fault, message] of faults) {
    // A withheld admission is settled by looking the run up after ADMISSION_TIMEOUT_MS (15 s here).
    const timeoutMs = "withholdAdmission" in fault ? 45_000 : undefined;
    it(
      `under ${name}`,
      async () => {
        const userId = uid("user");
        const token = await tokenFor(userId);
        markToken("the user token", token);
        const cid = uid("conv");
        const base = `/v1/conversations/${cid}`;
        await setFaults(fault);
        const sent = await call(`${base}/turns`, { token, body: { turnId: "t1", message } });
        if (sent.status === 202) {
          const read = await stream(
            `${base}/events?after=0`,
            token,
            (e) => isTurnEnd(e) || e.type === "interaction.requested",
          );
          const last = read.events.at(-1)!;
          if (last.type === "interaction.requested") {
            const iid = encodeURIComponent((last.data.interaction as { id: string }).id);
            const operationId = uid("op");
            const body = { operationId, outcome: "accepted", data: GOOD };
            const first = await call(`${base}/interactions/${iid}`, { token, body });
            if (first.status === 502) await call(`${base}/interactions/${iid}`, { token, body });
            if (first.status === 200 || first.status === 502)
              await stream(`${base}/events`, token, isTurnEnd, { "last-event-id": read.lastId! });
            else await call(`${base}/cancel`, { token, body: { operationId: uid("op") } });
          }
          await waitForTurn(token, cid, "t1");
        }
        for (const path of [base, `${base}/messages`, `${base}/usage`, `${base}/turns/t1`, "/v1/conversations"])
          await call(path, { token });
        await dumpConversation(userId, cid, name);
        expectNoSecrets();
      },
      timeoutMs,
    );
  }
});
