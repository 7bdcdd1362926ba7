// @ts-check
/**
 * A turn's changes in the workspace panel (controllers/workspace.js): what the workspace says it
 * changed (its `changes` part, its `workspace.changes` event): each file added, modified, deleted or
 * renamed, its unified diff highlighted by the page's one code-block renderer, a binary by its sizes,
 * and whether the diff's bound cut some off; or, where only the agent's tool calls can say, the
 * transcript's view of them (lib/changes.js), labelled so, with the gateway's reason.
 */
import { changeText } from "../lib/workspace.js";

/**
 * @param {{ el: typeof import("./dom.js").el, fenced: typeof import("./changes.js").fenced }} dom
 * @param {import("../lib/wire").TurnChanges | undefined} changed  the turn's changes as the gateway recorded them
 * @param {(() => Node | null) | null} toolCalls  the tool calls' view (null: none, they changed no file); null
 *   while the turn runs (its changes show once it ends)
 * @returns {Array<Node | string>}
 */
export function changesView({ el, fenced }, changed, toolCalls) {
  if (changed?.source === "workspace") {
    const count = changed.files.length;
    return [
      el("p", { class: "ws-source", text: `From the workspace: ${count} ${count === 1 ? "file" : "files"} changed` }),
      el(
        "ul",
        { class: "ws-changes" },
        ...changed.files.map((f) =>
          el(
            "li",
            { class: `ws-change ws-${f.status}` },
            el(
              "div",
              { class: "changed-file-head" },
              el("code", { class: "change-path", text: f.path }),
              el("span", { class: "ws-change-what", text: changeText(f) }),
            ),
            f.diff ? fenced(f.diff, "diff") : null,
          ),
        ),
      ),
      changed.truncated
        ? el("p", {
            class: "hint",
            text: "More text changed than is shown: the files past the bound are listed without their diff.",
          })
        : "",
    ];
  }
  return [
    el("p", { class: "ws-source", text: "From the agent's tool calls" }),
    changed ? el("p", { class: "hint", text: changed.reason }) : "",
    toolCalls
      ? (toolCalls() ?? el("p", { class: "hint", text: "Its tool calls changed no file." }))
      : el("p", { class: "hint", text: "The turn is running: its changes show once it ends." }),
  ];
}
