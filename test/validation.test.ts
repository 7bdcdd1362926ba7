import { describe, expect, it, vi } from "vitest";
import { api, counters, json, sendTurn, tokenFor, uid, waitForTurn } from "./helpers";

async function expectError(response: Promise<Response>, status: number, code: string, mentions?: string) {
  const res = await response;
  const body = await json(res);
  expect({ status: res.status, code: body.error?.code }).toEqual({ status, code });
  expect(typeof body.error.message).toBe("string");
  if (mentions) expect(body.error.message).toContain(mentions);
  return body;
}

describe("text that is whole", () => {
  it("a surrogate pair (a whole character) is text: the turn runs and its message comes back as sent", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    expect((await sendTurn(token, cid, turnId, "a whole emoji \ud83d\ude00")).status).toBe(202);
    expect((await waitForTurn(token, cid, turnId)).message).toBe("a whole emoji \u{1F600}");
  });
});

describe("bad input gets a documented 4xx and leaves stored state unchanged", () => {
  it("on every route", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "the one good turn");
    await waitForTurn(token, cid, turnId);

    const snapshot = async () => ({
      summary: await json(await api(`/v1/conversations/${cid}`, { token })),
      messages: await json(await api(`/v1/conversations/${cid}/messages`, { token })),
      turn: await json(await api(`/v1/conversations/${cid}/turns/${turnId}`, { token })),
      list: await json(await api("/v1/conversations", { token })),
      usage: await json(await api(`/v1/conversations/${cid}/usage`, { token })),
      dispatches: (await counters())["runs.dispatches"],
    });
    const before = await snapshot();
    const turns = `/v1/conversations/${cid}/turns`;

    // POST …/turns
    await expectError(
      api(turns, { token, body: "message=hi", headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
    await expectError(
      api(turns, { token, body: "{not json", headers: { "content-type": "application/json" } }),
      400,
      "invalid_json",
    );
    const unknown = await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "hi", colour: "red" } }),
      400,
      "invalid_request",
      "colour",
    );
    expect(unknown.error.details.issues[0]).toEqual({ path: "colour", message: "unknown field" });
    await expectError(api(turns, { token, body: { turnId: uid("t") } }), 400, "invalid_request", "message");
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "" } }),
      400,
      "invalid_request",
      "message",
    );
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: 42 } }),
      400,
      "invalid_request",
      "message",
    );
    await expectError(
      api(turns, { token, body: { turnId: "has space", message: "hi" } }),
      400,
      "invalid_request",
      "turnId",
    );
    await expectError(
      api(turns, { token, body: { turnId: "x".repeat(129), message: "hi" } }),
      400,
      "invalid_request",
      "turnId",
    );
    await expectError(api(turns, { token, body: { message: "hi" } }), 400, "turn_id_required");
    await expectError(
      api(turns, { token, body: { turnId: "a", message: "hi" }, headers: { "idempotency-key": "b" } }),
      400,
      "turn_id_mismatch",
    );
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "hi", interactions: { "Bad Kind": true } } }),
      400,
      "invalid_request",
      "interactions",
    );
    await expectError(api(turns, { token, body: [1, 2] }), 400, "invalid_request");
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "x".repeat(64 * 1024 + 1) } }),
      413,
      "message_too_large",
    );
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "x".repeat(200 * 1024) } }),
      413,
      "payload_too_large",
    );
    // A multi-byte message is measured in UTF-8 bytes, not characters.
    await expectError(
      api(turns, { token, body: { turnId: uid("t"), message: "é".repeat(33 * 1024) } }),
      413,
      "message_too_large",
    );
    // A lone UTF-16 surrogate is valid JSON but not text: refused naming the field, on every route that digests input.
    for (const [path, body, field] of [
      [turns, { turnId: uid("t"), message: "half \ud800 a character" }, "message"],
      [turns, { turnId: uid("t"), message: "hi", model: "model-\udfff" }, "model"],
      [`/v1/conversations/${cid}/cancel`, { operationId: uid("op"), reason: "\ud83d" }, "reason"],
      [
        `/v1/conversations/${cid}/interactions/any-ask`,
        { operationId: uid("op"), outcome: "accepted", data: { project: "x\udc00" } },
        "data.project",
      ],
      [
        `/v1/conversations/${cid}/interactions/any-ask`,
        { operationId: uid("op"), outcome: "accepted", data: { "\ud800": "x" } },
        "(its name)",
      ],
      [
        "/v1/chat",
        {
          id: cid,
          trigger: "submit-message",
          messages: [{ id: uid("m"), role: "user", parts: [{ type: "text", text: "\ud800" }] }],
        },
        "messages.0.parts.0.text",
      ],
    ] as const) {
      const refused = await expectError(api(path, { token, body }), 400, "invalid_request", field);
      expect(refused.error.message).toContain("surrogate");
    }
    // A bad conversation id, on every conversation route.
    for (const bad of ["bad%20id", "x".repeat(129), "semi%3Bcolon"]) {
      await expectError(
        api(`/v1/conversations/${bad}/turns`, { token, body: { turnId: uid("t"), message: "hi" } }),
        400,
        "invalid_request",
        "conversation id",
      );
      await expectError(api(`/v1/conversations/${bad}`, { token }), 400, "invalid_request");
      await expectError(api(`/v1/conversations/${bad}/events`, { token }), 400, "invalid_request");
      await expectError(api(`/v1/conversations/${bad}/messages`, { token }), 400, "invalid_request");
      await expectError(api(`/v1/conversations/${bad}`, { token, method: "DELETE" }), 400, "invalid_request");
    }

    // GET …/turns/:turnId
    await expectError(api(`${turns}/bad%20turn`, { token }), 400, "invalid_request", "turn id");
    await expectError(api(`${turns}/${uid("nope")}`, { token }), 404, "turn_not_found");

    // GET …/events
    await expectError(api(`/v1/conversations/${cid}/events?after=-1`, { token }), 400, "invalid_cursor");
    await expectError(
      api(`/v1/conversations/${cid}/events`, { token, headers: { "last-event-id": "abc" } }),
      400,
      "invalid_cursor",
    );

    // Unknown conversations
    const other = uid("never-used");
    await expectError(api(`/v1/conversations/${other}`, { token }), 404, "conversation_not_found");
    await expectError(api(`/v1/conversations/${other}/messages`, { token }), 404, "conversation_not_found");
    await expectError(api(`/v1/conversations/${other}`, { token, method: "DELETE" }), 404, "conversation_not_found");

    // POST …/cancel, POST …/interactions/:iid, GET …/usage
    await expectError(
      api(`/v1/conversations/${cid}/cancel`, { token, body: {} }),
      400,
      "invalid_request",
      "operationId",
    );
    await expectError(
      api(`/v1/conversations/${cid}/cancel`, { token, body: { operationId: "op", why: "x" } }),
      400,
      "invalid_request",
      "why",
    );
    await expectError(
      api(`/v1/conversations/${cid}/cancel`, { token, body: "x", headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
    const answers = `/v1/conversations/${cid}/interactions/some-ask`;
    await expectError(
      api(answers, { token, body: { operationId: "op", outcome: "maybe" } }),
      400,
      "invalid_request",
      "outcome",
    );
    await expectError(api(answers, { token, body: { outcome: "declined" } }), 400, "invalid_request", "operationId");
    await expectError(
      api(answers, { token, body: { operationId: "op", outcome: "accepted", data: [1] } }),
      400,
      "invalid_request",
      "data",
    );
    await expectError(
      api(answers, { token, body: { operationId: "op", outcome: "declined", extra: true } }),
      400,
      "invalid_request",
      "extra",
    );
    await expectError(api(`/v1/conversations/${uid("never")}/usage`, { token }), 404, "conversation_not_found");
    await expectError(
      api(`/v1/conversations/${uid("never")}/cancel`, { token, body: { operationId: "op" } }),
      404,
      "conversation_not_found",
    );

    // GET /v1/conversations
    await expectError(api("/v1/conversations?limit=0", { token }), 400, "invalid_request", "limit");
    await expectError(api("/v1/conversations?limit=abc", { token }), 400, "invalid_request", "limit");

    // Unknown routes
    await expectError(api("/v1/nothing-here", { token }), 404, "not_found");

    expect(await snapshot()).toEqual(before);
  });
});

