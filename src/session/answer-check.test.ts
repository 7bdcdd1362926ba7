import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowedDecisions, decisionField } from "../../public/wire/grants.js";
import { type InteractionField, InteractionRequest } from "../schemas/contracts";
import { answerProblems, approvalOf } from "./answer-check";

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
    answerSpec: {
      fields: [
        {
          name: "grant",
          type: "select",
          options: ["allow_once", "allow_session", "allow_always", "deny"],
          required: true,
        },
      ],
    },
  });

describe("answers are checked against the exact request", () => {
  it("accepts a complete, well-typed answer", () => {
    expect(
      answerProblems(question, "accepted", {
        project: "demo",
        framework: "jest",
        coverage: true,
        workers: 2,
        labels: ["ci", "mine"],
        token: "s3cret",
      }),
    ).toEqual([]);
    expect(answerProblems(question, "declined", undefined)).toEqual([]);
  });

  it("names each problem: undeclared, wrong type, missing required, out of range, not an option, forbidden names", () => {
    const data = JSON.parse(
      '{"framework":"mocha","coverage":"yes","workers":2.5,"extra":1,"__proto__":{"x":1},"token":5}',
    );
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
    expect(answerProblems(question, "accepted", { project: "p", framework: "vitest", constructor: 1 })).toEqual([
      "constructor: is a forbidden field name",
    ]);
  });

  it("refuses an outcome the request does not allow, and data on a non-accepted answer", () => {
    expect(answerProblems(question, "cancelled", undefined)).toEqual([
      "outcome: cancelled is not allowed here (accepted, declined)",
    ]);
    expect(answerProblems(question, "declined", { project: "x" })).toEqual([
      "data: only an accepted answer carries data",
    ]);
  });

  it("a permission grant must be one its response scopes allow; an omitted scope allows only once", () => {
    expect(allowedDecisions(permission())).toEqual(["allow_once", "deny"]);
    expect(allowedDecisions(permission(["once", "session"]))).toEqual(["allow_once", "allow_session", "deny"]);
    expect(answerProblems(permission(), "accepted", { grant: "allow_session" })).toEqual([
      "grant: allow_session is not one of allow_once, deny",
    ]);
    expect(answerProblems(permission(["session"]), "accepted", { grant: "allow_session" })).toEqual([]);
    expect(answerProblems(permission(["once"]), "accepted", { grant: "allow_always" })[0]).toContain(
      "allow_always is not one of",
    );
  });

  it("reads the contract's scope vocabulary too: interaction allows once, persistent allows always", () => {
    expect(allowedDecisions(permission(["interaction"]))).toEqual(["allow_once", "deny"]);
    expect(allowedDecisions(permission(["interaction", "session", "persistent"]))).toEqual([
      "allow_once",
      "allow_session",
      "allow_always",
      "deny",
    ]);
    expect(answerProblems(permission(["interaction"]), "accepted", { grant: "allow_once" })).toEqual([]);
    expect(answerProblems(permission(["session"]), "accepted", { grant: "allow_once" })[0]).toContain(
      "allow_once is not one of",
    );
  });
});

