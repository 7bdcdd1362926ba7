// @ts-check
/**
 * The sandbox panel (docs/api.md#the-sandboxs-life): the user's sandbox as the provider reports it
 * (GET /v1/environment: a value the provider does not report reads "unknown", its reason on
 * hover, never a made-up figure), what the gateway last did to it, and Stop / Delete, each asked
 * for again in the panel before it is sent; and Delete my account (DELETE /v1/me), asked for the
 * same way, after which the page signs out. Opened from the sidebar's Sandbox button; a chunk of
 * its own, loaded at that first opening.
 */
/** @typedef {import("../lib/wire").EnvironmentView} EnvironmentView */
/** @typedef {{ state: "reported", value: any } | { state: "unavailable", reason: string }} Observed */

/** What each action asks, and says once done. */
const ACTIONS = {
  stop: {
    question: "Stop the sandbox now? Your next message starts it again; the agent remembers the conversation.",
    confirm: "Yes, stop it",
    done: "Sandbox stopped.",
  },
  delete: {
    question:
      "Delete the sandbox? Its files are removed, and at your next message the agent starts in a new sandbox, without the earlier conversation in its memory.",
    confirm: "Yes, delete it",
    done: "Sandbox deleted. The agent starts afresh at your next message.",
  },
  account: {
    question:
      "Delete your account? Every conversation, your sandbox and your webhooks are removed, here and at the agent service. This cannot be undone.",
    confirm: "Yes, delete my account",
    done: "Your account was deleted.",
  },
};

/** @param {number | null} seconds */
function duration(seconds) {
  if (seconds === null) return "none";
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** @param {string} iso */
const when = (iso) => new Date(iso).toLocaleString();

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   ui: { accountDelete: HTMLButtonElement, sandboxButton: HTMLElement, sandboxPanel: HTMLElement, sandboxFacts: HTMLElement, sandboxNote: HTMLElement, sandboxStop: HTMLButtonElement, sandboxDelete: HTMLButtonElement, sandboxConfirm: HTMLElement, sandboxQuestion: HTMLElement, sandboxYes: HTMLButtonElement, sandboxNo: HTMLButtonElement, sandboxClose: HTMLElement },
 *   screen: { showBanner: (text: string, kind?: string) => void, announce: (text: string) => void },
 *   signOut: (message: string) => void,
 *   el: typeof import("../views/dom.js").el,
 * }} deps  `el`: the page's DOM helper, handed in (this module is a chunk of its own, loaded at the panel's first opening)
 */
export function createSandbox({ api, ui, screen, signOut, el }) {
  /** @type {"stop" | "delete" | "account" | null} */
  let asking = null;

  /**
   * A fact as the provider reported it, or "unknown" with the reason.
   * @param {Observed} observed @param {(value: any) => string} [show]
   */
  function fact(observed, show = String) {
    if (observed.state === "reported") return el("span", { text: show(observed.value) });
    return el("span", { class: "unknown", title: observed.reason, text: "unknown" });
  }

  /** @param {EnvironmentView} v */
  function draw(v) {
    const env = v.environment;
    /** @type {Array<[string, Node]>} */
    const rows = env
      ? [
          ["Status", fact(env.reported.status)],
          ["Created", fact(env.reported.createdAt, when)],
          ["Last activity", fact(env.reported.lastActivityAt, when)],
          ["Expires", fact(env.reported.expiresAt, when)],
          ["Stops when idle for", fact(env.reported.idlePolicy, (p) => duration(p.idleTimeoutSeconds))],
          [
            "Resources",
            fact(
              env.reported.resources,
              (r) =>
                [
                  r.cpuCores !== null ? `${r.cpuCores} CPU` : null,
                  r.memoryMB !== null ? `${r.memoryMB} MB memory` : null,
                  r.diskGB !== null ? `${r.diskGB} GB disk` : null,
                ]
                  .filter(Boolean)
                  .join(", ") || "unknown",
            ),
          ],
        ]
      : [["Status", el("span", { text: "none yet: your next message creates one" })]];
    const last = v.actions[0];
    if (last) rows.push(["Last change", el("span", { text: `${last.action}, ${when(last.at)}` })]);
    ui.sandboxFacts.replaceChildren(
      ...rows.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", {}, value)]),
    );
    const shared = !v.capabilities.stop && !v.capabilities.delete;
    ui.sandboxNote.textContent = shared
      ? "This provider runs one environment for every user: it cannot be stopped or deleted from here."
      : "";
    ui.sandboxNote.hidden = !shared;
    const status = env?.reported.status.state === "reported" ? env.reported.status.value : null;
    ui.sandboxStop.disabled = !env || !v.capabilities.stop || status === "stopped" || status === "gone";
    ui.sandboxDelete.disabled = !env || !v.capabilities.delete;
  }

  async function refresh() {
    try {
      draw(await api.environment());
    } catch (err) {
      ui.sandboxFacts.replaceChildren(
        el("dt", { text: "Status" }),
        el("dd", { text: `could not be read (${err instanceof Error ? err.message : String(err)})` }),
      );
    }
  }

  /** @param {"stop" | "delete" | "account" | null} action */
  function ask(action) {
    asking = action;
    ui.sandboxConfirm.hidden = action === null;
    if (!action) return;
    ui.sandboxQuestion.textContent = ACTIONS[action].question;
    ui.sandboxYes.textContent = ACTIONS[action].confirm;
    ui.sandboxYes.focus();
  }

  async function confirm() {
    const action = asking;
    if (!action) return;
    ask(null);
    if (action === "account") return deleteAccount();
    try {
      if (action === "stop") await api.stopEnvironment();
      else await api.deleteEnvironment();
      screen.announce(ACTIONS[action].done);
    } catch (err) {
      screen.showBanner(`Could not ${action} the sandbox: ${err instanceof Error ? err.message : String(err)}`);
    }
    await refresh();
  }

  /** Deletes the account; once it began, nothing of it is readable, so the page signs out (a deletion cut short finishes by itself). */
  async function deleteAccount() {
    try {
      const { status } = await api.deleteAccount();
      set(false);
      signOut(
        status === 200
          ? ACTIONS.account.done
          : "Your account is being deleted: nothing of it can be read any more, and the deletion finishes by itself.",
      );
    } catch (err) {
      screen.showBanner(`Could not delete your account: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** @param {boolean} open */
  function set(open) {
    ui.sandboxPanel.hidden = !open;
    ui.sandboxButton.setAttribute("aria-expanded", String(open));
    if (open) refresh();
    else ask(null);
  }

  ui.sandboxClose.addEventListener("click", () => {
    set(false);
    ui.sandboxButton.focus();
  });
  ui.sandboxStop.addEventListener("click", () => ask("stop"));
  ui.sandboxDelete.addEventListener("click", () => ask("delete"));
  ui.accountDelete.addEventListener("click", () => ask("account"));
  ui.sandboxYes.addEventListener("click", () => confirm());
  ui.sandboxNo.addEventListener("click", () => ask(null));

  return { refresh, toggle: () => set(ui.sandboxPanel.hidden) };
}