describe("a body nested too deeply", () => {
  it("is a 400 naming the bound on every JSON route of the OpenAPI document, nothing logged as an error, nothing stored", async () => {
    const token = await tokenFor(uid("user"));
    const cid = uid("conv");
    const turnId = uid("turn");
    await sendTurn(token, cid, turnId, "the one good turn");
    await waitForTurn(token, cid, turnId);
    const before = await json(await api(`/v1/conversations/${cid}/messages`, { token }));
    const document = await json(await api("/openapi.json"));
    const params: Record<string, string> = { cid, turnId, iid: "any-ask", id: `wh_${"0".repeat(32)}` };
    const routes = Object.entries<Record<string, { requestBody?: { content: Record<string, unknown> } }>>(
      document.paths,
    ).flatMap(([path, operations]) =>
      Object.entries(operations)
        // JSON bodies only (an attachment's is multipart: 415 for JSON).
        .filter(([, operation]) => operation.requestBody?.content["application/json"] !== undefined)
        .map(([method]) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, (_, name: string) => params[name]!)}`),
    );
    expect(routes).toContain("POST /v1/dev/login");
    expect(routes.length).toBeGreaterThanOrEqual(10);
    const errors: unknown[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((...args) => void errors.push(args));
    const answers: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    try {
      for (const route of routes) {
        const [method, path] = route.split(" ") as [string, string];
        const send = (depth: number) =>
          api(path, {
            method,
            token,
            body: `{"a":${"[".repeat(depth)}${"]".repeat(depth)}}`,
            headers: { "content-type": "application/json" },
          });
        // 2,500 levels in 5 KB (the probe's: it ran the checks out of stack), and 2,000 in 4 KB (the smallest body
        // bound of these routes, which answer 413 to the first).
        for (const depth of [2_500, 2_000]) {
          const deep = await send(depth);
          const refused = await json(deep);
          const answer = {
            status: deep.status,
            code: refused.error?.code,
            message: refused.error?.message,
            maxDepth: refused.error?.details?.maxDepth,
          };
          const tooDeep = {
            status: 400,
            code: "invalid_request",
            message: "the body is invalid: (body): nests arrays and objects deeper than 64 levels",
            maxDepth: 64,
          };
          answers[`${route} at ${depth}`] = answer;
          expected[`${route} at ${depth}`] = depth > 2_000 && deep.status === 413 ? answer : tooDeep;
        }
        // At the bound, the body is read on: its schema answers (naming its own fields), not the depth.
        const atBound = await json(await send(63));
        expect(atBound.error?.message ?? "", route).not.toContain("levels");
      }
    } finally {
      spy.mockRestore();
    }
    expect(answers).toEqual(expected);
    expect(errors).toEqual([]);
    expect(await json(await api(`/v1/conversations/${cid}/messages`, { token }))).toEqual(before);
  });
});
