/**
 * Answers written the way coding agents write them: markdown with headings, lists, GFM task lists,
 * tables, links, fenced code in several languages (lines wider than a chat bubble), inline code and
 * a long diff. The chat page's browser tests render them through the normal path.
 *
 * `[markdown]` writes every section below in order; `[markdown:<section>]` writes that section
 * (several combine, in this order): lists, tasks, table, code, diff, links. The links section also
 * writes two links that lead nowhere (a `javascript:` and a `data:` URL), which a page must show as
 * text.
 *
 * The text streams as model tokens do: deltas of a few characters to a few words, cut anywhere (in
 * a word, a table row, a code fence), so a page renders every half-written construct on the way.
 */

const LISTS = `## What I found

The gateway keeps one **session object** per conversation: the \`turn-runner\` drives each turn, the \`event-log\` keeps *every* event it saw, and readers replay it from their cursor.

1. The Worker authenticates the request and routes it by conversation id.
2. The session object admits the turn:
   - a budget check first,
   - then the queue, if a turn is running.
3. The upstream reader folds the agent's frames into events.

> Nothing is lost when a reader drops: it resumes after its last event id.`;

const TASKS = `## Plan

- [x] Reproduce the duplicated tool card
- [x] Write a failing test for the replay
- [ ] Fix the dedupe key in \`ingest.ts\`
- [ ] Update the protocol notes
  - [ ] the replay section`;

const TABLE = `## The modules involved

| Module | What it does | Lines | Tested |
| :--- | :--- | ---: | :---: |
| \`turn-runner.ts\` | runs one turn against the provider, from admission to its end, and decides how it ended | 412 | yes |
| \`upstream-reader.ts\` | pumps the provider's stream and ingests each frame exactly once | 268 | yes |
| \`event-log.ts\` | appends events with monotonic ids and trims the oldest past the cap | 157 | yes |
| \`views.ts\` | builds the transcript, the summary and the usage views from the log | 301 | partly |`;

const CODE = `## Code

The retry helper, with the delay it waits before each attempt:

\`\`\`ts
export async function withRetry<T>(attempt: (n: number) => Promise<T>, { attempts = 5, baseDelayMs = 100, maxDelayMs = 5_000, retryable = isTransient }: RetryOptions = {}): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      if (n >= attempts || !retryable(err)) throw err;
      await sleep(Math.min(maxDelayMs, baseDelayMs * 2 ** (n - 1)) * (0.5 + Math.random() / 2)); // full jitter keeps a thundering herd apart
    }
  }
}
\`\`\`

The same check in Python, as the load script runs it:

\`\`\`python
def replay_is_gapless(events: list[dict], after: int) -> bool:
    ids = [event["id"] for event in events if event["id"] > after]  # every id after the cursor, in the order the stream delivered them
    return ids == list(range(after + 1, after + 1 + len(ids)))
\`\`\`

Run it against a local server:

\`\`\`bash
curl -sS -N "http://localhost:8787/v1/conversations/$CONVERSATION_ID/stream?after=41" -H "authorization: Bearer $GATEWAY_TOKEN" -H "accept: text/event-stream" | tee stream.log
\`\`\`

What the turn looks like afterwards:

\`\`\`json
{ "id": "turn_01J9Z8Q4W7", "status": "completed", "usage": { "inputTokens": 1980, "outputTokens": 80, "cost": 0.0021 }, "result": { "text": "The tests pass." } }
\`\`\`

Inline, \`npm test -- --run test/replay.test.ts\` runs only the new test.`;

