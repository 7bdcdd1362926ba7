// The page's store (public/lib/store.js): the reducer's state behind one dispatch, which tells its
// subscribers of a change, in order, and of nothing else.
import { describe, expect, it } from "vitest";
import type { ConversationState } from "../../public/lib/conversation.js";
import type { Action } from "../../public/lib/reducer.js";
import { createStore } from "../../public/lib/store.js";

const AT = "2026-01-01T00:00:00.000Z";

describe("the page's store", () => {
  it("tells each subscriber of a change, in the order they subscribed, with the state before and after", () => {
    const store = createStore();
    store.replace({ ...store.conv, cid: "c1" });
    const calls: Array<[string, ConversationState, ConversationState, Action]> = [];
    store.subscribe((before, after, action) => calls.push(["first", before, after, action]));
    store.subscribe((before, after, action) => calls.push(["second", before, after, action]));
    const opened = store.conv;
    const send: Action = { type: "send", turnId: "t1", message: "hello", at: AT };
    store.dispatch(send);
    expect(calls.map((c) => c[0])).toEqual(["first", "second"]);
    for (const [, before, after, action] of calls) {
      expect(before).toBe(opened);
      expect(after).toBe(store.conv);
      expect(action).toBe(send);
    }
    expect(store.conv.turns.t1?.status).toBe("sending");
    expect(store.busy()).toBe(true);
  });

  it("tells nobody of an action that changes nothing, nor of a conversation put in place", () => {
    const store = createStore();
    let told = 0;
    store.subscribe(() => told++);
    // An answer for a turn this page never sent: the reducer keeps the same state.
    store.dispatch({ type: "sent", turnId: "unknown", status: "running" });
    store.replace({ ...store.conv, cid: "c2" });
    expect(told).toBe(0);
    expect(store.conv.cid).toBe("c2");
    expect(store.busy()).toBe(false);
  });

  it("is busy with no conversation open, and once it is deleted", () => {
    const store = createStore();
    expect(store.busy()).toBe(true);
    store.replace({ ...store.conv, cid: "c3" });
    expect(store.busy()).toBe(false);
    store.dispatch({ type: "deleted" });
    expect(store.busy()).toBe(true);
  });
});
