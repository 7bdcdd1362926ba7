// @ts-check
/**
 * Opening a conversation: the URL names it (?c=), its stream's snapshot (transcript, summary, branches
 * and usage, all of one last event: the first event of its stream, one request, started from <head> on
 * a page load) is loaded into the store, then the same stream is followed on, strictly after that
 * event (so the usage read is never newer than what the stream then brings: the total and budget end
 * as its last event says).
 * A new conversation (New, or no ?c=) asks the server nothing (no 404s): it starts with the first
 * message sent, and its usage and budget come with the stream (a turn that ended with no usage report
 * at all has the budget read once); one the URL names that the server does not have yet is asked for
 * once (404) and opened as new. One deleted elsewhere is left for a new one, saying so.
 */
import { ApiError } from "../lib/api.js";
import { emptyConversation } from "../lib/conversation.js";
import { GATEWAY_EVENT as E } from "../lib/events.js";
import { choiceStore, unsentStore } from "../lib/storage.js";
import { openWithSnapshot } from "../lib/stream.js";

const RELOAD_RETRY_MS = 3000;
const TURN_ENDS = new Set(/** @type {string[]} */ ([E.turnCompleted, E.turnFailed, E.turnCancelled]));

const newConversationId = () => `c-${crypto.randomUUID().slice(0, 18)}`;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { input: HTMLTextAreaElement },
 *   narrow: MediaQueryList,
 *   connect: (options?: import("./stream.js").ConnectOptions) => void,
 *   closeStream: () => void,
 *   refreshList: () => Promise<void>,
 *   drawList: () => void,
 *   closeSidebar: () => void,
 *   follow: () => void,
 *   screen: { showBanner: (text: string, kind?: string) => void, hideBanner: () => void, announce: (text: string) => void, updateTitle: () => void, schedule: () => void },
 * }} deps  `follow`: the transcript follows the newest content again
 */
