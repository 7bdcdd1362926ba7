/**
 * The emulator's shell (docs/sandbox-wire.md §12, docs/emulator.md "The terminal"): a tiny
 * line-editing shell over the sandbox's workspace, as a PTY shows it. Pure: it is given the typed
 * text and answers the bytes the PTY would write back (the echo, a command's output, the prompt)
 * and, for `exit`, the exit code. Its reads of the workspace go through `ShellFiles`.
 *
 * Line editing as a cooked-mode PTY: printable characters are echoed, `\x7f` (backspace) rubs out
 * the last one, `\x03` (Ctrl-C) prints `^C` and a new prompt, Enter (`\r` or `\n`) runs the line.
 * Output lines end in `\r\n`.
 */
import { absolutePath, resolvePath } from "./workspace-path";

/** The workspace as the shell reads it; paths are relative to the root ("" the root itself). */
export interface ShellFiles {
  /** The names directly in the folder `rel` (folders with a trailing `/`), or undefined when it is no folder. */
  list(rel: string): string[] | undefined;
  /** The file's bytes, or undefined when it is no file. */
  read(rel: string): Uint8Array | undefined;
}

export const PROMPT = "$ ";
const SEQ_MAX = 100_000;
const CLEAR = "\x1b[H\x1b[2J";
/** The shell's working directory: the workspace root. */
const SHELL_CWD = absolutePath("");

export interface ShellOutput {
  /** What the PTY writes back, in order. */
  output: string;
  /** Set when the shell exited (`exit [n]`): its exit code; input after it is ignored. */
  exitCode?: number;
}

/** Splits a command line into words: whitespace separates, single or double quotes group. */
export function words(line: string): string[] {
  const out: string[] = [];
  let word: string | undefined;
  let quote: string | undefined;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word = (word ?? "") + ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      word = word ?? "";
    } else if (/\s/.test(ch)) {
      if (word !== undefined) out.push(word);
      word = undefined;
    } else word = (word ?? "") + ch;
  }
  if (word !== undefined) out.push(word);
  return out;
}

const lines = (text: string) => text.replace(/\r?\n/g, "\r\n");

export class Shell {
  private line = "";
  private exited = false;
  rows: number;
  cols: number;

  constructor(
    private readonly files: ShellFiles,
    size: { cols: number; rows: number },
  ) {
    this.cols = size.cols;
    this.rows = size.rows;
  }

  /** What a new shell writes first: its prompt. */
  start(): string {
    return PROMPT;
  }

  resize(cols: number, rows: number): void {
    this.cols = cols;
    this.rows = rows;
  }

  /** Typed text in; the PTY's answer out. */
  input(text: string): ShellOutput {
    let output = "";
    for (const ch of text) {
      if (this.exited) break;
      if (ch === "\r" || ch === "\n") {
        output += "\r\n";
        const ran = this.run(this.line);
        this.line = "";
        output += ran.output;
        if (ran.exitCode !== undefined) {
          this.exited = true;
          return { output, exitCode: ran.exitCode };
        }
        output += PROMPT;
      } else if (ch === "\x7f" || ch === "\b") {
        if (this.line.length > 0) {
          this.line = [...this.line].slice(0, -1).join("");
          output += "\b \b";
        }
      } else if (ch === "\x03") {
        this.line = "";
        output += `^C\r\n${PROMPT}`;
      } else if (ch >= " " || ch === "\t") {
        this.line += ch;
        output += ch;
      }
    }
    return { output };
  }

  /** Runs one command line: its output (each line ending `\r\n`), and an exit code for `exit`. */
  run(line: string): ShellOutput {
    const [name, ...args] = words(line);
    if (name === undefined) return { output: "" };
    switch (name) {
      case "echo":
        return { output: `${args.join(" ")}\r\n` };
      case "pwd":
        return { output: `${SHELL_CWD}\r\n` };
      case "clear":
        return { output: CLEAR };
      case "stty":
        if (args[0] === "size") return { output: `${this.rows} ${this.cols}\r\n` };
        return { output: "stty: only `stty size` is supported\r\n" };
      case "seq":
        return { output: this.seq(args[0]) };
      case "ls":
        return { output: this.ls(args[0] ?? ".") };
      case "cat":
        return { output: args.map((a) => this.cat(a)).join("") };
      case "exit": {
        const code = args[0] === undefined ? 0 : Number(args[0]);
        if (!Number.isInteger(code) || code < 0 || code > 255) return { output: "sh: exit: Illegal number\r\n" };
        return { output: "", exitCode: code };
      }
      default:
        return { output: `sh: ${name}: command not found\r\n` };
    }
  }

  private seq(arg: string | undefined): string {
    const n = Number(arg);
    if (arg === undefined || !Number.isInteger(n) || n < 0 || n > SEQ_MAX)
      return `seq: give a count from 0 to ${SEQ_MAX}\r\n`;
    const out: string[] = [];
    for (let i = 1; i <= n; i++) out.push(`${i}\r\n`);
    return out.join("");
  }

  private ls(path: string): string {
    const resolved = resolvePath(path);
    if (!resolved.ok) return `ls: ${resolved.reason}\r\n`;
    const rel = resolved.rel;
    const names = this.files.list(rel);
    if (names) return names.map((n) => `${n}\r\n`).join("");
    if (this.files.read(rel)) return `${path}\r\n`;
    return `ls: ${path}: No such file or directory\r\n`;
  }

  private cat(path: string): string {
    const resolved = resolvePath(path);
    if (!resolved.ok) return `cat: ${resolved.reason}\r\n`;
    const rel = resolved.rel;
    const bytes = this.files.read(rel);
    if (bytes) return lines(new TextDecoder().decode(bytes));
    if (this.files.list(rel)) return `cat: ${path}: Is a directory\r\n`;
    return `cat: ${path}: No such file or directory\r\n`;
  }
}
