/**
 * An account's deletion, step by step (docs/api.md#the-sandboxs-life, docs/api.md#deleting-an-account). The
 * record is written before anything is deleted (`sealed`: from then on nothing of the account is
 * read or run), and each step is marked done before the next begins, so a deletion cut off at any
 * point (a crash, an eviction, an upstream failure) resumes at the step it stopped in, from the
 * user object's alarm or the next `DELETE /v1/me`. Every step may run again: each deletes what is
 * left of its part, and a part already gone counts as deleted.
 *
 * The order, and why:
 * 1. `sealed`: the record exists; reads and turns of the account are refused (`account_deleting`).
 * 2. `webhooks`: the user's webhooks are forgotten, so no delivery tells of the conversations
 *    while they go (`forgetWebhooks`).
 * 3. `streams`: every open browser stream of the account is closed (its reconnect is refused).
 * 4. `conversations`: each conversation is deleted upstream (its run stopped, its agent session
 *    deleted) and here (its session object wiped, its row gone from the index), until the index
 *    is empty: the agent sessions live in the sandbox, so they go before it.
 * 5. `sandbox`: the user's sandbox is deleted upstream and its record here.
 * 6. `index`: the rest of the user object (the index, spend, the environment's log) is wiped; a
 *    conversation that reached the index meanwhile sends the deletion back to step 4.
 * 7. `done`: the record keeps only when the deletion began and ended (no user id).
 */
import type { DeletionStep } from "../schemas/environment";

export interface DeletionDeps {
  /** The deletion's next step, from the durable record. */
  step(): DeletionStep;
  /** Marks `step` as the next one (durably, before it runs). */
  advance(step: DeletionStep): void;
  /** Every webhook endpoint of the user and every delivery, pending ones included, is forgotten (UserObject.forgetWebhooks). */
  forgetWebhooks(): Promise<void>;
  /** The conversation ids the index still holds. */
  conversations(): string[];
  closeStreams(conversationId: string): Promise<void>;
  /** Deletes one conversation upstream and here (its index row included); throws when upstream could not be told. */
  deleteConversation(conversationId: string): Promise<void>;
  deleteSandbox(): Promise<void>;
  /** Wipes what is left of the user object's data (not the deletion record). */
  wipeIndex(): void;
}

/** Runs the deletion from its recorded step to `done`; a failing step throws and stays the next one. */
export async function runDeletion(deps: DeletionDeps): Promise<void> {
  for (let step = deps.step(); step !== "done"; step = deps.step()) {
    switch (step) {
      case "sealed":
        deps.advance("webhooks");
        break;
      case "webhooks":
        await deps.forgetWebhooks();
        deps.advance("streams");
        break;
      case "streams":
        // Best effort: a stream left open has nothing more to read once its conversation goes.
        await Promise.allSettled(deps.conversations().map((cid) => deps.closeStreams(cid)));
        deps.advance("conversations");
        break;
      case "conversations":
        for (let left = deps.conversations(); left.length > 0; left = deps.conversations()) {
          for (const cid of left) await deps.deleteConversation(cid);
        }
        deps.advance("sandbox");
        break;
      case "sandbox":
        await deps.deleteSandbox();
        deps.advance("index");
        break;
      case "index":
        // A conversation whose first turn was under way when the deletion began may have reached the index since.
        if (deps.conversations().length > 0) {
          deps.advance("conversations");
          break;
        }
        deps.wipeIndex();
        deps.advance("done");
        break;
    }
  }
}
