/**
 * The layer rules (docs/architecture.md "Layers"), checked by `npm run lint:layers` and in CI
 * (.ci/run, step `layers`). Each rule names a direction that must not appear; a violation fails the
 * command. Type-only imports count: a type is a dependency on the module that defines it. Rules
 * marked `reachable` hold transitively: no chain of imports may lead there either.
 *
 * Paths are relative to the repository root. Test files (`*.test.ts`) are exempt only where a rule
 * says so: a test may reach into the modules it tests, a peer's tests may not reach the client.
 * Folders form no cycle either: ./.dependency-cruiser-folders.cjs, run by the same command over
 * the code without its tests.
 */
const TEST = "\\.test\\.(ts|mjs)$";
const HTTP = "^src/(http/|worker\\.ts$)";
/** The Durable Object shells: their classes and the types they export for their RPC surface. */
const OBJECT_SHELLS = "^src/(session/session|user/user)\\.ts$";
/** What every layer stands on: the configuration, the two error types, tokens and ids, the schemas, the generic helpers. */
const FOUNDATION = "^src/((config|errors|version)\\.ts$|auth/|schemas/|lib/)";
/** The one SSE parser: project-agnostic, in public/wire/ so the chat page runs it too (src/lib/sse.ts re-exports it). */
const SSE_PARSER = "^public/wire/sse-parser\\.js$";

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Modules form no cycle (type imports included): each room sits above the ones it uses.",
      from: { path: "^(src|test|scripts|bench|examples)/" },
      to: { circular: true },
    },
    {
      name: "foundation-stays-down",
      severity: "error",
      comment:
        "src/config.ts, src/errors.ts, src/auth/, src/schemas/ and src/lib/ import nothing above them, however indirectly: what they need (the API's error, a default) lives among them.",
      from: { path: FOUNDATION, pathNot: TEST },
      to: { path: "^(src|public)/", pathNot: [FOUNDATION, SSE_PARSER], reachable: true },
    },
    {
      name: "src-uses-only-the-wire",
      severity: "error",
      comment:
        "Of the chat page's folder the server imports only public/wire/, the modules both sides run (frames, grants, the part-text rule, the waiting names).",
      from: { path: "^src/" },
      to: { path: "^public/", pathNot: "^public/wire/" },
    },
    {
      name: "wire-is-a-leaf",
      severity: "error",
      comment: "public/wire/ runs on both sides: it imports nothing but itself.",
      from: { path: "^public/wire/" },
      to: { path: "^(src|test|public)/", pathNot: "^public/wire/" },
    },
    {
      name: "providers-not-objects",
      severity: "error",
      comment:
        "A provider knows the seam (src/providers/provider.ts, src/schemas/), never the objects or the usage rules that read its reports: shared shapes go to the seam (its tests may use the tests' helpers).",
      from: { path: "^src/providers/", pathNot: TEST },
      to: { path: "^src/(session|user|usage)/", reachable: true },
    },
    {
      name: "providers-not-http",
      severity: "error",
      comment: "A provider knows nothing of the Worker's routes or HTTP errors, however indirectly.",
      from: { path: "^src/providers/", pathNot: TEST },
      to: { path: HTTP, reachable: true },
    },
    {
      name: "http-only-object-shells",
      severity: "error",
      comment:
        "The Worker and its routes use the Durable Objects' public RPC surface (session/session.ts, user/user.ts and the types they export), not their store, runner, fold or other internals.",
      from: { path: HTTP },
      to: { path: "^src/(session|user)/", pathNot: OBJECT_SHELLS },
    },
    {
      name: "objects-not-http",
      severity: "error",
      comment:
        "The objects sit below the Worker: they answer RPC and never import its routes or HTTP errors, however indirectly (a test may pair them).",
      from: { path: "^src/(session|user|usage)/", pathNot: TEST },
      to: { path: HTTP, reachable: true },
    },
    {
      name: "session-not-user",
      severity: "error",
      comment:
        "The session and user objects talk over RPC only: neither imports the other's folder, however indirectly; what both use lives below them (src/usage/, src/providers/, src/schemas/).",
      from: { path: "^src/session/" },
      to: { path: "^src/user/", reachable: true },
    },
    {
      name: "user-not-session",
      severity: "error",
      comment: "The user object imports nothing of the session object (see session-not-user).",
      from: { path: "^src/user/" },
      to: { path: "^src/session/", reachable: true },
    },
    {
      name: "usage-is-rules",
      severity: "error",
      comment:
        "src/usage holds the pure usage fold and budgets both objects count by: it uses the seam, never an object.",
      from: { path: "^src/usage/" },
      to: { path: "^src/(session|user|http|ai-sdk)/|^src/worker\\.ts$" },
    },
    {
      name: "ai-sdk-not-session",
      severity: "error",
      comment:
        "src/ai-sdk translates the session's stream for the session object and the chat route alike: it reads the event stream's wire (src/schemas/, public/wire/), never the session's modules, however indirectly.",
      from: { path: "^src/ai-sdk/" },
      to: { path: "^src/(session|user)/", reachable: true },
    },
    {
      name: "lib-is-a-leaf",
      severity: "error",
      comment:
        "src/lib holds project-agnostic helpers (SSE, digests, JSON hygiene, retry waits): it imports nothing from the rest of the project.",
      from: { path: "^src/lib/" },
      to: { path: "^(src|test|public)/", pathNot: ["^src/lib/", SSE_PARSER] },
    },
    {
      name: "schemas-are-the-seam",
      severity: "error",
      comment: "src/schemas is what every layer shares: it imports nothing from the layers above it.",
      from: { path: "^src/schemas/" },
      to: { path: "^(src|test|public)/", pathNot: "^src/schemas/" },
    },
    {
      name: "emulator-is-a-peer",
      severity: "error",
      comment:
        "The Sandbox emulator is written from docs/sandbox-wire.md, not from the client: nothing in src/emulator (tests included) imports the Tangle client, the CLI Bridge client, their schemas or anything else outside src/emulator.",
      from: { path: "^src/emulator/" },
      to: { path: "^(src|test|public)/", pathNot: "^src/emulator/" },
    },
    {
      name: "emulator-only-from-worker",
      severity: "error",
      comment:
        "The product does not run the emulator's code: only src/worker.ts exports its class for the [env.local] binding (tests may read its script).",
      from: { path: "^src/", pathNot: ["^src/emulator/", "^src/worker\\.ts$", TEST] },
      to: { path: "^src/emulator/" },
    },
    {
      name: "standin-is-a-peer",
      severity: "error",
      comment:
        "The CLI Bridge stand-in (test/cli-bridge, all but its *.test files, which test the client against it) is written from docs/cli-bridge-wire.md: it imports nothing from src/ or public/.",
      from: { path: "^test/cli-bridge/", pathNot: TEST },
      to: { path: "^(src|public)/" },
    },
    {
      name: "webhooks-are-rules",
      severity: "error",
      comment:
        "src/webhooks holds the pure rules of webhook deliveries (signing, target checks, backoff, one attempt, the payload): it imports only itself, src/schemas and src/lib; the user object applies them.",
      from: { path: "^src/webhooks/" },
      to: { path: "^(src|test|public)/", pathNot: "^src/(webhooks|schemas|lib)/" },
    },
    {
      name: "webhook-receiver-is-a-peer",
      severity: "error",
      comment:
        "The tests' webhook receiver (test/webhooks, all but its *.test files) verifies with the standardwebhooks package, never with the gateway's code: it imports nothing from src/ or public/.",
      from: { path: "^test/webhooks/", pathNot: TEST },
      to: { path: "^(src|public)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^(src|test|scripts|bench|examples|public)/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
    },
  },
};