export function createConversations({
  api,
  store,
  ui,
  narrow,
  connect,
  closeStream,
  refreshList,
  drawList,
  closeSidebar,
  follow,
  screen,
}) {
  /** Whether the open conversation's budget is known to the page: read with its usage, or told by the stream. */
  let budgetRead = false;
  /** The list's first load, under way beside the first conversation's (enter). */
  /** @type {Promise<void>} */
  let listing = Promise.resolve();

  /**
   * Rebuilds the open conversation from its stream's snapshot (one request: its transcript, summary,
   * branches and usage, all of the same last event), and follows the same stream on, strictly after that
   * event; a conversation that is gone (deleted elsewhere) is left.
   * @returns {Promise<void>}
   */
  async function reload() {
    const generation = store.generation;
    const cid = store.conv.cid;
    const hadHistory = store.conv.lastSeq > 0 || listed(cid);
    let opened;
    try {
      opened = await openWithSnapshot(api, cid);
      budgetRead = true;
    } catch (err) {
      if (generation !== store.generation) return;
      if (err instanceof ApiError && err.code === "conversation_not_found") {
        // Opened from the URL before the list came: the list says whether it was ever there.
        if (!hadHistory) await listing;
        if (generation !== store.generation) return;
        if (hadHistory || listed(cid)) return void leaveDeleted();
        store.dispatch({ type: "loaded", transcript: { messages: [], lastEventId: 0 }, unsent: unsentStore.list(cid) });
        connect({ exists: false });
        return;
      }
      screen.showBanner(`Could not load the conversation: ${err instanceof Error ? err.message : String(err)}`);
      setTimeout(() => generation === store.generation && reload(), RELOAD_RETRY_MS);
      return;
    }
    if (generation !== store.generation) return opened.close();
    const { messages: transcript, summary, usage, branches } = opened.snapshot;
    // Messages this tab is still sending are not in the transcript yet: they stay on the page.
    const sending = Object.values(store.conv.turns).filter((turn) => turn.status === "sending");
    // The open asks: each one's request with its turn id. The summary's schema leaves their shape
    // open (ConversationSummary.interactions in src/schemas/api.ts is an array of unknown).
    const outstanding = /** @type {Array<import("../lib/wire").InteractionRequest & { turnId: string }>} */ (
      summary.interactions ?? []
    );
    const askIds = [
      ...transcript.messages.flatMap((m) =>
        m.role === "assistant" ? m.parts.filter((p) => p.type === "interaction").map((p) => String(p.id)) : [],
      ),
      ...outstanding.map((i) => i.id),
    ];
    const waiting = summary.activeTurn
      ? { turnId: summary.activeTurn.turnId, waitingFor: summary.activeTurn.waitingFor ?? null }
      : null;
    store.dispatch({
      type: "loaded",
      transcript,
      outstanding,
      waiting,
      title: summary.title,
      unsent: unsentStore.list(cid),
      choices: choiceStore.read(askIds),
      branches,
      queue: summary.queue,
      agent: summary.agent,
      interactive: summary.interactive,
    });
    for (const turn of sending) {
      if (!store.conv.turns[turn.turnId])
        store.dispatch({
          type: "send",
          turnId: turn.turnId,
          message: turn.userText,
          at: turn.sentAt ?? new Date().toISOString(),
        });
    }
    for (const turnId of store.conv.order)
      if (store.conv.turns[turnId]?.status !== "unsent") unsentStore.remove(cid, turnId);
    // Of the same last event as the transcript: the stream brings every change after it.
    store.dispatch({ type: "usage", total: usage.total, budget: usage.budget, turns: usage.turns });
    connect({ first: opened });
  }

  /** Whether the conversation list (as loaded) has the conversation. */
  const listed = (/** @type {string} */ cid) => store.conversations.some((c) => c.conversationId === cid);

  /**
   * @param {string} cid
   * @param {{ push?: boolean, fresh?: boolean }} [options]  `fresh`: an id made here, new by construction
   */
  async function open(cid, { push = true, fresh = false } = {}) {
    closeStream();
    store.generation++;
    budgetRead = false;
    store.editing = null;
    store.replace(emptyConversation(cid));
    screen.hideBanner();
    closeSidebar();
    const url = new URL(location.href);
    url.searchParams.set("c", cid);
    if (push) history.pushState({ cid }, "", url);
    else history.replaceState({ cid }, "", url);
    const known = store.conversations.find((c) => c.conversationId === cid);
    drawList();
    if (known || (!store.listComplete && !fresh)) {
      store.replace({ ...store.conv, title: known?.title ?? null });
      screen.updateTitle();
      screen.schedule();
      await reload();
    } else {
      store.dispatch({ type: "loaded", transcript: { messages: [], lastEventId: 0 }, unsent: unsentStore.list(cid) });
      connect({ exists: false });
    }
    screen.updateTitle();
    screen.schedule();
    follow();
    if (!narrow.matches || document.activeElement === document.body) ui.input.focus();
  }

  const openNew = () => open(newConversationId(), { fresh: true });

  /** The open conversation was deleted elsewhere: say so, and leave it for a new one. */
  async function leaveDeleted() {
    const title = store.conv.title || "This conversation";
    store.dispatch({ type: "deleted" });
    store.conversations = store.conversations.filter((c) => c.conversationId !== store.conv.cid);
    await openNew();
    screen.showBanner(
      `“${title}” was deleted in another tab or on another device. This is a new conversation.`,
      "deleted",
    );
    screen.announce(`“${title}” was deleted elsewhere.`);
    refreshList();
  }

  // A new conversation's budget comes with its first usage report (usage.updated carries it, null
  // when none is set); a turn that ended without any has it read once.
  store.subscribe((_before, after, action) => {
    if (budgetRead || action.type !== "event") return;
    if (action.event.type === E.usageUpdated && "budget" in action.event.data) budgetRead = true;
    else if (TURN_ENDS.has(action.event.type) && after.budget === null) {
      budgetRead = true;
      readBudget();
    }
  });

  async function readBudget() {
    const generation = store.generation;
    const read = await api.usage(store.conv.cid).catch(() => null);
    if (read && generation === store.generation) store.dispatch({ type: "budget", budget: read.budget });
  }

  addEventListener("popstate", () => {
    const cid = new URL(location.href).searchParams.get("c");
    if (cid && cid !== store.conv.cid) open(cid, { push: false });
  });

  return {
    open,
    openNew,
    reload,
    /**
     * Signed in: the conversation the URL names (else a new one), its stream opened beside the list,
     * not after it (both started from <head> already: lib/early.js).
     */
    async enter() {
      listing = refreshList();
      const fromUrl = new URL(location.href).searchParams.get("c");
      await (fromUrl ? open(fromUrl, { push: false }) : open(newConversationId(), { push: false, fresh: true }));
    },
    /** Another tab deleted a conversation: leave it if it is this one, else update the list. */
    deletedElsewhere(/** @type {string} */ cid) {
      if (cid === store.conv.cid) leaveDeleted();
      else refreshList();
    },
  };
}