const DIFF_LINES = [
  "diff --git a/src/objects/upstream-reader/ingest.ts b/src/objects/upstream-reader/ingest.ts",
  "index 3f2a9c1..8b7d0e4 100644",
  "--- a/src/objects/upstream-reader/ingest.ts",
  "+++ b/src/objects/upstream-reader/ingest.ts",
  '@@ -12,24 +12,31 @@ import type { ProviderEvent } from "../../providers/provider";',
  " ",
  " /** One upstream frame folded into the log: new events, or none when the frame repeats one. */",
  " export function ingest(state: IngestState, frame: ProviderEvent): IngestResult {",
  "-  const key = `${frame.type}:${frame.partId}`;",
  "+  // A replay repeats frames with the same part and the same text: key on both, or a tool card that",
  "+  // went pending → running → completed is deduplicated into its first state only.",
  '+  const key = `${frame.type}:${frame.partId}:${frame.status ?? ""}:${frame.text?.length ?? 0}`;',
  "   if (state.seen.has(key)) return { state, events: [] };",
  "-  state.seen.add(key);",
  "+  const seen = new Set(state.seen).add(key);",
  "   switch (frame.type) {",
  '     case "text":',
  '-      return { state, events: [{ type: "message.delta", partId: frame.partId, text: frame.delta }] };',
  '+      return { state: { ...state, seen }, events: [{ type: "message.delta", partId: frame.partId, text: frame.delta }] };',
  '     case "tool":',
  '-      return { state, events: [{ type: "tool.updated", partId: frame.partId, status: frame.status }] };',
  '+      return { state: { ...state, seen }, events: [{ type: "tool.updated", partId: frame.partId, status: frame.status }] };',
  '     case "reasoning":',
  "-      return { state, events: [] };",
  '+      return { state: { ...state, seen }, events: [{ type: "reasoning.delta", partId: frame.partId, text: frame.delta }] };',
  "     default:",
  "       return assertNever(frame);",
  "   }",
  " }",
  "diff --git a/src/objects/upstream-reader/ingest.test.ts b/src/objects/upstream-reader/ingest.test.ts",
  "index 1c0e5a2..a94f7b3 100644",
  "--- a/src/objects/upstream-reader/ingest.test.ts",
  "+++ b/src/objects/upstream-reader/ingest.test.ts",
  '@@ -40,6 +40,18 @@ describe("ingest", () => {',
  "     expect(events).toHaveLength(1);",
  "   });",
  " ",
  '+  it("keeps every state of a tool card when a replay repeats its frames", () => {',
  "+    let state = emptyIngestState();",
  '+    const statuses = ["pending", "running", "completed"] as const;',
  '+    const frames = [...statuses, ...statuses].map((status) => ({ type: "tool" as const, partId: "tool-1", status }));',
  "+    const seen: string[] = [];",
  "+    for (const frame of frames) {",
  "+      ({ state, events } = ingest(state, frame));",
  "+      seen.push(...events.map((e) => e.status));",
  "+    }",
  '+    expect(seen).toEqual(["pending", "running", "completed"]);',
  "+  });",
  "+",
  '   it("drops a frame of an unknown part", () => {',
];

const DIFF = `## The change

\`\`\`diff
${DIFF_LINES.join("\n")}
\`\`\`

Two files, one fix and its test.`;

const LINKS = `## Links

The protocol is described in [the SSE notes](https://example.com/docs/sse-protocol "Event stream protocol") and at <https://example.com/gateway>; mail <team@example.com> with questions.

Two links that lead nowhere, which a page shows as text: [click me](javascript:alert(1)) and [an embedded page](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==).`;

const SECTIONS = { lists: LISTS, tasks: TASKS, table: TABLE, code: CODE, diff: DIFF, links: LINKS } as const;
type MarkdownSection = keyof typeof SECTIONS;
const ORDER = Object.keys(SECTIONS) as MarkdownSection[];

/** The sections a message asks for: all of them for `[markdown]`, those named by `[markdown:<section>]`. */
function sectionsAsked(message: string): MarkdownSection[] {
  if (message.includes("[markdown]")) return ORDER;
  return ORDER.filter((section) => message.includes(`[markdown:${section}]`));
}

/** The markdown answer a message asks for, or undefined when it asks for none. */
export function markdownAnswer(message: string): string | undefined {
  const sections = sectionsAsked(message);
  return sections.length > 0 ? sections.map((s) => SECTIONS[s]).join("\n\n") : undefined;
}

/**
 * Delta sizes in characters, cycled: from a fragment of a word to a dozen words, as a model's
 * tokens arrive in batches (about 180 deltas for the whole [markdown] answer). Cut anywhere, so
 * half a fence, half a row or half a word is shown.
 */
const DELTA_CHARS = [24, 9, 51, 17, 38, 5, 64, 30, 44, 13, 58, 26];

/** Splits text into deltas that rejoin to exactly the text (never inside a UTF-16 surrogate pair). */
export function tokenDeltas(text: string): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let at = 0, i = 0; at < chars.length; i++) {
    const size = DELTA_CHARS[i % DELTA_CHARS.length]!;
    out.push(chars.slice(at, at + size).join(""));
    at += size;
  }
  return out;
}
