// @ts-check
/**
 * An ask card, built from the request itself: a question's form (its answerSpec); a permission or
 * a plan in its own form, one button per decision its answerSpec offers and its scopes allow (the
 * table the server checks answers with, public/wire/grants.js), its other fields (a note, a plan's
 * feedback) beside them. Once answered it says what was chosen (here) or how it ended (elsewhere).
 * Field problems, found here or by the server, are shown on their field, by the field's label.
 */
import { askOutcomeText } from "../lib/format.js";
import { renderMarkdown } from "../lib/markdown.js";
import { allowedDecisions, decisionField, decisionOf } from "../wire/grants.js";
import { el } from "./dom.js";

/** @typedef {import("../lib/conversation.js").Ask} Ask */
/** @typedef {import("../lib/conversation.js").AskField} AskField */
/** @typedef {Extract<AskField, { type: "select" }>} SelectField */
/**
 * What became of an answer: taken, or why not (by field name where it names one).
 * @typedef {{ ok: true } | { ok: false, message: string, fields?: Record<string, string> }} AnswerResult
 */
/**
 * @typedef {(ask: Ask, outcome: "accepted" | "declined", data: Record<string, unknown> | undefined, choice: string) => Promise<AnswerResult>} AnswerHandler
 */

const KIND_LABEL = /** @type {Record<string, string>} */ ({
  question: "Question",
  permission: "Permission",
  plan: "Plan",
});

/** @param {string} value */
const safeId = (value) => value.replace(/[^A-Za-z0-9_-]/g, "_");

/** @param {AskField} field */
const labelOf = (field) => field.label ?? field.name;

/** @param {SelectField} field */
const optionsOf = (field) =>
  (field.options ?? []).map((o) =>
    typeof o === "string" ? { value: o, label: o } : { value: o.value, label: o.label ?? o.value },
  );

/**
 * Problems the server named, by field: "workers: must be at most 16; project: is required".
 * @param {string} message
 * @param {AskField[]} fields
 * @returns {{ fields: Record<string, string>, rest: string[] }}
 */
export function problemsByField(message, fields) {
  /** @type {Record<string, string>} */
  const byField = {};
  const rest = [];
  const names = new Set(fields.map((f) => f.name));
  for (const problem of message.split("; ").filter(Boolean)) {
    const match = /^([^:]+): (.*)$/.exec(problem);
    if (match && names.has(/** @type {string} */ (match[1])))
      byField[/** @type {string} */ (match[1])] = /** @type {string} */ (match[2]);
    else rest.push(problem);
  }
  return { fields: byField, rest };
}

/**
 * A field's value from the form, or why it cannot be sent (the same rules the server applies).
 * @param {HTMLFormElement} form
 * @param {AskField} field
 * @returns {{ value: unknown } | { problem: string }}
 */
function readField(form, field) {
  const named = (/** @type {string} */ name) => /** @type {HTMLInputElement | null} */ (form.elements.namedItem(name));
  /** @type {unknown} */
  let value;
  if (field.type === "boolean") value = named(field.name)?.checked ?? false;
  else if (field.type === "select" && field.multi) {
    const chosen = [
      ...form.querySelectorAll(`input[type=checkbox][data-field="${CSS.escape(field.name)}"]:checked`),
    ].map((i) => /** @type {HTMLInputElement} */ (i).value);
    const custom = named(`${field.name}::custom`)?.value ?? "";
    chosen.push(
      ...custom
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );
    value = chosen.length ? chosen : undefined;
  } else {
    const raw = named(field.name)?.value ?? "";
    if (raw.trim() === "") value = undefined;
    else if (field.type === "number") {
      const n = Number(raw);
      if (!Number.isFinite(n)) return { problem: "must be a number" };
      if (field.integer && !Number.isInteger(n)) return { problem: "must be a whole number" };
      if (field.min !== undefined && n < field.min) return { problem: `must be at least ${field.min}` };
      if (field.max !== undefined && n > field.max) return { problem: `must be at most ${field.max}` };
      value = n;
    } else {
      // A length limit is a text field's (a secret's is not checked, by the server either).
      if (field.type === "text" && field.maxLength !== undefined && raw.length > field.maxLength)
        return { problem: `must be at most ${field.maxLength} characters` };
      value = raw;
    }
  }
  if (value === undefined && field.required) return { problem: "is required" };
  return { value };
}

/**
 * What was answered, in words, for this browser to show (a secret is never repeated).
 * @param {AskField[]} fields
 * @param {Record<string, unknown>} data
 */
function questionChoice(fields, data) {
  const parts = [];
  for (const field of fields) {
    if (!(field.name in data)) continue;
    const value = data[field.name];
    const shown =
      field.type === "secret"
        ? "given (hidden)"
        : typeof value === "boolean"
          ? value
            ? "yes"
            : "no"
          : Array.isArray(value)
            ? value.join(", ")
            : String(value);
    parts.push(`${labelOf(field)}: ${shown}`);
  }
  return parts.length ? `Answered: ${parts.join(" · ")}` : "Answered.";
}

