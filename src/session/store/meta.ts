/**
 * The session's `meta` table: one validated JSON value per key, written and read back with the
 * key's schema below.
 */
import { z } from "zod";
import { ClaimsSchema } from "../../providers/claims";
import { Provenance } from "../../schemas/common";
import { AgentExactRunControlRef } from "../../schemas/contracts";
import { SessionContextSchema } from "./records";

/** What the `meta` table holds, one schema per key. */
const MetaSchemas = {
  /** Who this session belongs to, bound on first use. */
  session: SessionContextSchema,
  /** The agent session upstream, when it is not the session id: a conversation id used again after a delete starts afresh. */
  agentSessionId: z.string(),
  createdAt: z.number().int(),
  title: z.string(),
  /** The environment the last turn ran in (the session lives there upstream). */
  environmentId: z.string(),
  /** What that environment lets the gateway offer, as the provider read it. */
  claims: ClaimsSchema,
  /** Tokens the user spent in other conversations, as read when the last turn started. */
  userElsewhere: z.strictObject({
    used: z.number().int().nonnegative(),
    complete: z.boolean(),
    // Before schema 9 it was not recorded (read again at the next turn).
    provenance: Provenance.default("unknown"),
  }),
  /** The branch the conversation shows (../turn-tree.ts); absent: branch 0. */
  activeBranch: z.number().int().nonnegative(),
  /** The environment whose fork route was proved missing (404, 501): an edit there is refused before any upstream call. */
  forkUnavailable: z.strictObject({ environmentId: z.string(), since: z.number().int() }),
  /** Runs whose turn the gateway ended while they may still run upstream (../abandoned-runs.ts). */
  abandonedRuns: z.array(
    z.strictObject({
      turnId: z.string(),
      ref: AgentExactRunControlRef,
      /** When the turn was ended here. */
      since: z.number().int(),
      /** Settlements tried without an answer on the run's end. */
      attempts: z.number().int().nonnegative(),
    }),
  ),
  /** The seq up to which the log's webhook events were handed to the user object (../webhook-handoff.ts). */
  webhooksHandedOff: z.number().int().nonnegative(),
  /** The last seq an instance that opened on a running turn skipped to (./held-tail.ts): the next one skips past it. */
  seqFloor: z.number().int().nonnegative(),
  /** The highest seq trimming removed the log at and below (absent: never trimmed): a cursor at or above it is held (docs/sse-protocol.md §4, §13). */
  trimmedThrough: z.number().int().nonnegative(),
  /** The agent the first turn chose (../agent-choice.ts): its model and backend options; `{}`: the deployment's default. */
  agent: z.strictObject({
    model: z.string().optional(),
    credential: z.string().optional(),
    mcpServers: z.array(z.string()).optional(),
    instructions: z.string().optional(),
    systemPrompt: z.string().optional(),
    backend: z
      .strictObject({
        type: z.string().optional(),
        model: z.strictObject({ provider: z.string().optional(), model: z.string() }).optional(),
      })
      .optional(),
  }),
  /**
   * The agent's own terminal UI driving the conversation (../interactive.ts): where, and the control
   * generation held; null once released. While it is held, no turn is sent.
   */
  interactive: z
    .strictObject({
      terminalId: z.string(),
      environmentId: z.string(),
      agentSessionId: z.string(),
      connectionId: z.string(),
      generation: z.number().int().positive(),
      startedAt: z.number().int(),
    })
    .nullable(),
  /** Upstream sessions released while idle (../session-release.ts): each with the execution id of its last run then. */
  releasedSessions: z.record(z.string(), z.string()),
};
export type MetaKey = keyof typeof MetaSchemas;
export type MetaValue<K extends MetaKey> = z.infer<(typeof MetaSchemas)[K]>;

export class MetaStore {
  constructor(private readonly sql: Pick<SqlStorage, "exec">) {}

  get<K extends MetaKey>(key: K): MetaValue<K> | null {
    const text = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value;
    return text === undefined ? null : (MetaSchemas[key].parse(JSON.parse(text)) as MetaValue<K>);
  }

  set<K extends MetaKey>(key: K, value: MetaValue<K>): void {
    const text = JSON.stringify(MetaSchemas[key].parse(value));
    // A value written again unchanged writes no row.
    this.sql.exec(
      "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value WHERE value IS NOT excluded.value",
      key,
      text,
    );
  }
}