describe("answers in the ask's own form", () => {
  const response = (scopes?: string[]) =>
    InteractionRequest.parse({
      id: "p3",
      kind: "permission",
      title: "Run?",
      ...(scopes ? { responseScopes: scopes } : {}),
      answerSpec: { fields: [{ name: "response", type: "select", options: ["allow", "deny"], required: true }] },
    });

  it('the Sandbox\'s { response: "allow" }: the decision is whatever field the spec names; allow is a one-time grant', () => {
    expect(decisionField(response())?.name).toBe("response");
    expect(answerProblems(response(), "accepted", { response: "allow" })).toEqual([]);
    expect(answerProblems(response(), "accepted", { response: "deny" })).toEqual([]);
    expect(answerProblems(response(), "accepted", { grant: "allow_once" })).toEqual([
      "grant: is not a field of this request",
      "response: is required",
    ]);
    // allow names no scope: a request that permits only session grants does not take it.
    expect(answerProblems(response(["session"]), "accepted", { response: "allow" })).toEqual([
      "response: allow is not one of deny",
    ]);
    expect(approvalOf(response(), "accepted", { response: "allow" })).toBe(true);
    expect(approvalOf(response(), "accepted", { response: "deny" })).toBe(false);
  });

  it("a grant the table does not know is never taken for a permission (its scope is unknown)", () => {
    const odd = InteractionRequest.parse({
      id: "p4",
      kind: "permission",
      title: "Run?",
      responseScopes: ["interaction", "session", "persistent"],
      answerSpec: {
        fields: [{ name: "grant", type: "select", options: ["allow_once", "allow_forever", "deny"], required: true }],
      },
    });
    expect(answerProblems(odd, "accepted", { grant: "allow_forever" })).toEqual([
      "grant: allow_forever is not one of allow_once, deny",
    ]);
  });

  it("a plan's decision by the table; a plan option the table does not know is taken, and not claimed as approval", () => {
    const plan = InteractionRequest.parse({
      id: "pl",
      kind: "plan",
      title: "Plan?",
      answerSpec: {
        fields: [
          { name: "verdict", type: "select", options: ["approve", "reject", "revise"], required: true },
          { name: "feedback", type: "text" },
        ],
      },
    });
    expect(approvalOf(plan, "accepted", { verdict: "approve" })).toBe(true);
    expect(approvalOf(plan, "accepted", { verdict: "reject", feedback: "no" })).toBe(false);
    expect(answerProblems(plan, "accepted", { verdict: "revise" })).toEqual([]);
    expect(approvalOf(plan, "accepted", { verdict: "revise" })).toBeUndefined();
  });
});

describe("answers at their boundaries", () => {
  it("maxLength, min and max are inclusive; a value past them is refused", () => {
    const base = { framework: "vitest" };
    expect(answerProblems(question, "accepted", { ...base, project: "x".repeat(10), workers: 1 })).toEqual([]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 4 })).toEqual([]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 0 })).toEqual([
      "workers: must be at least 1",
    ]);
    expect(answerProblems(question, "accepted", { ...base, project: "p", workers: 5 })).toEqual([
      "workers: must be at most 4",
    ]);
  });

  it("null for an optional field is no answer to it; for a required one it is missing", () => {
    expect(
      answerProblems(question, "accepted", {
        project: "p",
        framework: "jest",
        coverage: null,
        workers: null,
        token: null,
      }),
    ).toEqual([]);
    expect(answerProblems(question, "accepted", { project: null, framework: "jest" })).toEqual([
      "project: is required",
    ]);
  });

  it("allowCustom never lets a permission answer name a grant its scopes do not allow", () => {
    const custom = InteractionRequest.parse({
      id: "p2",
      kind: "permission",
      title: "Run?",
      answerSpec: {
        fields: [
          {
            name: "grant",
            type: "select",
            options: ["allow_once", "allow_always", "deny"],
            allowCustom: true,
            required: true,
          },
        ],
      },
    });
    expect(answerProblems(custom, "accepted", { grant: "allow_once" })).toEqual([]);
    expect(answerProblems(custom, "accepted", { grant: "allow_always" })[0]).toContain("allow_always is not one of");
    expect(answerProblems(custom, "accepted", { grant: "sudo" })[0]).toContain("sudo is not one of");
  });
});

