/**
 * A route declared once. Each sub-app of src/http/routes/ is a `DeclaredRoutes`: `serve(declaration,
 * handler)` registers the handler on the sub-app's Hono app at the declared method and path (behind
 * the declared guard), hands it a body reader bound to the declared body schema, and keeps the
 * declaration. The OpenAPI document (./openapi.ts) is derived from these declarations and nothing
 * else, so a route cannot be served under one shape and documented under another.
 *
 * Validation stays ours: the body is read by ./body.ts (415, 413, invalid_json, nesting depth, lone surrogates,
 * unknown fields, in that order) and parameters by the handlers; see the header of ./openapi.ts for
 * why this is not @hono/zod-openapi.
 */
import { type Context, Hono, type MiddlewareHandler } from "hono";
import type { z } from "zod";
import type { AppEnv } from "./app-context";
import { readJsonBody } from "./body";

/** One documented answer: its description and, for an answer with a body, the body's media type and schema. */
export interface Answer {
  readonly description: string;
  readonly content?: {
    readonly media: "application/json" | "text/event-stream" | "application/octet-stream";
    readonly schema: z.ZodType;
  };
}

export const json = (schema: z.ZodType, description: string): Answer => ({
  description,
  content: { media: "application/json", schema },
});
/** Server-Sent Events; `schema` is what each frame's data holds. */
export const eventStream = (schema: z.ZodType, description: string): Answer => ({
  description,
  content: { media: "text/event-stream", schema },
});
export const noContent = (description: string): Answer => ({ description });
/** Bytes (a download): `schema` describes them (a binary string). */
export const bytes = (schema: z.ZodType, description: string): Answer => ({
  description,
  content: { media: "application/octet-stream", schema },
});

export interface RouteDeclaration<Body extends z.ZodType | undefined = z.ZodType | undefined> {
  readonly method: "get" | "post" | "put" | "patch" | "delete" | "all";
  /** Hono's path syntax (`/:cid/turns`), relative to where the sub-app is mounted. */
  readonly path: string;
  readonly summary: string;
  /** Every `:name` of the path, with the schema its value is parsed with. */
  readonly params?: Readonly<Record<string, z.ZodType>>;
  /** Headers and query parameters the route reads; one that may be absent is `.optional()` (or has a default). */
  readonly headers?: Readonly<Record<string, z.ZodType>>;
  readonly query?: Readonly<Record<string, z.ZodType>>;
  /** The JSON body, read only through the reader the handler is given. */
  readonly body?: Body;
  /** A multipart/form-data body instead (an upload), as documented; its handler reads and checks it itself. */
  readonly form?: z.ZodType;
  /** The answers by status, each with its own body. */
  readonly answers: Readonly<Record<number, Answer>>;
  /** The statuses whose body is the API's `Error` (ApiError, src/errors.ts). */
  readonly errors?: readonly number[];
  /** Runs before the handler (the dev routes' `devOnly`). */
  readonly guard?: MiddlewareHandler<AppEnv>;
  /** Why the route is left out of the OpenAPI document (only local-development helpers are). */
  readonly undocumented?: string;
}

/** Reads the declared body: at most `maxBytes`; `raw` sees the parsed JSON before the schema shapes it. */
type BodyReader<Body> = Body extends z.ZodType
  ? (maxBytes: number, raw?: (body: unknown) => void) => Promise<z.output<Body>>
  : undefined;

type RouteHandler<Body> = (c: Context<AppEnv>, readBody: BodyReader<Body>) => Response | Promise<Response>;

/** A sub-app: its Hono app and the declaration of every route registered on it. */
export class DeclaredRoutes {
  readonly app = new Hono<AppEnv>();
  readonly #declarations: RouteDeclaration[] = [];

  get declarations(): readonly RouteDeclaration[] {
    return this.#declarations;
  }

  serve<Body extends z.ZodType | undefined = undefined>(
    declaration: RouteDeclaration<Body>,
    handler: RouteHandler<Body>,
  ): this {
    this.#declarations.push(declaration);
    const schema = declaration.body;
    const endpoint = (c: Context<AppEnv>) => {
      const reader =
        schema === undefined
          ? undefined
          : (maxBytes: number, raw?: (body: unknown) => void) => readJsonBody(c, schema, maxBytes, raw);
      return handler(c, reader as BodyReader<Body>);
    };
    const method = declaration.method.toUpperCase();
    if (declaration.guard) this.app.on(method, declaration.path, declaration.guard, endpoint);
    else this.app.on(method, declaration.path, endpoint);
    return this;
  }
}
