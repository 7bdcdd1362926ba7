import type { ScriptFrame, WorkspaceChange } from "./script-frame";

/**
 * The `[edits]` script's tool calls: an agent that writes and edits files, as OpenCode reports its
 * `write` and `edit` tools (docs/sandbox-wire.md: a `tool` part with `tool` and `state: { status,
 * input, output, metadata }`). In order: a `write` of a new file (`metadata.exists: false`), an
 * `edit` (`oldString` → `newString`, one of its lines wider than any bubble), an `edit` that fails
 * (its `oldString` is not in the file: it changed nothing), and a `write` over a file that existed
 * (`metadata.exists: true`, whose earlier content the agent never reported). What the page makes of
 * them is public/lib/changes.js. Each completed call carries its change to the sandbox's files (the
 * seeded project, workspace-seed.ts, holds the edit's `oldString`); the failed one carries none.
 */

const NEW_FILE = "src/greeting.ts";
const NEW_CONTENT = [
  "/** A greeting for the name given, or for everyone. */",
  "export function greet(name?: string): string {",
  '  return `Hello, ${name ?? "world"}!`;',
  "}",
  "",
].join("\n");

const EDITED_FILE = "src/server.ts";
/** What the edit replaces: the seeded `src/server.ts` holds it (workspace-seed.ts). */
export const EDIT_OLD_STRING = ['import { serve } from "./http";', "", 'serve((request) => new Response("ok"));'].join(
  "\n",
);
const NEW_STRING = [
  'import { serve } from "./http";',
  'import { greet } from "./greeting";',
  "",
  'serve((request) => new Response(greet(new URL(request.url).searchParams.get("name") ?? undefined), { headers: { "content-type": "text/plain; charset=utf-8" } }));',
].join("\n");

const REWRITTEN_FILE = "README.md";
const REWRITTEN_CONTENT = "# Demo project\n\nA small service that greets: `GET /?name=Ada` answers `Hello, Ada!`.\n";

/** What the agent says about the changes, after them. */
export const EDITS_TEXT = `I created ${NEW_FILE}, changed ${EDITED_FILE} to use it and rewrote ${REWRITTEN_FILE}.`;

/** The frames of one tool call, pending → running → its end; the end carries the call's change, if any. */
export function toolCall(
  id: string,
  tool: string,
  input: Record<string, unknown>,
  end: Record<string, unknown>,
  change?: WorkspaceChange,
): ScriptFrame[] {
  const part = (state: Record<string, unknown>) => ({
    type: "message.part.updated",
    data: { part: { id, type: "tool", tool, state: { input, ...state } } },
  });
  return [part({ status: "pending" }), part({ status: "running" }), { ...part(end), ...(change ? { change } : {}) }];
}

export function editFrames(executionId: string): ScriptFrame[] {
  return [
    ...toolCall(
      `${executionId}:tool-write-new`,
      "write",
      { filePath: NEW_FILE, content: NEW_CONTENT },
      { status: "completed", output: "Wrote file successfully.", metadata: { exists: false, filepath: NEW_FILE } },
      { op: "write", path: NEW_FILE, text: NEW_CONTENT },
    ),
    ...toolCall(
      `${executionId}:tool-edit`,
      "edit",
      { filePath: EDITED_FILE, oldString: EDIT_OLD_STRING, newString: NEW_STRING },
      { status: "completed", output: "Edit applied successfully.", metadata: {} },
      { op: "edit", path: EDITED_FILE, oldString: EDIT_OLD_STRING, newString: NEW_STRING },
    ),
    ...toolCall(
      `${executionId}:tool-edit-missed`,
      "edit",
      { filePath: "src/missing.ts", oldString: "nothing like this", newString: "anything" },
      { status: "error", error: "oldString not found in content" },
    ),
    ...toolCall(
      `${executionId}:tool-write-over`,
      "write",
      { filePath: REWRITTEN_FILE, content: REWRITTEN_CONTENT },
      { status: "completed", output: "Wrote file successfully.", metadata: { exists: true, filepath: REWRITTEN_FILE } },
      { op: "write", path: REWRITTEN_FILE, text: REWRITTEN_CONTENT },
    ),
  ];
}
