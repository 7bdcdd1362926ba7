/**
 * Reading a JSON request body: JSON only (415), bounded size (413), valid JSON (400
 * invalid_json), bounded nesting (400 invalid_request naming MAX_JSON_DEPTH), and the schema with
 * unknown fields refused (400 invalid_request, naming each field).
 */
import type { Context } from "hono";
import type { z } from "zod";
import { ApiError } from "../errors";

function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.map((issue) => {
    const path = issue.path.length ? issue.path.join(".") : "(body)";
    // Each unknown field by its whole path (`providerOptions.backend.model.foo`), not its name alone.
    if (issue.code === "unrecognized_keys")
      return { path: issue.keys.map((key) => [...issue.path, key].join(".")).join(", "), message: "unknown field" };
    return { path, message: issue.message };
  });
}

export function invalid(what: string, error: z.ZodError): ApiError {
  const issues = issuesOf(error);
  return new ApiError(400, "invalid_request", `${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`, {
    issues,
  });
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Where a JSON value holds a lone UTF-16 surrogate (`"\ud800"` is valid JSON but not text: it has
 * no UTF-8 form, so it cannot be digested, stored as text or sent on): the path of each, keys included.
 */
function loneSurrogatePaths(value: unknown, path = ""): string[] {
  if (typeof value === "string") return LONE_SURROGATE.test(value) ? [path || "(body)"] : [];
  if (Array.isArray(value))
    return value.flatMap((item, i) => loneSurrogatePaths(item, path ? `${path}.${i}` : String(i)));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) => {
    const at = path ? `${path}.${key}` : key;
    return [...(LONE_SURROGATE.test(key) ? [`${at} (its name)`] : []), ...loneSurrogatePaths(item, at)];
  });
}

/**
 * How deep arrays and objects may nest in a body (the body itself is level 1). Every check after
 * the parse (lone surrogates, the schema) walks the value once per level: a body nested thousands
 * deep in a few kilobytes would run them out of stack, so it is refused before it is parsed.
 */
const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `limit`: one pass over the text, brackets
 * inside strings ignored, stopping at the first level past the bound (no recursion, whatever the depth).
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (ch === 0x22) inString = false;
    } else if (ch === 0x22) inString = true;
    else if (ch === 0x5b || ch === 0x7b) {
      if (++depth > limit) return true;
    } else if (ch === 0x5d || ch === 0x7d) depth--;
  }
  return false;
}

/** Reads and validates a JSON body; `raw` receives the parsed JSON before the schema shapes it. */
export async function readJsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  maxBytes: number,
  raw?: (body: unknown) => void,
): Promise<z.output<S>> {
  // Exactly application/json (parameters such as charset allowed): not json-patch+json or other look-alikes.
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError(415, "unsupported_media_type", "the body must be JSON (content-type: application/json)");
  }
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > maxBytes) throw new ApiError(413, "payload_too_large", `the body is larger than ${maxBytes} bytes`);
  const buffer = await c.req.arrayBuffer();
  if (buffer.byteLength > maxBytes)
    throw new ApiError(413, "payload_too_large", `the body is larger than ${maxBytes} bytes`);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(buffer);
  } catch {
    throw new ApiError(400, "invalid_json", "the body is not valid UTF-8 JSON");
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    const issues = [{ path: "(body)", message: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }];
    throw new ApiError(400, "invalid_request", `the body is invalid: (body): ${issues[0]!.message}`, {
      issues,
      maxDepth: MAX_JSON_DEPTH,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(400, "invalid_json", "the body is not valid UTF-8 JSON");
  }
  const broken = loneSurrogatePaths(body);
  if (broken.length > 0) {
    const issues = broken.map((path) => ({ path, message: "contains a lone UTF-16 surrogate, which is not text" }));
    throw new ApiError(
      400,
      "invalid_request",
      `the body is invalid: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
      { issues },
    );
  }
  raw?.(body);
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw invalid("the body is invalid", parsed.error);
  return parsed.data;
}
