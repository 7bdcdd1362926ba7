// @ts-check
/**
 * Following the open conversation's event stream (lib/stream.js), strictly after the last event
 * the store applied, and the connection badge in the header. Every event goes to the store as an
 * action; events of a conversation that is no longer open are dropped (the store's generation).
 * It also keeps since when the stream has been reconnecting, for what the page says once the
 * connection counts as lost (lib/connection.js).
 */
import { followStream } from "../lib/stream.js";

/** @typedef {import("../lib/stream.js").ConnectionState} ConnectionState */
/**
 * `exists`: the server has the conversation; `first`: its stream, opened with the snapshot the page shows (the
 * first connection reads on from it, and is live once the page has the snapshot's last event).
 * @typedef {{ exists?: boolean, first?: import("../lib/stream.js").OpenedStream | null }} ConnectOptions
 */

const LABEL = {
  idle: "Idle",
  connecting: "Connecting",
  replaying: "Catching up",
  live: "Live",
  reconnecting: "Reconnecting",
};

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { connection: HTMLElement },
 *   onReset: () => void,
 *   onChange: () => void,
 * }} deps  `onReset`: the server no longer has the stream's cursor; the conversation is loaded again;
 *   `onChange`: the connection's state changed
 */
export function createStreamController({ api, store, ui, onReset, onChange }) {
  /** @type {{ close: () => void } | null} */
  let stream = null;
  /** @type {{ state: ConnectionState | "idle", since: number }} since: when it entered this state */
  let status = { state: "idle", since: Date.now() };

  /** @param {ConnectionState | "idle"} state */
  function setConnection(state) {
    if (status.state === state) return;
    status = { state, since: Date.now() };
    ui.connection.dataset.state = state;
    ui.connection.textContent = LABEL[state];
    onChange();
  }

  function close() {
    stream?.close();
    stream = null;
    setConnection("idle");
  }

  /**
   * Follows the open conversation. A conversation the server does not have yet is followed too:
   * another tab may start it.
   * @param {ConnectOptions} [options]
   */
  function connect({ exists = true, first = null } = {}) {
    close();
    const generation = store.generation;
    const cid = store.conv.cid;
    stream = followStream({
      api,
      cid,
      first,
      after: () => store.conv.lastSeq,
      onEvent: (event) => generation === store.generation && store.dispatch({ type: "event", event }),
      onReset: () => generation === store.generation && onReset(),
      onState: (state) => generation === store.generation && setConnection(state),
      exists,
    });
  }

  return { connect, close, status: () => status };
}
