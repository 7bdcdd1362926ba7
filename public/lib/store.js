// @ts-check
/**
 * The page's state, in one place, and the one way the open conversation changes:
 * `dispatch(action)` runs the reducer (reducer.js) and, when the conversation changed, calls every
 * subscriber with (before, after, action), in the order they subscribed. The controllers
 * (public/controllers/) read the state here and keep no copy of it. No DOM.
 */
import { activeTurn, emptyConversation } from "./conversation.js";
import { reduce } from "./reducer.js";

/** @typedef {import("./reducer.js").Action} Action */
/** @typedef {import("./conversation.js").ConversationState} ConversationState */
/** @typedef {import("./api.js").ConversationEntry} ConversationEntry */
/** @typedef {(before: ConversationState, after: ConversationState, action: Action) => void} Listener */

export function createStore() {
  /** @type {Listener[]} */
  const listeners = [];
  const store = {
    /** The open conversation, as the reducer keeps it. */
    conv: emptyConversation(""),
    /** @type {ConversationEntry[]} the conversation list, as last fetched */
    conversations: [],
    /** Whether the list holds every conversation (a conversation missing from it is new). */
    listComplete: false,
    /** @type {string | null} the turn whose message is being edited */
    editing: null,
    /** Bumps on every conversation switch and sign-out: late answers of the last one check it. */
    generation: 0,

    /** @param {Action} action */
    dispatch(action) {
      const before = store.conv;
      store.conv = reduce(before, action);
      if (store.conv === before) return;
      for (const listener of listeners) listener(before, store.conv, action);
    },

    /**
     * Puts another conversation in place (opening one), telling no subscriber: the caller redraws.
     * @param {ConversationState} conv
     */
    replace(conv) {
      store.conv = conv;
    },

    /** @param {Listener} listener */
    subscribe(listener) {
      listeners.push(listener);
    },

    /** Nothing can be sent: no conversation is open yet, it was deleted, or a turn is under way. */
    busy: () => !store.conv.cid || store.conv.deleted || activeTurn(store.conv) !== null,
  };
  return store;
}

/** @typedef {ReturnType<typeof createStore>} Store */
