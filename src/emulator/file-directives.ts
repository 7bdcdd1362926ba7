/**
 * The file directives of a message (script.ts): each a completed tool call that changes the
 * sandbox's files when it is emitted, in the order the message names them. Pure.
 *   [write:<path>:<text>]  OpenCode's `write` of the text (no `]` in it; `\n` a newline)
 *   [delete:<path>]        a `bash` `rm -rf` of the file or folder
 *   [rename:<from>:<to>]   a `bash` `mv`
 *   [binary:<path>:<N>]    a `bash` call writing N bytes (NUL bytes in; N ≤ 262144)
 * A path has no `:` or `]`; relative to the workspace root, or absolute under it.
 */
import { toolCall } from "./edits";
import type { ScriptFrame, WorkspaceChange } from "./script-frame";

const MAX_BINARY = 262_144;
const DIRECTIVE = /\[(write|delete|rename|binary):([^:\]]+)(?::([^\]]*))?\]/g;

/** The shell-quoted form of a path, for the `bash` calls' commands. */
const quote = (path: string) => `'${path.replaceAll("'", "'\\''")}'`;

/** The changes a message's file directives ask for, in order. */
function fileDirectives(message: string): WorkspaceChange[] {
  const out: WorkspaceChange[] = [];
  for (const m of message.matchAll(DIRECTIVE)) {
    const [, op, path, arg] = m as unknown as [string, string, string, string | undefined];
    if (op === "write" && arg !== undefined) out.push({ op, path, text: arg.replaceAll("\\n", "\n") });
    else if (op === "delete" && arg === undefined) out.push({ op, path });
    else if (op === "rename" && arg) out.push({ op, from: path, to: arg });
    else if (op === "binary" && arg && /^\d{1,6}$/.test(arg))
      out.push({ op, path, bytes: Math.min(MAX_BINARY, Number(arg)) });
  }
  return out;
}

/** The tool calls of a message's file directives, each completed one carrying its change. */
export function fileDirectiveFrames(executionId: string, message: string): ScriptFrame[] {
  return fileDirectives(message).flatMap((change, i) => {
    const id = `${executionId}:tool-file-${i + 1}`;
    const bash = (command: string) =>
      toolCall(id, "bash", { command }, { status: "completed", output: "", metadata: { exit: 0 } }, change);
    switch (change.op) {
      case "write":
        return toolCall(
          id,
          "write",
          { filePath: change.path, content: change.text },
          { status: "completed", output: "Wrote file successfully.", metadata: { filepath: change.path } },
          change,
        );
      case "delete":
        return bash(`rm -rf -- ${quote(change.path)}`);
      case "rename":
        return bash(`mv -- ${quote(change.from)} ${quote(change.to)}`);
      case "binary":
        return bash(`head -c ${change.bytes} /dev/urandom > ${quote(change.path)}`);
      default:
        return [];
    }
  });
}
