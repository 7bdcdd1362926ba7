import { describe, expect, it } from "vitest";
import { InteractionRequest } from "../schemas/contracts";
import { allowedGrants, answerProblems } from "./interaction-answers";

const question = InteractionRequest.parse({
  id: "q1",
  kind: "question",
  title: "Details",
  answerSpec: {
    fields: [
      { name: "project", type: "text", required: true, maxLength: 10 },
      { name: "framework", type: "select", options: ["vitest", { value: "jest", label: "Jest" }], required: true },
      { name: "coverage", type: "boolean" },
      { name: "workers", type: "number", min: 1, max: 4, integer: true },
      { name: "labels", type: "select", options: ["ci"], multi: true, allowCustom: true },
      { name: "token", type: "secret" },
    ],
  },
  allowedOutcomes: ["accepted", "declined"],
});

const permission = (scopes?: string[]) =>
  InteractionRequest.parse({
    id: "p1",
    kind: "permission",
    title: "Run?",
    ...(scopes ? { responseScopes: scopes } : {}),
    answerSpec: { fields: [{ name: "grant", type: "select", options: ["allow_once", "allow_session", "allow_always", "deny"], required: true }] },
  });

describe("answers are checked against the exact request", () => {
  it("accepts a complete, well-typed answer", () => {
    expect(answerProblems(question, "accepted", { project: "demo", framework: "jest", coverage: true, workers: 2, labels: ["ci", "mine"], token: "s3cret" })).toEqual([]);
    expect(answerProblems(question, "declined", undefined)).toEqual([]);
  });

  it("names each problem: undeclared, wrong type, missing required, out of range, not an option, forbidden names", () => {
    const data = JSON.parse('{"framework":"mocha","coverage":"yes","workers":2.5,"extra":1,"__proto__":{"x":1},"token":5}');
    expect(answerProblems(question, "accepted", data)).toEqual([
      "extra: is not a field of this request",
      "__proto__: is a forbidden field name",
      "project: is required",
      "framework: mocha is not one of vitest, jest",
      "coverage: must be true or false",
      "workers: must be a whole number",
      "token: must be text",
    ]);
    expect(answerProblems(question, "accepted", { project: "x".repeat(11), framework: "vitest", workers: 9 })).toEqual([
      "project: must be at most 10 characters",
      "workers: must be at most 4",
    ]);
    expect(answerProblems(question, "accepted", { project: "p", framework: "vitest", constructor: 1 })).toEqual(["constructor: is a forbidden field name"]);
  });

  it("refuses an outcome the request does not allow, and data on a non-accepted answer", () => {
    expect(answerProblems(question, "cancelled", undefined)).toEqual(["outcome: cancelled is not allowed here (accepted, declined)"]);
    expect(answerProblems(question, "declined", { project: "x" })).toEqual(["data: only an accepted answer carries data"]);
  });

  it("a permission grant must be one its response scopes allow; an omitted scope allows only once", () => {
    expect(allowedGrants(permission())).toEqual(["allow_once", "deny"]);
    expect(allowedGrants(permission(["once", "session"]))).toEqual(["allow_once", "deny", "allow_session"]);
    expect(answerProblems(permission(), "accepted", { grant: "allow_session" })).toEqual(["grant: allow_session is not one of allow_once, deny"]);
    expect(answerProblems(permission(["session"]), "accepted", { grant: "allow_session" })).toEqual([]);
    expect(answerProblems(permission(["once"]), "accepted", { grant: "allow_always" })[0]).toContain("allow_always is not one of");
  });

  it("reads the contract's scope vocabulary too: interaction allows once, persistent allows always", () => {
    expect(allowedGrants(permission(["interaction"]))).toEqual(["allow_once", "deny"]);
    expect(allowedGrants(permission(["interaction", "session", "persistent"]))).toEqual(["allow_once", "deny", "allow_session", "allow_always"]);
    expect(answerProblems(permission(["interaction"]), "accepted", { grant: "allow_once" })).toEqual([]);
    expect(answerProblems(permission(["session"]), "accepted", { grant: "allow_once" })[0]).toContain("allow_once is not one of");
  });
});

describe("answers at their boundaries", () => {
  it("maxLength, min and max are inclusive; a value past them is refused", () => {
    const base = { framework: "vitest" };
    expect(answerProblems(question, "accepted", { ...base, project: "x".repeat(10), workers: 1 })).toEqual([]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 4 })).toEqual([]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 0 })).toEqual(["workers: must be at least 1"]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 5 })).toEqual(["workers: must be at most 4"]);
  });

  it("null for an optional field is no answer to it; for a required one it is missing", () => {
    expect(answerProblems(question, "accepted", { project: "p", framework: "jest", coverage: null, workers: null, token: null })).toEqual([]);
    expect(answerProblems(question, "accepted", { project: null, framework: "jest" })).toEqual(["project: is required"]);
  });

  it("allowCustom never lets a permission answer name a grant its scopes do not allow", () => {
    const custom = InteractionRequest.parse({
      id: "p2",
      kind: "permission",
      title: "Run?",
      answerSpec: { fields: [{ name: "grant", type: "select", options: ["allow_once", "allow_always", "deny"], allowCustom: true, required: true }] },
    });
    expect(answerProblems(custom, "accepted", { grant: "allow_once" })).toEqual([]);
    expect(answerProblems(custom, "accepted", { grant: "allow_always" })[0]).toContain("allow_always is not one of");
    expect(answerProblems(custom, "accepted", { grant: "sudo" })[0]).toContain("sudo is not one of");
  });
});

