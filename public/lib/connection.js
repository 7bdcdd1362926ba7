// @ts-check
/**
 * What the page says about its connection to the server, beyond the header's badge: once the
 * stream has been trying to reconnect for LOST_AFTER_MS, the connection counts as lost. Then the
 * running turn says so (the run goes on upstream; the stream catches up from its last event id
 * once the page reconnects), Stop cannot reach the server and says so, and the message box keeps
 * what is typed instead of sending it, saying why. A shorter blip (a reconnect within the
 * threshold) changes nothing but the badge. A first connection still under way (`connecting`, slow
 * on a slow link) is not a lost one: a message sent meanwhile goes as usual, and one that cannot
 * reach the server is kept with Retry. Pure: no DOM, no clock of its own.
 */

/** @typedef {"idle" | "connecting" | "replaying" | "live" | "reconnecting"} ConnectionState  lib/stream.js's states, and idle (nothing open) */

/** How long the stream may try to reconnect before the page says the connection is lost. */
export const LOST_AFTER_MS = 3000;

/**
 * @typedef {object} ConnectionView
 * @property {boolean} lost           the stream has been reconnecting for LOST_AFTER_MS or more
 * @property {string} turnNotice      what the running turn says ("" when nothing)
 * @property {string} composerStatus  why the message box will not send ("" when it will)
 * @property {boolean} canStop        Stop can reach the server
 * @property {number | null} recheckInMs  when this view changes by itself (the threshold), if it will
 */

/**
 * @param {{ state: ConnectionState, since: number, now: number, turnRunning: boolean }} input
 *   `since`: when the stream started reconnecting (controllers/stream.js)
 * @returns {ConnectionView}
 */
export function connectionView({ state, since, now, turnRunning }) {
  const trying = state === "reconnecting";
  const down = trying ? Math.max(0, now - since) : 0;
  const lost = trying && down >= LOST_AFTER_MS;
  return {
    lost,
    turnNotice:
      lost && turnRunning
        ? "Connection to the server lost. The agent keeps working; this answer catches up when the page reconnects."
        : "",
    composerStatus: lost
      ? "Not connected to the server: messages are not sent until the page reconnects. What you type stays here."
      : "",
    canStop: !lost,
    recheckInMs: trying && !lost ? LOST_AFTER_MS - down : null,
  };
}

/** What the message box says when a message was held back because the connection is lost. */
export const HELD_BACK =
  "Not sent: the page is not connected to the server. Your message stays here; send it again once the page reconnects.";
