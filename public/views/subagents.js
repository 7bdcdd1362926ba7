// @ts-check
/**
 * The subagents a turn's agent started (its child tasks), nested under the turn where the first
 * one came: a list per level, each child task under the one that started it (`parentChildId`),
 * each with its status in words (running, done, failed, cancelled), its title, and what the
 * provider reported of it (runner, model, usage, how long it ran, why it ended). A count the
 * provider did not report is not shown as zero: no usage reported reads "usage unknown".
 * Plain nested lists inside a disclosure: the keyboard opens and closes it, a screen reader hears
 * each level and how many items it holds.
 */
import { formatTokens } from "../lib/format.js";
import { el } from "./dom.js";

/** @typedef {import("../lib/conversation.js").Subagent} Subagent */

/** @type {Record<Subagent["status"], string>} */
const STATUS_TEXT = { running: "running", completed: "done", failed: "failed", cancelled: "cancelled" };

/**
 * What a child task used, in words: only the counters reported.
 * @param {Record<string, number> | null} usage
 */
function subagentUsageText(usage) {
  if (!usage) return "usage unknown";
  const parts = [];
  if (typeof usage.inputTokens === "number") parts.push(`${formatTokens(usage.inputTokens)} in`);
  if (typeof usage.outputTokens === "number") parts.push(`${formatTokens(usage.outputTokens)} out`);
  if (typeof usage.cost === "number") parts.push(`$${usage.cost.toFixed(4)}`);
  return parts.length > 0 ? parts.join(" · ") : "usage unknown";
}

/**
 * How long it ran, when both ends are known.
 * @param {Subagent} task
 */
function durationText(task) {
  if (!task.startedAt || !task.endedAt) return null;
  const ms = Date.parse(task.endedAt) - Date.parse(task.startedAt);
  if (!Number.isFinite(ms) || ms < 0) return null;
  return ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${Math.round(ms / 60_000)} min`;
}

/**
 * One summary line of the group: how many run, are done, failed.
 * @param {Subagent[]} tasks
 */
function subagentsSummary(tasks) {
  /** @type {Record<string, number>} */
  const counts = {};
  for (const t of tasks) counts[t.status] = (counts[t.status] ?? 0) + 1;
  const parts = ["running", "completed", "failed", "cancelled"].flatMap((s) =>
    counts[s] ? [`${counts[s]} ${STATUS_TEXT[/** @type {Subagent["status"]} */ (s)]}`] : [],
  );
  return `Subagents (${tasks.length}): ${parts.join(", ")}`;
}

/**
 * @param {Subagent} task
 * @param {Map<string | null, Subagent[]>} children
 * @param {Set<string>} drawn  ids already drawn (a cycle in parentChildId draws each once)
 * @returns {HTMLLIElement}
 */
function item(task, children, drawn) {
  drawn.add(task.childId);
  const facts = [
    task.runner,
    task.model,
    subagentUsageText(task.usage),
    durationText(task),
    task.terminalReason ? `ended: ${task.terminalReason}` : null,
  ].filter((f) => f !== null);
  const nested = (children.get(task.childId) ?? []).filter((t) => !drawn.has(t.childId));
  return el(
    "li",
    { class: "subagent", "data-child": task.childId, "data-status": task.status },
    el(
      "div",
      { class: "subagent-line" },
      el("span", { class: `subagent-status ${task.status}`, text: STATUS_TEXT[task.status] }),
      el("span", { class: "subagent-title", text: task.title ?? task.childId }),
    ),
    el("div", { class: "subagent-facts", text: facts.join(" · ") }),
    nested.length > 0 ? list(nested, children, drawn) : null,
  );
}

/**
 * @param {Subagent[]} tasks
 * @param {Map<string | null, Subagent[]>} children
 * @param {Set<string>} drawn
 * @returns {HTMLUListElement}
 */
function list(tasks, children, drawn) {
  return el("ul", { class: "subagent-list" }, ...tasks.map((t) => item(t, children, drawn)));
}

/**
 * The subagents as a nested list: each under the one that started it; one whose parent is not
 * among them (not reported, or not yet) at the top.
 * @param {Subagent[]} tasks
 */
function subagentTree(tasks) {
  const known = new Set(tasks.map((t) => t.childId));
  /** @type {Map<string | null, Subagent[]>} */
  const children = new Map();
  for (const t of tasks) {
    const parent =
      t.parentChildId && known.has(t.parentChildId) && t.parentChildId !== t.childId ? t.parentChildId : null;
    children.set(parent, [...(children.get(parent) ?? []), t]);
  }
  const drawn = new Set();
  const top = list(children.get(null) ?? [], children, drawn);
  // A parentChildId cycle leaves its tasks unreached from the top: drawn there all the same.
  const rest = tasks.filter((t) => !drawn.has(t.childId));
  for (const t of rest) if (!drawn.has(t.childId)) top.append(item(t, children, drawn));
  return top;
}

/**
 * The view of a turn's subagents block.
 * @param {Subagent[]} tasks
 */
export function createSubagentsView(tasks) {
  const summary = el("summary", { class: "subagents-summary" });
  const node = el("details", { class: "subagents", open: true }, summary);
  return {
    node,
    /** @param {Subagent[]} next */
    update(next) {
      summary.textContent = subagentsSummary(next);
      node.replaceChildren(summary, subagentTree(next));
    },
    init() {
      this.update(tasks);
      return this;
    },
  }.init();
}
