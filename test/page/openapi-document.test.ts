// The OpenAPI document checked by a validator we did not write: @seriousme/openapi-schema-validator
// holds /openapi.json to the OpenAPI 3.1 schema.
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/http/openapi";

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(openApiDocument("test")));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("the validator refuses a broken copy (a response without its description)", async () => {
    const broken = structuredClone(openApiDocument("test")) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    broken.paths["/v1/chat"]!.post!.responses["200"] = { content: {} };
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });
});
