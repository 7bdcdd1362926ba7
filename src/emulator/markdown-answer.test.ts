/**
 * The emulator's markdown answers ([markdown], [markdown:<section>]): what a coding agent writes,
 * streamed as one text part in token-sized deltas through the script like any other answer.
 */
import { describe, expect, it } from "vitest";
import { markdownAnswer, tokenDeltas } from "./markdown-answer";
import { buildScript } from "./script";

const run = (message: string) =>
  buildScript({ message, executionId: "exe-md-0001", sessionId: "ses-1", backend: "opencode" });

/** The answer part's frames: its cumulative text and deltas, in order. */
function answerFrames(message: string) {
  return run(message)
    .filter((f) => f.type === "message.part.updated")
    .map((f) => f.data as { part: { id: string; type: string; text?: string }; delta?: string })
    .filter((d) => d.part.id === "exe-md-0001:text-2");
}

const fences = (text: string) => [...text.matchAll(/^```(\S*)$/gm)].map((m) => m[1]);

describe("the emulator's markdown answers", () => {
  it("[markdown] writes headings, lists, a task list, a table, links, code in several languages and a long diff", () => {
    const text = markdownAnswer("show me [markdown]")!;
    expect(text.match(/^## .+$/gm)).toEqual([
      "## What I found",
      "## Plan",
      "## The modules involved",
      "## Code",
      "## The change",
      "## Links",
    ]);
    expect(text).toMatch(/^1\. .+\n2\. .+\n {3}- /m); // an ordered list with a nested one
    expect(text.match(/^ *- \[[ x]\] /gm)).toHaveLength(5);
    expect(text).toMatch(/^- \[x\] /m);
    expect(text).toMatch(/^- \[ \] /m);
    expect(text).toMatch(/^\| :--- \| :--- \| ---: \| :---: \|$/m);
    expect(text).toMatch(/\[the SSE notes\]\(https:\/\/example\.com\//);
    expect(text).toContain("[click me](javascript:alert(1))");
    expect(text).toMatch(/\[an embedded page\]\(data:text\/html;base64,/);
    expect(text).toMatch(/ `npm test -- --run [^`]+` /);
    // Each fence opens with its language and closes: ts, python, bash, json, diff.
    expect(fences(text)).toEqual(["ts", "", "python", "", "bash", "", "json", "", "diff", ""]);
    const code = [...text.matchAll(/^```\S+\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    for (const block of code)
      expect(Math.max(...block.split("\n").map((l) => l.length)), block.slice(0, 40)).toBeGreaterThan(120);
    const diff = /^```diff\n([\s\S]*?)^```$/m.exec(text)![1]!.split("\n");
    expect(diff.length).toBeGreaterThan(40);
    expect(diff.filter((l) => l.startsWith("+")).length).toBeGreaterThan(10);
    expect(diff.filter((l) => l.startsWith("-")).length).toBeGreaterThan(5);
  });

  it("[markdown:<section>] writes that section; several combine in a fixed order; an unknown one, or none, writes no markdown", () => {
    expect(markdownAnswer("[markdown:tasks]")).toMatch(/^## Plan\n\n- \[x\]/);
    expect(fences(markdownAnswer("[markdown:code]")!)).toEqual(["ts", "", "python", "", "bash", "", "json", ""]);
    const two = markdownAnswer("[markdown:links] and [markdown:table]")!;
    expect(two.match(/^## .+$/gm)).toEqual(["## The modules involved", "## Links"]);
    expect(markdownAnswer("[markdown:everything]")).toBeUndefined();
    expect(markdownAnswer("plain words")).toBeUndefined();
  });

  it("streams as one text part whose deltas are token-sized, cut anywhere, and rejoin to exactly the answer", () => {
    const message = "write like an agent [markdown]";
    const text = markdownAnswer(message)!;
    const frames = answerFrames(message);
    expect(frames.length).toBeGreaterThan(100);
    let soFar = "";
    for (const f of frames) {
      soFar += f.delta!;
      expect(f.part.text).toBe(soFar);
    }
    expect(soFar).toBe(text);
    const sizes = frames.map((f) => f.delta!.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(64);
    expect(new Set(sizes).size).toBeGreaterThan(5);
    // Some delta ends inside a word, and some text so far ends in the middle of a line of an open fence.
    expect(frames.some((f) => /\w$/.test(f.delta!) && /^\w/.test(text.slice(f.part.text!.length)))).toBe(true);
    expect(
      frames.some((f) => (f.part.text!.match(/^```/gm) ?? []).length % 2 === 1 && !f.part.text!.endsWith("\n")),
    ).toBe(true);
  });

  it("the answer is the run's result, after the intro, the tool call and the usage as for any answer", () => {
    const message = "write like an agent [markdown:diff]";
    const frames = run(message);
    const result = frames.find((f) => f.type === "result")!.data as { finalText: string };
    expect(result.finalText).toBe(
      `Looking into it: "write like an agent [markdown:diff]".\n\n${markdownAnswer(message)}`,
    );
    expect(
      frames.some((f) => f.type === "message.part.updated" && (f.data.part as { type: string }).type === "tool"),
    ).toBe(true);
    expect(frames.filter((f) => f.type === "raw")).toHaveLength(2);
  });

  it("[words:N] still wins over markdown (benchmarks keep their exact answer)", () => {
    const result = run("[words:3] [markdown]").find((f) => f.type === "result")!.data as { finalText: string };
    expect(result.finalText.endsWith("\n\nThe repository is")).toBe(true);
  });

  it("tokenDeltas never splits a surrogate pair and loses nothing", () => {
    const text = "emoji 🙂 ".repeat(40);
    const deltas = tokenDeltas(text);
    expect(deltas.join("")).toBe(text);
    for (const d of deltas) expect(d).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
  });
});
