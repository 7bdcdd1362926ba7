// @ts-check
/**
 * "Notify me when the agent needs me": a setting of this browser (the sidebar's checkbox). When it
 * is on, the site may notify and this tab is in the background, a new ask of the open
 * conversation's agent (a question, a permission, a plan) shows a browser notification (the
 * Notification API) with the ask's title; clicking it brings the tab forward. One notification
 * per ask (its id is the tag, so tabs of the same conversation show it once). It needs this tab
 * open: with no tab open, webhooks tell (docs/webhooks.md#webhooks).
 */
import { notifySetting } from "../lib/storage.js";

/** @typedef {import("../lib/conversation.js").ConversationState} ConversationState */

/**
 * @param {{ ui: { notifyToggle: HTMLInputElement, notifyStatus: HTMLElement } }} deps
 */
export function createNotifier({ ui }) {
  const supported = typeof window.Notification === "function";
  const enabled = () => supported && notifySetting.on() && Notification.permission === "granted";

  /** @param {string} text */
  const say = (text) => {
    ui.notifyStatus.textContent = text;
  };

  function draw() {
    ui.notifyToggle.checked = enabled();
    if (!supported) {
      ui.notifyToggle.disabled = true;
      say("This browser cannot show notifications.");
    } else if (notifySetting.on() && Notification.permission === "denied")
      say("Notifications are blocked for this site: allow them in the browser's site settings.");
    else say(enabled() ? "On while this tab is open and in the background." : "");
  }

  ui.notifyToggle.addEventListener("change", async () => {
    if (!ui.notifyToggle.checked) {
      notifySetting.save(false);
      return draw();
    }
    notifySetting.save(true);
    if (Notification.permission !== "granted") await Notification.requestPermission();
    draw();
  });

  /**
   * After a stream event changed the open conversation: a new outstanding ask notifies.
   * @param {ConversationState} before @param {ConversationState} after
   */
  function changed(before, after) {
    if (!enabled() || document.visibilityState !== "hidden") return;
    for (const ask of Object.values(after.asks)) {
      if (ask.status !== "outstanding" || before.asks[ask.id]) continue;
      const notification = new Notification("The agent needs you", {
        body: `${after.title || "A conversation"}: ${ask.request.title}`,
        tag: `ask:${ask.id}`,
      });
      notification.addEventListener("click", () => {
        window.focus();
        notification.close();
      });
    }
  }

  draw();
  return { changed, draw };
}