/**
 * @param {string} iid
 * @param {AskField} field
 */
function fieldControl(iid, field) {
  const id = `f-${safeId(iid)}-${safeId(field.name)}`;
  const errorId = `${id}-error`;
  const label = `${labelOf(field)}${field.required ? " *" : ""}`;
  const hint = field.description ? el("p", { class: "hint", id: `${id}-hint`, text: field.description }) : null;
  const describedBy = [hint ? `${id}-hint` : "", errorId].filter(Boolean).join(" ");
  const error = el("p", { class: "field-error", id: errorId, hidden: true });
  const common = {
    id,
    name: field.name,
    "aria-describedby": describedBy,
    required: field.required,
    "aria-required": field.required ? "true" : undefined,
  };
  switch (field.type) {
    case "boolean":
      return el(
        "div",
        { class: "field", "data-field": field.name },
        el("label", { class: "choice" }, el("input", { ...common, type: "checkbox" }), labelOf(field)),
        hint,
        error,
      );
    case "number":
      return el(
        "div",
        { class: "field", "data-field": field.name },
        el("label", { for: id, text: label }),
        el("input", {
          ...common,
          type: "number",
          inputmode: field.integer ? "numeric" : "decimal",
          min: field.min,
          max: field.max,
          step: field.integer ? 1 : "any",
        }),
        hint,
        error,
      );
    case "secret":
      return el(
        "div",
        { class: "field", "data-field": field.name },
        el("label", { for: id, text: label }),
        el("input", { ...common, type: "password", autocomplete: "off" }),
        hint,
        error,
      );
    case "select":
      if (field.multi) {
        return el(
          "fieldset",
          { class: "field", "data-field": field.name, "aria-describedby": describedBy },
          el("legend", { text: label }),
          ...optionsOf(field).map((o) =>
            el(
              "label",
              { class: "choice" },
              el("input", {
                type: "checkbox",
                name: `${field.name}::option`,
                "data-field": field.name,
                value: o.value,
              }),
              o.label,
            ),
          ),
          field.allowCustom
            ? el("input", {
                type: "text",
                name: `${field.name}::custom`,
                "aria-label": `${labelOf(field)}: other (comma separated)`,
                placeholder: "Other (comma separated)",
              })
            : null,
          hint,
          error,
        );
      }
      return el(
        "div",
        { class: "field", "data-field": field.name },
        el("label", { for: id, text: label }),
        el(
          "select",
          common,
          el("option", { value: "", text: "Choose…" }),
          ...optionsOf(field).map((o) => el("option", { value: o.value, text: o.label })),
        ),
        hint,
        error,
      );
    default:
      return el(
        "div",
        { class: "field", "data-field": field.name },
        el("label", { for: id, text: label }),
        field.multiline
          ? el("textarea", { ...common, rows: 3, maxlength: field.maxLength })
          : el("input", { ...common, type: "text", maxlength: field.maxLength }),
        hint,
        error,
      );
  }
}

/**
 * @param {Ask} ask
 * @param {{ answer: AnswerHandler }} handlers
 */
