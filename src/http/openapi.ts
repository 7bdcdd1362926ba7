/**
 * The OpenAPI 3.1 document of the public API, and the route that serves it (`GET /openapi.json`).
 * Derived from the route declarations (./route-declaration.ts) of the sub-apps that
 * ./routes/index.ts mounts: each route's method, path, summary, parameters, body and answers are
 * declared once, beside its handler, and there is no second list of paths here. Components are
 * the Zod schemas with a `.meta({ id })`, converted by `z.toJSONSchema`; every other schema is
 * inlined. test/openapi.test.ts fails if the app serves a route the document does not name.
 * `GET /docs` (public/docs.html, a static page) draws this document as a reference people can click,
 * whose "try it" sends requests to this same origin (`servers`) with a pasted token (`bearer`).
 *
 * Why not @hono/zod-openapi (1.6.3, checked on Node 20 with hono 4.13 and zod 4.6, which it
 * supports): `openapi()` attaches @hono/zod-validator to every route whose body is a Zod schema,
 * and that validator reads the body before a hook (or `defaultHook`) sees anything, so the
 * refusals of ./body.ts, in their order, cannot be kept (docs/api.md#errors-and-limits):
 * - `application/json-patch+json` and other `+json` types are read as JSON; we answer 415;
 * - malformed JSON is an HTTPException 400 "Malformed JSON in request body" thrown before the hook,
 *   and the body is read whole before any size check: a large malformed body is 400, not 413;
 * - the body is decoded leniently: invalid UTF-8 becomes U+FFFD and passes (we answer
 *   invalid_json), and the bytes our reader would check are gone (it sees a re-serialized copy);
 * - the hook sees only the schema's verdict, too late for all of the above.
 * Declaring the body as a plain JSON Schema object turns its validator off, but then the body's
 * Zod schema is a second declaration again, and the document comes from a second converter
 * (@asteasolutions/zod-to-openapi) whose components differ from `z.toJSONSchema`'s (it drops
 * `propertyNames`: SubmitTurn's `interactions` key pattern, for one).
 */
import { z } from "zod";
import { ErrorBody } from "../schemas/api";
import { VERSION } from "../version";
import { type Answer, DeclaredRoutes, json, type RouteDeclaration } from "./route-declaration";
import { AUTHENTICATED_PREFIXES, MOUNTS, type Mount } from "./routes";

const DocumentSchema = z.record(z.string(), z.unknown()).describe("This document (OpenAPI 3.1)");

export const documentRoutes = new DeclaredRoutes();

documentRoutes.serve(
  {
    method: "get",
    path: "/openapi.json",
    summary: "The OpenAPI 3.1 document of the public API",
    answers: { 200: json(DocumentSchema, "The document") },
  },
  (c) => c.json(openApiDocument(VERSION)),
);

type Json = Record<string, unknown>;

/** A schema as the document holds it: a reference to its component, or inline. */
function schemaOf(schema: z.ZodType, io: "input" | "output"): Json {
  const id = z.globalRegistry.get(schema)?.id;
  if (id !== undefined) return { $ref: `#/components/schemas/${id}` };
  const { $schema: _, ...inline } = z.toJSONSchema(schema, { io }) as Json;
  if ("$defs" in inline) throw new Error("an inline schema must not hold a named one: give it an id of its own");
  return inline;
}

function answer({ description, content }: Answer): Json {
  return content
    ? { description, content: { [content.media]: { schema: schemaOf(content.schema, "output") } } }
    : { description };
}

