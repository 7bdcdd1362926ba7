// The Sandbox emulator served over HTTP on its own (bench/emulator-server/wrangler.toml): every
// request but /healthz goes to its one object, as the gateway's local environment sends its own
// (src/providers/index.ts, the object named "default"): the Sandbox API (/v1/sandboxes…, any bearer
// token) and the emulator's control routes (/_emulator/…, docs/emulator.md).
export { SandboxEmulator } from "../../src/emulator/emulator.ts";

export default {
  /** @param {Request} request @param {{ SANDBOX_EMULATOR: DurableObjectNamespace }} env */
  fetch(request, env) {
    if (new URL(request.url).pathname === "/healthz") return Response.json({ ok: true, emulator: true });
    return env.SANDBOX_EMULATOR.get(env.SANDBOX_EMULATOR.idFromName("default")).fetch(request);
  },
};
