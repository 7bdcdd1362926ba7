/**
 * §6 the capability document (`GET …/runtime/capabilities`): every flag the emulator serves, less
 * the ones a `capabilities` fault turns off, plus the fields it adds; or a failed discovery.
 */
import type { Hono } from "hono";
import { API_PATHS, type ApiKit } from "./api-common";

/** Every flag the emulator serves; a `capabilities` fault turns some off. */
const FULL_CAPABILITIES = {
  schema: 1,
  agentInterface: "1.6.0",
  sidecarVersion: "emulator",
  dispatch: { runControlRef: true, executionIdOnAdmission: true },
  cancel: { canonicalRunCancellation: true, digestBound: true, idempotent: true },
  runs: { executionScopedStatus: true, eventReplay: true },
  interactions: { responseDedupe: true },
  interactiveAgent: { start: true, status: true, attach: true, control: true, sendPrompt: true, stop: true },
} as const;

export function registerCapabilityRoute(app: Hono, api: ApiKit): void {
  const { store, fail, runningSandbox } = api;

  app.get(API_PATHS.capabilities, (c) => {
    const sb = runningSandbox(c);
    if (sb instanceof Response) return sb;
    const faults = store.faults();
    if (faults.capabilitiesFail) return fail(c, 500, "INTERNAL", "capability discovery failed");
    const doc: Record<string, unknown> = structuredClone(FULL_CAPABILITIES);
    for (const [group, flags] of Object.entries(faults.capabilities ?? {})) {
      if (flags === false) {
        delete doc[group];
        continue;
      }
      const merged: Record<string, boolean> = { ...((doc[group] as Record<string, boolean> | undefined) ?? {}) };
      for (const [flag, value] of Object.entries(flags)) {
        if (value) merged[flag] = true;
        else delete merged[flag];
      }
      doc[group] = merged;
    }
    Object.assign(doc, faults.capabilitiesExtra);
    return c.json(doc);
  });
}
