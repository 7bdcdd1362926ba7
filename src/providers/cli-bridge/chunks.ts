/**
 * A one-shot run's stream (OpenAI chunks) → provider events. Stateful per stream: chunks carry
 * deltas only, so the reader keeps each part's text so far (viewers are shown the whole text of a
 * part on every update), the tool calls being assembled, and the measured cost so far. A chunk's
 * usage, request count and served models (its `provider_models`) are one usage report.
 *
 * The finish chunk and an error frame are remembered, not turned into a terminal event: a finish is
 * provisional until the run snapshot says terminal (agent-provider-cli-bridge); the provider confirms it.
 */
import type { SseFrame } from "../../lib/sse";
import type { ProviderEvent, RunError, UsageReport } from "../provider";
import { capacityRunError } from "./capacity";
import { scrubbed } from "./host-paths";
import { chunkUsage, servedModelsOf } from "./usage";
import { Chunk } from "./wire";

interface ToolCall {
  id?: string;
  name: string;
  args: string;
}

function parsedArgs(args: string): unknown {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

export class ChunkStream {
  private text = "";
  private reasoning = "";
  private readonly tools = new Map<number, ToolCall>();
  private costTotal = 0;
  /** The finish chunk: its id, reason and the usage it carried. */
  finish: { upstreamId: string | undefined; reason: string; usage?: UsageReport } | null = null;
  /** An error frame: its id and what it said. */
  error: { upstreamId: string | undefined; error: RunError } | null = null;
  /** `[DONE]` was read: the stream is over. */
  done = false;

  constructor(private readonly runId: string) {}

  /** The answer's text so far. */
  get answer(): string {
    return this.text;
  }

  /** Reads one data frame; answers the event it makes, if any. */
  read(frame: SseFrame & { data: string }): ProviderEvent | undefined {
    const upstreamId = frame.id === "" ? undefined : frame.id;
    if (frame.data.trim() === "[DONE]") {
      this.done = true;
      return undefined;
    }
    let json: unknown;
    try {
      json = JSON.parse(frame.data);
    } catch {
      return {
        kind: "warning",
        upstreamId,
        code: "invalid_upstream_frame",
        message: `bridge chunk ${upstreamId ?? "(no id)"} is not JSON`,
      };
    }
    const parsed = Chunk.safeParse(json);
    if (!parsed.success) {
      return {
        kind: "warning",
        upstreamId,
        code: "invalid_upstream_frame",
        message: `bridge chunk ${upstreamId ?? "(no id)"} is not a chat completion chunk`,
      };
    }
    const chunk = parsed.data;
    if (chunk.error) {
      // The bridge's words without its host's paths; a run it refused for capacity in this gateway's words.
      const message = scrubbed(chunk.error.message ?? "the run failed", `run ${this.runId}`);
      const error = capacityRunError(chunk.error) ?? {
        ...(chunk.error.type ? { code: chunk.error.type } : {}),
        message,
      };
      this.error = { upstreamId, error };
      return undefined;
    }
    let usage: UsageReport | null = null;
    if (chunk.usage && upstreamId !== undefined) {
      const read = chunkUsage(chunk.usage, upstreamId, this.costTotal);
      usage = read.report;
      this.costTotal = read.costTotal;
    }
    // The models the bridge observed serving the run (its own data, not the `model` echo).
    const served = upstreamId !== undefined ? servedModelsOf(chunk) : undefined;
    if (served !== undefined)
      usage = {
        ...(usage ?? { mode: "delta", key: upstreamId, provenance: "unknown", counts: null }),
        servedModels: served,
      };
    const choice = chunk.choices?.[0];
    if (choice?.finish_reason) {
      this.finish = { upstreamId, reason: choice.finish_reason, ...(usage ? { usage } : {}) };
      return undefined;
    }
    const delta = choice?.delta;
    if (delta?.content) {
      this.text += delta.content;
      return {
        kind: "part",
        upstreamId,
        part: { id: `${this.runId}:text`, type: "text", text: this.text },
        delta: delta.content,
      };
    }
    if (delta?.reasoning) {
      this.reasoning += delta.reasoning;
      return {
        kind: "part",
        upstreamId,
        part: { id: `${this.runId}:reasoning`, type: "reasoning", text: this.reasoning },
        delta: delta.reasoning,
      };
    }
    const call = delta?.tool_calls?.[0];
    if (call) {
      const index = call.index ?? 0;
      const tool = this.tools.get(index) ?? { name: "tool", args: "" };
      if (call.id) tool.id = call.id;
      if (call.function?.name) tool.name = call.function.name;
      if (call.function?.arguments) tool.args += call.function.arguments;
      this.tools.set(index, tool);
      return {
        kind: "part",
        upstreamId,
        // The bridge reports a tool call once the CLI ran the command.
        part: {
          id: `${this.runId}:tool:${index}`,
          type: "tool",
          tool: tool.name,
          state: { status: "completed", input: parsedArgs(tool.args) },
        },
      };
    }
    if (usage) return { kind: "usage", upstreamId, usage };
    return undefined;
  }
}