export function createAskView(ask, handlers) {
  const { request } = ask;
  const titleId = `ask-${safeId(request.id)}`;
  const outcome = el("p", { class: "outcome", role: "status", tabindex: "-1" });
  // A group named by its title, under the answer's heading ("The agent said", views/turn.js): not a
  // landmark of its own (a page of asks would be a page of regions).
  const card = el(
    "div",
    {
      class: "interaction",
      role: "group",
      "aria-labelledby": titleId,
      "data-interaction": request.id,
      "data-kind": request.kind,
    },
    el("span", { class: "kind", text: KIND_LABEL[request.kind] ?? request.kind }),
    el("h4", { id: titleId, text: request.title }),
  );
  const fields = request.answerSpec?.fields ?? [];

  /** @param {string} text @param {boolean} isError */
  const say = (text, isError) => {
    outcome.textContent = text;
    outcome.classList.toggle("error", isError);
  };

  /** Clears field problems, then shows these (by field name); answers whether any was shown. */
  const showProblems = (/** @type {Record<string, string>} */ problems) => {
    let first = null;
    for (const field of fields) {
      const wrapper = card.querySelector(`[data-field="${CSS.escape(field.name)}"].field`);
      const error = wrapper?.querySelector(".field-error");
      const control = wrapper?.querySelector("input, select, textarea");
      const problem = problems[field.name];
      if (error) {
        error.textContent = problem ? `${labelOf(field)} ${problem}.` : "";
        error.toggleAttribute("hidden", !problem);
      }
      if (control) {
        if (problem) control.setAttribute("aria-invalid", "true");
        else control.removeAttribute("aria-invalid");
        if (problem && !first) first = /** @type {HTMLElement} */ (control);
      }
    }
    first?.focus();
    return first !== null;
  };

  const setBusy = (/** @type {boolean} */ busy) => {
    for (const control of card.querySelectorAll("button, input, select, textarea")) {
      /** @type {HTMLInputElement} */ (control).disabled = busy;
    }
  };

  /**
   * @param {"accepted" | "declined"} outcomeName
   * @param {Record<string, unknown> | undefined} data
   * @param {string} choice
   */
  const submit = async (outcomeName, data, choice) => {
    if (view.item.status !== "outstanding") return;
    const hadFocus = card.contains(document.activeElement);
    setBusy(true);
    say("Sending…", false);
    const result = await handlers.answer(view.item, outcomeName, data, choice);
    if (result.ok) {
      // The state change draws the outcome; focus stays in the card, on what happened.
      if (hadFocus) outcome.focus();
      return;
    }
    setBusy(false);
    const shown = result.fields && showProblems(result.fields);
    say(shown ? "Please fix the fields marked above." : result.message, true);
  };

  // A decision field is a single select (wire/grants.js).
  const decision = /** @type {SelectField | null} */ (decisionField(request));
  if (decision) {
    // A permission or a plan: one button per decision it allows, its other fields beside them.
    if (request.kind === "plan")
      card.append(el("div", { class: "plan-body markdown" }, renderMarkdown(request.body ?? "")));
    else if (request.body) card.append(el("div", { class: "ask-body markdown" }, renderMarkdown(request.body)));
    const subject = /** @type {Record<string, unknown> | undefined} */ (request.subject);
    if (request.kind === "permission" && subject)
      card.append(
        el("p", {
          class: "subject",
          text:
            [subject.tool, subject.command ?? subject.path ?? ""].filter(Boolean).join(": ") || JSON.stringify(subject),
        }),
      );
    const others = fields.filter((f) => f !== decision);
    const form = el("form", { novalidate: true }, ...others.map((f) => fieldControl(request.id, f)));
    // Enter in a field does not send: the decision is a button.
    form.addEventListener("submit", (event) => event.preventDefault());
    /** @param {string} value */
    const decide = (value) => {
      const meaning = decisionOf(request, value);
      /** @type {Record<string, unknown>} */
      const data = { [decision.name]: value };
      /** @type {Record<string, string>} */
      const problems = {};
      const said = [];
      for (const field of others) {
        const read = readField(form, field);
        if ("problem" in read) problems[field.name] = read.problem;
        else if (read.value !== undefined) {
          data[field.name] = read.value;
          said.push(field.type === "secret" ? "given (hidden)" : String(read.value));
        }
      }
      if (showProblems(problems)) return say("Please fix the fields marked above.", true);
      // A plan is rejected so that it can be revised: say what should change.
      const feedback = others.find((f) => f.type === "text");
      if (request.kind === "plan" && meaning?.allows === false && feedback && data[feedback.name] === undefined) {
        /** @type {HTMLElement | null} */ (form.querySelector(`[name="${CSS.escape(feedback.name)}"]`))?.focus();
        return say("Say what should change to reject the plan.", true);
      }
      say("", false);
      const chosen = meaning?.chosen ?? labelOf(decision);
      const choice =
        request.kind === "plan" && meaning?.allows === false && said.length
          ? `${chosen}: ${said.join("; ")}`
          : `${chosen}${said.length ? ` (note: ${said.join("; ")})` : ""}.`;
      submit("accepted", data, choice);
    };
    const labels = new Map(optionsOf(decision).map((o) => [o.value, o.label]));
    card.append(
      form,
      el(
        "div",
        { class: "actions" },
        ...allowedDecisions(request).map((value) => {
          const meaning = decisionOf(request, value);
          return el("button", {
            type: "button",
            class: meaning?.allows === false ? (request.kind === "permission" ? "danger" : undefined) : "primary",
            text: meaning?.label ?? labels.get(value) ?? value,
            onclick: () => decide(value),
          });
        }),
      ),
    );
  } else {
    if (request.body) card.append(el("div", { class: "ask-body markdown" }, renderMarkdown(request.body)));
    const form = el("form", { novalidate: true });
    for (const field of fields) form.append(fieldControl(request.id, field));
    const allowed = request.allowedOutcomes ?? ["accepted", "declined", "cancelled"];
    form.append(
      el(
        "div",
        { class: "actions" },
        el("button", { type: "submit", class: "primary", text: "Send answer" }),
        allowed.includes("declined")
          ? el("button", { type: "button", text: "Decline", onclick: () => submit("declined", undefined, "Declined.") })
          : null,
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      /** @type {Record<string, unknown>} */
      const data = {};
      /** @type {Record<string, string>} */
      const problems = {};
      for (const field of fields) {
        const read = readField(form, field);
        if ("problem" in read) problems[field.name] = read.problem;
        else if (read.value !== undefined) data[field.name] = read.value;
      }
      if (showProblems(problems)) return say("Please fix the fields marked above.", true);
      say("", false);
      submit("accepted", data, questionChoice(fields, data));
    });
    card.append(form);
  }
  card.append(outcome);

  const view = {
    node: card,
    item: ask,
    /** @param {Ask} next */
    update(next) {
      card.dataset.status = next.status;
      if (next.status === "outstanding") return;
      card.classList.add("resolved");
      setBusy(true);
      say(askOutcomeText(next), false);
    },
  };
  view.update(ask);
  return view;
}