/** `/:cid/turns` under `/v1/conversations` → `/v1/conversations/{cid}/turns`. */
function documentedPath(prefix: string, path: string): string {
  const joined = prefix === "/" ? path : path === "/" ? prefix : `${prefix}${path}`;
  return joined.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function parameters(where: "path" | "header" | "query", schemas: Readonly<Record<string, z.ZodType>> = {}): Json[] {
  return Object.entries(schemas).map(([name, schema]) => ({
    name,
    in: where,
    required: where === "path" || !schema.safeParse(undefined).success,
    schema: schemaOf(schema, "input"),
  }));
}

function operation(path: string, route: RouteDeclaration): Json {
  const named = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  const declared = Object.keys(route.params ?? {});
  if (named.join() !== declared.join())
    throw new Error(`${path}: the path's parameters (${named.join()}) are not the declared ones (${declared.join()})`);
  const responses: Json = {};
  for (const status of route.errors ?? [])
    responses[status] = {
      description: "Error, with a stable code",
      content: { "application/json": { schema: schemaOf(ErrorBody, "output") } },
    };
  for (const [status, declaredAnswer] of Object.entries(route.answers)) {
    if (status in responses) throw new Error(`${path}: ${status} is declared both as an answer and as an error`);
    responses[status] = answer(declaredAnswer);
  }
  const params = [
    ...parameters("path", route.params),
    ...parameters("header", route.headers),
    ...parameters("query", route.query),
  ];
  const authenticated = AUTHENTICATED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
  // The account gate (`authenticate`): every authenticated route but the account's own answers
  // 409 account_deleting while the account is deleted, 410 account_deleted after (docs/api.md#deleting-an-account).
  if (authenticated && path !== "/v1/me") {
    for (const status of [409, 410])
      responses[status] ??= {
        description: "Error, with a stable code",
        content: { "application/json": { schema: schemaOf(ErrorBody, "output") } },
      };
  }
  return {
    summary: route.summary,
    ...(authenticated ? { security: [{ bearer: [] }] } : {}),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(route.body
      ? { requestBody: { content: { "application/json": { schema: schemaOf(route.body, "input") } } } }
      : {}),
    ...(route.form
      ? { requestBody: { content: { "multipart/form-data": { schema: schemaOf(route.form, "input") } } } }
      : {}),
    responses,
  };
}

function paths(mounts: readonly Mount[]): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const { prefix, routes } of mounts) {
    for (const route of routes.declarations) {
      if (route.undocumented !== undefined) continue;
      const path = documentedPath(prefix, route.path);
      if (route.method === "all")
        throw new Error(
          `${path}: a route for every method cannot be documented; declare its methods, or why it is undocumented`,
        );
      const operations = (out[path] ??= {});
      if (route.method in operations) throw new Error(`${route.method} ${path} is declared twice`);
      operations[route.method] = operation(path, route);
    }
  }
  return out;
}

/** A user's token (docs/configuration.md#configuration: AUTH_JWT_SECRET or AUTH_JWKS_URL; "Try it with curl": dev login). */
const BEARER = {
  type: "http",
  scheme: "bearer",
  bearerFormat: "JWT",
  description:
    "A user's token, sent as `Authorization: Bearer <token>`: a JWT whose `sub` is the user, signed with " +
    "AUTH_JWT_SECRET or by the identity provider of AUTH_JWKS_URL. " +
    'Locally (`npm start`), `POST /v1/dev/login` with `{ "user": "ada" }` answers one.',
};

let cached: Json | undefined;

export function openApiDocument(version: string): Json {
  if (cached) return cached;
  const components = z.toJSONSchema(z.globalRegistry, { uri: (id) => `#/components/schemas/${id}` }) as {
    schemas: Json;
  };
  cached = {
    openapi: "3.1.0",
    info: {
      title: "Agent chat gateway",
      version,
      description: "Durable conversations with coding agents, streamed as Server-Sent Events.",
    },
    // Relative: the server is the origin the document was read from (`npm start` on any PORT, a
    // deployment under any host), so the reference at /docs sends its "try it" requests there.
    servers: [{ url: "/", description: "This gateway (the origin that served this document)" }],
    components: { schemas: components.schemas, securitySchemes: { bearer: BEARER } },
    paths: paths([...MOUNTS, { prefix: "/", routes: documentRoutes }]),
  };
  return cached;
}
