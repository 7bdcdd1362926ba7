// @ts-check
/**
 * Pi permission asks: the interaction request a retained run raises, and the acknowledgement of an
 * InteractionResponseCommand (docs/contracts.md, Interactions): digest checks, stored operations,
 * the answer checked against the exact outstanding request.
 */
import { canonicalDigest, canonicalJson, refuse } from "./wire.mjs";

/** @typedef {import("./runs.mjs").Run} Run */
/** @typedef {import("./runs.mjs").Interaction} Interaction */
/** @typedef {import("./bridge.mjs").Bridge} Bridge */

/**
 * Raises the Pi permission ask (transcript 25) and waits for its answer: the grant, or undefined
 * when the run is cancelled first.
 * @param {Run} run
 * @param {(event: Record<string, unknown> & { type: string }) => void} emit
 * @param {AbortSignal} signal
 * @returns {Promise<string | undefined>}
 */
export function askPermission(run, emit, signal) {
  const id = `${run.id}:interaction:perm-${run.interactions.size + 1}`;
  const body = {
    id,
    kind: "permission",
    title: "Permission: bash",
    answerSpec: {
      fields: [
        {
          name: "grant",
          label: "Decision",
          required: true,
          type: "select",
          options: [
            { value: "allow_once", label: "Allow once" },
            { value: "deny", label: "Deny" },
          ],
        },
      ],
    },
    responseScopes: ["interaction"],
    binding: {
      runId: run.id,
      provider: run.provider,
      environmentId: run.environmentId,
      sessionId: run.sessionId,
      executionId: run.executionId,
      interactionId: id,
    },
  };
  // The request digest is the canonical digest of the request without it (transcript 25).
  const request = { ...body, requestDigest: canonicalDigest(body) };
  return new Promise((resolve) => {
    /** @type {Interaction} */
    const interaction = {
      id,
      request,
      state: "pending",
      responseCanonical: undefined,
      resolve: (grant) => {
        signal.removeEventListener("abort", onAbort);
        resolve(grant);
      },
    };
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    run.interactions.set(id, interaction);
    emit({ type: "interaction", request });
  });
}

/**
 * Answers an InteractionResponseCommand with an acknowledgement (docs/contracts.md).
 * @param {Bridge} bridge
 * @param {string} runId         from the path
 * @param {string} interactionId from the path
 * @param {import("zod").infer<typeof import("./schemas.mjs").InteractionResponseCommand>} command
 * @returns {import("./wire.mjs").Outcome<{ ack: Record<string, unknown> }>}
 */
export function respond(bridge, runId, interactionId, command) {
  bridge.counters.responds++;
  const expected = canonicalDigest({ binding: command.binding, response: command.response });
  if (expected !== command.commandDigest) {
    return refuse(400, "commandDigest is not the canonical digest of {binding, response}", "invalid_request_error", {
      param: "commandDigest",
    });
  }
  /**
   * @param {string} status
   * @param {Record<string, unknown>} [extra]
   */
  const ack = (status, extra = {}) => ({
    operationId: command.operationId,
    binding: command.binding,
    commandDigest: command.commandDigest,
    status,
    ...extra,
  });
  /** @param {Record<string, unknown>} a */
  const store = (a) => {
    bridge.respondOperations.set(command.operationId, { commandDigest: command.commandDigest, ack: a });
    return /** @type {{ ok: true, ack: Record<string, unknown> }} */ ({ ok: true, ack: a });
  };

  const previous = bridge.respondOperations.get(command.operationId);
  if (previous) {
    if (previous.commandDigest === command.commandDigest) return { ok: true, ack: previous.ack };
    return { ok: true, ack: ack("already_resolved_different") };
  }
  const run = bridge.runs.get(runId);
  if (!run) return store(ack("unknown_run"));
  const interaction = run.interactions.get(interactionId);
  if (!interaction) return store(ack("unknown_interaction"));
  const requestBinding = /** @type {Record<string, unknown>} */ (interaction.request.binding);
  const boundTo = { ...requestBinding, requestDigest: interaction.request.requestDigest };
  if (
    canonicalJson(command.binding) !== canonicalJson(boundTo) ||
    command.binding.runId !== runId ||
    command.binding.interactionId !== interactionId
  ) {
    return store(
      ack("binding_mismatch", { message: "the binding does not name this outstanding interaction request" }),
    );
  }
  if (interaction.state === "cancelled") return store(ack("cancelled"));
  // The ask's native process died with the bridge (a guess: no recording shows this answer).
  if (interaction.state === "lost")
    return store(ack("unknown_interaction", { message: "the interaction was lost across a bridge restart" }));
  const problem = answerProblem(interaction, command.response, bridge.variants.selectAnswer === "array-or-string");
  if (problem) return store(ack("invalid_response", { message: problem }));
  const responseCanonical = canonicalJson(command.response);
  if (interaction.state === "resolved") {
    return store(
      ack(responseCanonical === interaction.responseCanonical ? "already_resolved_same" : "already_resolved_different"),
    );
  }
  interaction.state = "resolved";
  interaction.responseCanonical = responseCanonical;
  const grant = command.response.outcome === "accepted" ? grantOf(command.response.data) : "deny";
  interaction.resolve(grant);
  return store(ack("accepted"));
}

/**
 * Validates an answer against the outstanding request's answer spec; a message naming each
 * refused field, or undefined.
 * @param {Interaction} interaction
 * @param {{ id: string, outcome: string, data?: Record<string, unknown> }} response
 * @param {boolean} allowString whether a select field also takes one bare value
 */
function answerProblem(interaction, response, allowString) {
  if (response.id !== interaction.id) return `response.id must be ${JSON.stringify(interaction.id)}`;
  const fields =
    /** @type {{ fields: Array<{ name: string, required?: boolean, type: string, multi?: boolean, options?: Array<{ value: string }> }> }} */ (
      interaction.request.answerSpec
    ).fields;
  const data = response.data ?? {};
  if (response.outcome !== "accepted") {
    return Object.keys(data).length === 0 ? undefined : `a ${response.outcome} response carries no data`;
  }
  const problems = [];
  for (const name of Object.keys(data)) {
    if (
      name === "__proto__" ||
      name === "constructor" ||
      name === "prototype" ||
      !fields.some((f) => f.name === name)
    ) {
      problems.push(`${name}: not a field of this request`);
    }
  }
  for (const field of fields) {
    const value = Object.hasOwn(data, field.name) ? data[field.name] : undefined;
    if (value === undefined) {
      if (field.required) problems.push(`${field.name}: required`);
      continue;
    }
    const values = typeof value === "string" && allowString ? [value] : value;
    if (!Array.isArray(values) || !values.every((v) => typeof v === "string")) {
      problems.push(`${field.name}: must be an array of option values${allowString ? " or one option value" : ""}`);
    } else if (!field.multi && values.length !== 1) {
      problems.push(`${field.name}: takes exactly one value`);
    } else if (values.some((v) => !field.options?.some((o) => o.value === v))) {
      problems.push(`${field.name}: not one of ${field.options?.map((o) => o.value).join(", ")}`);
    }
  }
  return problems.length ? problems.join("; ") : undefined;
}

/** @param {Record<string, unknown> | undefined} data */
function grantOf(data) {
  const value = data?.grant;
  const grant = Array.isArray(value) ? value[0] : value;
  return typeof grant === "string" ? grant : "deny";
}
