import { describe, expect, it } from "vitest";
import { PROMPT, Shell, type ShellFiles, words } from "./shell";

const FILES: Record<string, string> = { "README.md": "# hi\nthere\n", "src/a.ts": "export {};\n" };
const files: ShellFiles = {
  list(rel) {
    const prefix = rel === "" ? "" : `${rel}/`;
    const names = new Set<string>();
    for (const path of Object.keys(FILES)) {
      if (!path.startsWith(prefix)) continue;
      const rest = path.slice(prefix.length);
      names.add(rest.includes("/") ? `${rest.slice(0, rest.indexOf("/"))}/` : rest);
    }
    return names.size > 0 ? [...names].sort() : undefined;
  },
  read: (rel) => (FILES[rel] === undefined ? undefined : new TextEncoder().encode(FILES[rel])),
};
const shell = () => new Shell(files, { cols: 80, rows: 24 });

describe("the emulator's shell", () => {
  it("echoes what is typed and runs the line on Enter, then prompts again", () => {
    const sh = shell();
    expect(sh.start()).toBe(PROMPT);
    expect(sh.input("echo hi").output).toBe("echo hi");
    expect(sh.input("\r").output).toBe(`\r\nhi\r\n${PROMPT}`);
  });

  it("rubs out with backspace and drops the line on Ctrl-C", () => {
    const sh = shell();
    expect(sh.input("pwx\x7fd\r").output).toBe(`pwx\b \bd\r\n/home/agent\r\n${PROMPT}`);
    expect(sh.input("echo no\x03").output).toBe(`echo no^C\r\n${PROMPT}`);
    expect(sh.input("\r").output).toBe(`\r\n${PROMPT}`);
    expect(sh.input("\x7f").output).toBe("");
  });

  it("lists and reads the workspace, with \\r\\n line ends", () => {
    const sh = shell();
    expect(sh.run("ls").output).toBe("README.md\r\nsrc/\r\n");
    expect(sh.run("ls src").output).toBe("a.ts\r\n");
    expect(sh.run("ls nope").output).toBe("ls: nope: No such file or directory\r\n");
    expect(sh.run("ls ..").output).toBe('ls: ..: ".." is refused\r\n');
    expect(sh.run("ls /etc").output).toBe("ls: /etc is outside the workspace /home/agent\r\n");
    expect(sh.run("cat README.md").output).toBe("# hi\r\nthere\r\n");
    expect(sh.run("cat /home/agent/src/a.ts").output).toBe("export {};\r\n");
    expect(sh.run("cat src").output).toBe("cat: src: Is a directory\r\n");
  });

  it("prints its size, counts with seq, clears, and names an unknown command", () => {
    const sh = shell();
    expect(sh.run("stty size").output).toBe("24 80\r\n");
    sh.resize(120, 40);
    expect(sh.run("stty size").output).toBe("40 120\r\n");
    expect(sh.run("seq 3").output).toBe("1\r\n2\r\n3\r\n");
    expect(sh.run("seq 100001").output).toContain("seq:");
    expect(sh.run("clear").output).toBe("\x1b[H\x1b[2J");
    expect(sh.run("vim x").output).toBe("sh: vim: command not found\r\n");
    expect(words(`echo 'a  b' "c" d`)).toEqual(["echo", "a  b", "c", "d"]);
  });

  it("exits with the code given (0 by default) and ignores input after", () => {
    const sh = shell();
    expect(sh.input("exit 3\r")).toEqual({ output: "exit 3\r\n", exitCode: 3 });
    expect(sh.input("echo late\r")).toEqual({ output: "" });
    expect(shell().input("exit\r").exitCode).toBe(0);
    expect(shell().input("exit x\r")).toEqual({ output: `exit x\r\nsh: exit: Illegal number\r\n${PROMPT}` });
  });
});
