/**
 * The decisions the page's permission and plan cards offer (public/wire/grants.js), read from the
 * request's own answerSpec and responseScopes, and checked against the server's answer check
 * (src/session/answer-check.ts), which reads the same table: what the page offers, the
 * server takes; what it does not offer, the server refuses.
 */
import { describe, expect, it } from "vitest";
import { allowedDecisions, decisionField, decisionOf, yesOrNo } from "../../public/wire/grants.js";
import { InteractionRequest } from "../../src/schemas/contracts";
import { answerProblems } from "../../src/session/answer-check";

const grantSpec = (options: Array<string | { value: string; label?: string }>) => ({
  fields: [
    { name: "grant", type: "select", label: "Allow?", options, required: true },
    { name: "feedback", type: "text", label: "Anything the agent should know?" },
  ],
});

const REQUESTS = {
  legacy: {
    id: "a",
    kind: "permission",
    title: "Run?",
    responseScopes: ["once", "session"],
    answerSpec: grantSpec(["allow_once", "allow_session", "deny"]),
  },
  contract: {
    id: "b",
    kind: "permission",
    title: "Run?",
    responseScopes: ["interaction", "session", "persistent"],
    answerSpec: grantSpec(["allow_once", "allow_session", "deny"]),
  },
  omitted: {
    id: "c",
    kind: "permission",
    title: "Run?",
    answerSpec: grantSpec(["allow_once", "allow_session", "allow_always", "deny"]),
  },
  // The CLI Bridge's Pi ask: options with labels, the contract's one-time scope.
  bridge: {
    id: "d",
    kind: "permission",
    title: "Permission: bash",
    responseScopes: ["interaction"],
    answerSpec: {
      fields: [
        {
          name: "grant",
          label: "Decision",
          required: true,
          type: "select",
          options: [
            { value: "allow_once", label: "Allow once" },
            { value: "deny", label: "Deny" },
          ],
        },
      ],
    },
  },
  // The Sandbox SDK's respondToPermission(id, { response: "allow" }).
  response: {
    id: "e",
    kind: "permission",
    title: "Run?",
    answerSpec: {
      fields: [{ name: "response", type: "select", label: "Allow?", options: ["allow", "deny"], required: true }],
    },
  },
  plan: {
    id: "f",
    kind: "plan",
    title: "Plan?",
    answerSpec: {
      fields: [
        { name: "decision", type: "select", options: ["approve", "reject"], required: true },
        { name: "feedback", type: "text" },
      ],
    },
  },
} as const;

const labels = (request: Parameters<typeof allowedDecisions>[0]) =>
  allowedDecisions(request).map((v) => decisionOf(request, v)?.label);

describe("the decisions an approval card offers", () => {
  it("from the request's own field and scopes; Allow once stays in the contract's vocabulary", () => {
    expect(labels(REQUESTS.legacy)).toEqual(["Allow once", "Allow for this session", "Deny"]);
    expect(labels(REQUESTS.contract)).toEqual(["Allow once", "Allow for this session", "Deny"]);
    expect(labels(REQUESTS.omitted)).toEqual(["Allow once", "Deny"]);
    expect(labels(REQUESTS.bridge)).toEqual(["Allow once", "Deny"]);
    expect(labels(REQUESTS.plan)).toEqual(["Approve", "Reject with feedback"]);
  });

  it("in the Sandbox SDK's form: the response field, allow (once) or deny", () => {
    expect(decisionField(REQUESTS.response)?.name).toBe("response");
    expect(allowedDecisions(REQUESTS.response)).toEqual(["allow", "deny"]);
    expect(labels(REQUESTS.response)).toEqual(["Allow once", "Deny"]);
    expect(yesOrNo(REQUESTS.response, true)).toEqual({ response: "allow" });
    expect(yesOrNo(REQUESTS.response, false)).toEqual({ response: "deny" });
  });

  it("a question has no decision field; an approval without a known option is answered as a form", () => {
    expect(
      decisionField({
        kind: "question",
        answerSpec: { fields: [{ name: "grant", type: "select", options: ["allow_once"] }] },
      }),
    ).toBeNull();
    expect(decisionField({ kind: "permission", answerSpec: { fields: [{ name: "ok", type: "boolean" }] } })).toBeNull();
  });

  it("every decision offered is one the server takes; every option not offered, the server refuses", () => {
    for (const [name, raw] of Object.entries(REQUESTS)) {
      const request = InteractionRequest.parse(raw);
      const field = decisionField(request)!;
      const options = (field.options ?? []).map((o) => (typeof o === "string" ? o : o.value));
      const offered = allowedDecisions(request);
      for (const value of options) {
        const problems = answerProblems(request, "accepted", { [field.name]: value });
        expect(problems, `${name}: ${value}`).toEqual(
          offered.includes(value) ? [] : [expect.stringContaining(`${value} is not one of`)],
        );
      }
    }
  });
});
