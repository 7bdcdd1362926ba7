/**
 * What the page says of its connection (public/lib/connection.js), in Node: a blip shorter than
 * the threshold is the badge's business only; once the stream has been reconnecting that long,
 * the running turn says the connection is lost, Stop is off and the message box says why it will
 * not send; connected again (or with nothing open), all of it clears.
 */
import { describe, expect, it } from "vitest";
import { connectionView, LOST_AFTER_MS } from "../../public/lib/connection.js";

const since = 1_000_000;

describe("the connection as the page says it", () => {
  it("reconnecting for less than the threshold: nothing but a recheck at the threshold", () => {
    const view = connectionView({ state: "reconnecting", since, now: since + 1000, turnRunning: true });
    expect(view).toEqual({
      lost: false,
      turnNotice: "",
      composerStatus: "",
      canStop: true,
      recheckInMs: LOST_AFTER_MS - 1000,
    });
  });

  it("reconnecting for the threshold or more: the turn, Stop and the message box say it is lost", () => {
    for (const down of [LOST_AFTER_MS, LOST_AFTER_MS + 60_000]) {
      const view = connectionView({ state: "reconnecting", since, now: since + down, turnRunning: true });
      expect(view.lost).toBe(true);
      expect(view.turnNotice).toMatch(/^Connection to the server lost\. The agent keeps working/);
      expect(view.composerStatus).toMatch(/^Not connected to the server/);
      expect(view.canStop).toBe(false);
      expect(view.recheckInMs).toBeNull();
    }
  });

  it("with no turn running, only the message box says so", () => {
    const view = connectionView({ state: "reconnecting", since, now: since + LOST_AFTER_MS, turnRunning: false });
    expect(view.lost).toBe(true);
    expect(view.turnNotice).toBe("");
    expect(view.composerStatus).not.toBe("");
  });

  it("connected, catching up, a first connection under way (slow on a slow link), or nothing open: never lost, however long ago `since` was", () => {
    for (const state of ["live", "replaying", "connecting", "idle"] as const) {
      expect(connectionView({ state, since, now: since + 10 * LOST_AFTER_MS, turnRunning: true })).toEqual({
        lost: false,
        turnNotice: "",
        composerStatus: "",
        canStop: true,
        recheckInMs: null,
      });
    }
  });

  it("a clock that went backwards counts as just now, not as lost", () => {
    expect(connectionView({ state: "reconnecting", since, now: since - 5000, turnRunning: true })).toMatchObject({
      lost: false,
      recheckInMs: LOST_AFTER_MS,
    });
  });
});
