// @ts-check
/**
 * Branches of the open conversation (docs/api.md#branches): Edit on any message and Regenerate on any
 * answer send a turn after the turn before it, which starts a branch; the "< n/m >" picker on a
 * message where branches split shows another one. The server keeps which branch is active, so a
 * reload shows it again; a switch anywhere (another tab, a turn sent on another branch) reaches
 * every tab as `branch.switched`, and the tab loads the branch it names. The button pressed goes
 * away with the branch it was on: after Regenerate the focus is in the message box (the answer is
 * under way), after ‹ or › on the picker of the version shown (its button that can still be pressed).
 */
import { ApiError } from "../lib/api.js";
import { GATEWAY_EVENT } from "../lib/events.js";

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   reload: () => Promise<void>,
 *   follow: () => void,
 *   screen: { showBanner: (text: string, kind?: string) => void, hideBanner: () => void, schedule: () => void },
 *   ui: { input: HTMLTextAreaElement },
 *   focusPicker: (turnId: string, action: "branch-prev" | "branch-next") => void,
 * }} deps  `reload`: load the open conversation again (its active branch) and follow it; `focusPicker`:
 *   once the turn is drawn, focus its picker's button (the other one when that one cannot be pressed)
 */
export function createBranches({ api, store, reload, follow, screen, ui, focusPicker }) {
  /** The tree as the server listed it: each turn's parent, and the branch it was sent on. */
  let tree = /** @type {Map<string, { parent: string | null, branch: number }>} */ (new Map());
  /** The branch the loaded transcript is of. */
  let shown = 0;
  let cid = "";

  /**
   * Reads the conversation's branches (after a turn is accepted), or takes those read with its
   * transcript (a load).
   * @param {import("../lib/wire").Branches} [read]
   */
  async function load(read) {
    const generation = store.generation;
    const of = store.conv.cid;
    try {
      const list = read ?? (await api.branches(of));
      if (generation !== store.generation) return;
      const next = new Map();
      for (const b of list.branches) {
        // A branch's own turns are those from its first one on; before it, it shares its origin's.
        const first = b.turnIds.indexOf(b.firstTurnId);
        b.turnIds.forEach((turnId, i) => {
          if (i >= first && !next.has(turnId))
            next.set(turnId, { parent: i === 0 ? null : b.turnIds[i - 1], branch: b.branch });
        });
      }
      tree = next;
      shown = list.active;
      cid = of;
      screen.schedule();
    } catch (err) {
      // A conversation the server does not hold yet has no branches.
      if (!(err instanceof ApiError && err.code === "conversation_not_found"))
        console.warn("could not read the branches", err);
    }
  }

  /**
   * The turns that follow the same turn as `turnId`, oldest first, where there are several.
   * @param {string} turnId
   * @returns {{ index: number, count: number } | null}
   */
  function siblingsOf(turnId) {
    if (cid !== store.conv.cid) return null;
    const node = tree.get(turnId);
    if (!node) return null;
    const ids = siblingIds(node.parent);
    return ids.length > 1 ? { index: ids.indexOf(turnId), count: ids.length } : null;
  }

  /** @param {string | null} parent */
  function siblingIds(parent) {
    return [...tree.entries()]
      .filter(([, n]) => n.parent === parent)
      .sort((a, b) => a[1].branch - b[1].branch)
      .map(([id]) => id);
  }

  /** A send beside a turn under way, or the last one that failed: its retry is the same turn. @type {{ key: string, turnId: string, sending: boolean } | null} */
  let attempt = null;

  /**
   * Sends `message` after the turn `turnId` followed: a branch beside it. The editor stays open
   * with the edited text until the server took the turn: a send that fails keeps it, to send again
   * (under the same turn id, so a send that did reach the server is not made twice).
   * @param {string} turnId @param {string} message
   */
  async function sendBeside(turnId, message) {
    if (store.busy() || !tree.has(turnId) || attempt?.sending) return;
    const parent = tree.get(turnId)?.parent ?? null;
    const key = JSON.stringify([store.conv.cid, parent, message]);
    const current =
      attempt?.key === key ? { ...attempt, sending: true } : { key, turnId: `t-${crypto.randomUUID()}`, sending: true };
    attempt = current;
    screen.hideBanner();
    try {
      await api.sendAfter(store.conv.cid, current.turnId, message, parent);
    } catch (err) {
      current.sending = false;
      screen.showBanner(err instanceof Error ? err.message : String(err));
      screen.schedule();
      return;
    }
    attempt = null;
    if (store.editing === turnId) store.editing = null;
    await reload();
    follow();
  }

  /**
   * Shows the sibling `delta` away from `turnId` at its split.
   * @param {string} turnId @param {number} delta
   */
  async function pick(turnId, delta) {
    const node = tree.get(turnId);
    if (!node) return;
    const ids = siblingIds(node.parent);
    const target = ids[ids.indexOf(turnId) + delta];
    if (!target) return;
    try {
      await api.switchBranch(store.conv.cid, target);
    } catch (err) {
      screen.showBanner(err instanceof Error ? err.message : String(err));
      return;
    }
    focusPicker(target, delta < 0 ? "branch-prev" : "branch-next");
    await reload();
  }

  return {
    siblingsOf,
    pick,
    /** @param {string} turnId @param {string} message */
    edit: (turnId, message) => sendBeside(turnId, message),
    /** @param {string} turnId */
    regenerate: (turnId) => {
      const turn = store.conv.turns[turnId];
      if (!turn) return;
      ui.input.focus();
      sendBeside(turnId, turn.userText);
    },
    /**
     * What happened to the open conversation: a load reads its branches again; a switch heard
     * on the stream loads the branch it names.
     * @param {import("../lib/reducer.js").Action} action
     */
    changed(action) {
      // A conversation without turns has no branches to ask for (nor, maybe, a conversation yet).
      if (action.type === "loaded") {
        if (store.conv.order.length > 0) load(action.branches);
        else tree = new Map();
      } else if (action.type === "event" && action.event.type === GATEWAY_EVENT.branchSwitched) {
        const branch = Number(/** @type {Record<string, unknown>} */ (action.event.data).branch);
        if (branch !== shown) {
          shown = branch;
          reload();
        }
      } else if (action.type === "event" && action.event.type === GATEWAY_EVENT.turnAccepted) load();
    },
  };
}
