/**
 * The layer rules (docs/architecture.md "Layers"), checked by `npm run lint:layers` and in CI
 * (.ci/run, step `layers`). Each rule names a direction that must not appear; a violation fails the
 * command. Type-only imports count: a type is a dependency on the module that defines it.
 *
 * Paths are relative to the repository root. Test files (`*.test.ts`) are exempt only where a rule
 * says so: a test may reach into the modules it tests, a peer's tests may not reach the client.
 */
const TEST = "\\.test\\.(ts|mjs)$";
const HTTP = "^src/(http/|worker\\.ts$)";
/** The Durable Object shells: their classes and the types they export for their RPC surface. */
const OBJECT_SHELLS = "^src/(session/session|user/user)\\.ts$";

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
      name: "providers-not-objects",
      severity: "error",
      comment:
        "A provider knows the seam (src/providers/provider.ts, src/schemas/), never the session's modules: shared shapes go to the seam.",
      from: { path: "^src/providers/" },
      to: { path: "^src/(session|user)/" },
    },
    {
      name: "providers-not-http",
      severity: "error",
      comment: "A provider knows nothing of the Worker's routes or HTTP errors.",
      from: { path: "^src/providers/" },
      to: { path: HTTP },
    },
    {
      name: "http-only-object-shells",
      severity: "error",
      comment:
        "The Worker and its routes use the Durable Objects' public RPC surface (session.ts, user.ts and the types they export), not their store, runner, fold or other internals.",
      from: { path: HTTP },
      to: { path: "^src/(session|user)/", pathNot: OBJECT_SHELLS },
    },
    {
      name: "objects-not-http",
      severity: "error",
      comment: "The objects sit below the Worker: they answer RPC and never import its routes or HTTP errors (a test may pair them).",
      from: { path: "^src/(session|user)/", pathNot: TEST },
      to: { path: HTTP },
    },
    {
      name: "lib-is-a-leaf",
      severity: "error",
      comment: "src/lib holds project-agnostic helpers (SSE, digests, JSON hygiene): it imports nothing from the rest of the project.",
      from: { path: "^src/lib/" },
      to: { path: "^(src|test|public)/", pathNot: "^src/lib/" },
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
        "src/webhooks holds the pure rules of webhook deliveries (signing, target checks, backoff, one attempt, the payload): it imports only itself and src/schemas; the user object applies them.",
      from: { path: "^src/webhooks/" },
      to: { path: "^(src|test|public)/", pathNot: "^src/(webhooks|schemas)/" },
    },
    {
      name: "webhook-receiver-is-a-peer",
      severity: "error",
      comment: "The tests' webhook receiver (test/webhooks, all but its *.test files) verifies with the standardwebhooks package, never with the gateway's code: it imports nothing from src/ or public/.",
      from: { path: "^test/webhooks/", pathNot: TEST },
      to: { path: "^(src|public)/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^(src|test|scripts|bench|examples|public)/",
    exclude: { path: "^public/vendor/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default", "types"] },
  },
};