describe("answer validation properties (fast-check)", () => {
  const FORBIDDEN = ["__proto__", "constructor", "prototype"];
  const fieldName = fc.constantFrom("project", "framework", "coverage", "workers", "labels", "token", "notes", "grant");
  const option = fc.constantFrom("a", "b", "c", "allow_once", "allow_session", "allow_always", "deny");
  const field = fc.oneof(
    fc.record(
      { type: fc.constant("text"), maxLength: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }) },
      { requiredKeys: ["type"] },
    ),
    fc.record({ type: fc.constant("secret") }),
    fc.record({ type: fc.constant("boolean") }),
    fc.record(
      {
        type: fc.constant("number"),
        min: fc.option(fc.integer({ min: -5, max: 5 }), { nil: undefined }),
        max: fc.option(fc.integer({ min: 5, max: 20 }), { nil: undefined }),
        integer: fc.option(fc.boolean(), { nil: undefined }),
      },
      { requiredKeys: ["type"] },
    ),
    fc.record(
      {
        type: fc.constant("select"),
        options: fc.uniqueArray(option, { minLength: 1, maxLength: 4 }),
        multi: fc.option(fc.boolean(), { nil: undefined }),
        allowCustom: fc.option(fc.boolean(), { nil: undefined }),
      },
      { requiredKeys: ["type", "options"] },
    ),
  );
  const request = fc
    .record({
      kind: fc.constantFrom("question", "permission"),
      names: fc.uniqueArray(fieldName, { minLength: 1, maxLength: 4 }),
      fields: fc.array(fc.tuple(field, fc.boolean()), { minLength: 4, maxLength: 4 }),
      responseScopes: fc.option(fc.subarray(["interaction", "once", "session", "persistent", "always"]), {
        nil: undefined,
      }),
      allowedOutcomes: fc.option(fc.subarray(["accepted", "declined", "cancelled"] as const, { minLength: 1 }), {
        nil: undefined,
      }),
    })
    .map(({ kind, names, fields, responseScopes, allowedOutcomes }) =>
      InteractionRequest.parse({
        id: "r1",
        kind,
        title: "t",
        answerSpec: { fields: names.map((name, i) => ({ name, ...fields[i]![0], required: fields[i]![1] })) },
        ...(responseScopes ? { responseScopes } : {}),
        ...(allowedOutcomes ? { allowedOutcomes } : {}),
      }),
    );

  /** A value for a field: usually one of the right type near its limits, sometimes any JSON at all. */
  const valueFor = (f: InteractionField): fc.Arbitrary<unknown> => {
    const any = fc.jsonValue({ maxDepth: 2 });
    switch (f.type) {
      case "text":
      case "secret":
        return fc.oneof(fc.string({ maxLength: 10 }), any);
      case "boolean":
        return fc.oneof(fc.boolean(), any);
      case "number":
        return fc.oneof(
          fc.integer({ min: -8, max: 24 }),
          fc.double({ min: -8, max: 24, noNaN: true }),
          fc.constantFrom(Number.POSITIVE_INFINITY, Number.NaN),
          any,
        );
      case "select": {
        const choice = fc.oneof(
          fc.constantFrom(
            ...(f as { options: Array<string | { value: string }> }).options.map((o) =>
              typeof o === "string" ? o : o.value,
            ),
          ),
          option,
          fc.string({ maxLength: 3 }),
        );
        return fc.oneof(choice, fc.array(choice, { maxLength: 3 }), any);
      }
      default:
        return any;
    }
  };

  /**
   * JSON as an attacker sends it, with a forbidden name as an own member (as JSON.parse leaves it)
   * at the top of `value` (depth 0) or one array and object further down; and that member's path.
   */
  const PLACEHOLDER = "\u0000forbidden";
  const withForbidden = (value: unknown, name: string, depth: number): unknown =>
    JSON.parse(
      JSON.stringify(depth === 0 ? { [PLACEHOLDER]: value } : { nest: [{ [PLACEHOLDER]: value }] }).replace(
        JSON.stringify(PLACEHOLDER),
        JSON.stringify(name),
      ),
    );
  const forbiddenPath = (field: string, name: string, depth: number) =>
    depth === 0 ? `${field}.${name}` : `${field}.nest[0].${name}`;

  const answer = request.chain((req) =>
    fc.record({
      req: fc.constant(req),
      outcome: fc.constantFrom("accepted", "declined", "cancelled") as fc.Arbitrary<
        "accepted" | "declined" | "cancelled"
      >,
      values: fc.tuple(
        ...req.answerSpec.fields.map((f) =>
          fc.option(fc.option(valueFor(f), { nil: null }), { nil: undefined, freq: 3 }),
        ),
      ),
      extra: fc.option(
        fc.tuple(fc.constantFrom("extra", "notes", "Project", ...FORBIDDEN), fc.jsonValue({ maxDepth: 2 })),
        { freq: 2 },
      ),
      nested: fc.option(fc.tuple(fc.constantFrom(...FORBIDDEN), fc.integer({ min: 0, max: 1 })), { freq: 3 }),
    }),
  );

  function build({
    req,
    values,
    extra,
    nested,
  }: {
    req: InteractionRequest;
    values: unknown[];
    extra: [string, unknown] | null;
    nested: [string, number] | null;
  }) {
    const data: Record<string, unknown> = {};
    req.answerSpec.fields.forEach((f, i) => {
      if (values[i] !== undefined) data[f.name] = values[i];
    });
    if (extra)
      Object.defineProperty(data, extra[0], { value: extra[1], enumerable: true, writable: true, configurable: true });
    if (nested && req.answerSpec.fields.length > 0) {
      // Hide a forbidden name inside the first field's value.
      const target = req.answerSpec.fields[0]!.name;
      data[target] = withForbidden(data[target] ?? "x", nested[0], nested[1]);
    }
    return data;
  }

  /** Whether a JSON value holds a forbidden name as an own member, at any depth. */
  const hasForbidden = (v: unknown): boolean =>
    Array.isArray(v)
      ? v.some(hasForbidden)
      : typeof v === "object" &&
        v !== null &&
        Object.keys(v).some((k) => FORBIDDEN.includes(k) || hasForbidden((v as Record<string, unknown>)[k]));

  /** The rules, written once more from the spec's side: the validator must agree on every input. */
  function specAllows(req: InteractionRequest, outcome: string, data: Record<string, unknown>): boolean {
    if (!(req.allowedOutcomes ?? ["accepted", "declined", "cancelled"]).includes(outcome as never)) return false;
    if (outcome !== "accepted") return Object.keys(data).length === 0;
    if (hasForbidden(data)) return false;
    const names = new Set(req.answerSpec.fields.map((f) => f.name));
    if (Object.keys(data).some((k) => !names.has(k))) return false;
    return req.answerSpec.fields.every((f) => {
      const v = Object.hasOwn(data, f.name) ? data[f.name] : undefined;
      if (v === undefined || v === null) return !f.required;
      const spec = f as InteractionField & {
        maxLength?: number;
        min?: number;
        max?: number;
        integer?: boolean;
        options?: Array<string | { value: string }>;
        multi?: boolean;
        allowCustom?: boolean;
      };
      switch (f.type) {
        case "text":
          return typeof v === "string" && (spec.maxLength === undefined || v.length <= spec.maxLength);
        case "secret":
          return typeof v === "string";
        case "boolean":
          return typeof v === "boolean";
        case "number":
          return (
            typeof v === "number" &&
            Number.isFinite(v) &&
            (!spec.integer || Number.isInteger(v)) &&
            (spec.min === undefined || v >= spec.min) &&
            (spec.max === undefined || v <= spec.max)
          );
        case "select": {
          let options = spec.options!.map((o) => (typeof o === "string" ? o : o.value));
          // A permission's decision field offers only the grants its scopes allow (the shared table).
          if (f === decisionField(req)) options = allowedDecisions(req);
          const chosen = spec.multi ? v : [v];
          if (!Array.isArray(chosen) || chosen.some((c) => typeof c !== "string")) return false;
          return (
            chosen.every((c) => options.includes(c as string)) ||
            (spec.allowCustom === true && req.kind !== "permission")
          );
        }
        default:
          return false;
      }
    });
  }

  it("nothing is accepted unless the spec allows it, and everything the spec allows is accepted", () => {
    fc.assert(
      fc.property(answer, (a) => {
        const data = build(a);
        const problems = answerProblems(a.req, a.outcome, data);
        expect(problems.length === 0, `problems: ${JSON.stringify(problems)}`).toBe(specAllows(a.req, a.outcome, data));
      }),
      { numRuns: 1500 },
    );
  });

  it("a forbidden name at any depth of an accepted answer is refused and named, whatever else the answer holds", () => {
    fc.assert(
      fc.property(answer, fc.constantFrom(...FORBIDDEN), fc.integer({ min: 0, max: 1 }), (a, name, depth) => {
        const data = build({ ...a, nested: null });
        const target = a.req.answerSpec.fields[0]!.name;
        data[target] = withForbidden(data[target] ?? "x", name, depth);
        expect(answerProblems(a.req, "accepted", data)).toContain(
          `${forbiddenPath(target, name, depth)}: is a forbidden field name`,
        );
      }),
      { numRuns: 500 },
    );
  });

  it("a forbidden name as a member of the answer itself is refused and named", () => {
    fc.assert(
      fc.property(answer, fc.constantFrom(...FORBIDDEN), fc.jsonValue({ maxDepth: 2 }), (a, name, value) => {
        const data = {
          ...build({ ...a, extra: null, nested: null }),
          ...(withForbidden(value, name, 0) as Record<string, unknown>),
        };
        expect(Object.keys(data)).toContain(name);
        expect(answerProblems(a.req, "accepted", data)).toContain(`${name}: is a forbidden field name`);
      }),
      { numRuns: 300 },
    );
  });
});
