// @ts-check
/**
 * The workspace panel beside the chat (docs/chat-page.md "The workspace panel"), loaded at its first
 * opening (app.js; it imports no module of the page's bundle: the page's helpers are handed to it):
 * the agent's files as a tree (views/workspace-tree.js), a file shown highlighted (or "binary, N
 * bytes"), Download of a file and of the whole workspace, a turn's changes as the workspace says
 * them (or, where only its tool calls can say, as they say, labelled so), and Undo / Redo of a
 * turn's file changes (docs/api.md "A turn's changes, undo and redo"). On a phone it is a drawer
 * over the chat that keeps the focus while open. Nothing is offered that the environment cannot
 * do: without workspace files (501) the tree is not shown, and a turn without a created checkpoint
 * offers no Undo.
 */
import { fileNameOf, langOf, readBounded, restoreOffer, sizeText } from "../lib/workspace.js";
import { changesView } from "../views/workspace-changes.js";
import { adoptStyle } from "../views/workspace-style.js";
import { createTabs } from "../views/workspace-tabs.js";
import { createTree } from "../views/workspace-tree.js";
import { createTerminalTab } from "./workspace-terminal.js";

/** @typedef {import("../lib/conversation.js").Turn} Turn */
/** @typedef {import("../lib/wire").CheckpointView} CheckpointView */

const FILES = "/v1/environment/files";
/** Which tab the panel shows, in this tab's session (the terminal's own: controllers/terminal.js). */
const TAB_KEY = "gw:ws-tab";
const enc = encodeURIComponent;
/** @param {unknown} err */
const why = (err) => (err instanceof Error ? err.message : String(err));
/** @param {unknown} err */
const codeOf = (err) => /** @type {{ code?: string }} */ (err)?.code;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { app: HTMLElement, workspace: HTMLElement, workspaceButton: HTMLElement },
 *   dom: {
 *     el: typeof import("../views/dom.js").el,
 *     fenced: typeof import("../views/changes.js").fenced,
 *     changedFiles: typeof import("../lib/changes.js").changedFiles,
 *     createChangesView: typeof import("../views/changes.js").createChangesView,
 *     activeTurn: typeof import("../lib/conversation.js").activeTurn,
 *   },
 *   remember: (open: boolean) => void,
 * }} deps  `dom.fenced`: the page's one code-block renderer (sanitized, highlighted); `dom.changedFiles` and
 *   `dom.createChangesView`: the transcript's view of a turn's changed files from its tool calls (lib/changes.js);
 *   `remember`: the panel's open state kept in this browser
 */
export function createWorkspace({ api, store, ui, dom, remember }) {
  const { el, fenced } = dom;
  /** A turn is being sent or runs. */
  const busy = () => dom.activeTurn(store.conv) !== null;
  /** A turn's changed files as its tool calls say them (the transcript's view); null when they changed none. @param {Turn} turn */
  const toolChanges = (turn) => {
    const files = dom.changedFiles(turn.blocks);
    const view = dom.createChangesView();
    view.update(files);
    return files.length ? view.node : null;
  };
  adoptStyle();
  const phone = matchMedia("(max-width: 600px)");
  const panel = ui.workspace;

  const note = el("p", { class: "hint ws-note", hidden: true });
  const status = el("p", { class: "ws-status", role: "status" });
  const tree = createTree({ el, list, open: (entry) => show(entry.path), failed: (err) => say(status, why(err)) });
  const empty = el("p", { class: "hint", text: "The workspace is empty.", hidden: true });
  const downloadAll = el("button", { type: "button", text: "Download all", onclick: () => download(null) });
  const close = el("button", {
    type: "button",
    class: "icon-button",
    "aria-label": "Close the workspace panel",
    text: "✕",
    onclick: () => setOpen(false),
  });
  const filesSection = el(
    "section",
    { class: "ws-section", "aria-labelledby": "ws-files-title" },
    el("h3", { id: "ws-files-title", text: "Files" }),
    tree.node,
    empty,
  );
  const fileTitle = el("h3", { id: "ws-file-title", class: "ws-file-title", text: "No file open" });
  const fileDownload = el("button", { type: "button", text: "Download", hidden: true });
  const fileBody = el("div", { class: "ws-file-body" });
  const viewer = el(
    "section",
    { class: "ws-section", "aria-labelledby": "ws-file-title" },
    el("div", { class: "ws-file-head" }, fileTitle, fileDownload),
    fileBody,
  );
  const turnPick = el("select", { id: "ws-turn", onchange: () => pickTurn(turnPick.value, true) });
  const diff = el("div", { class: "ws-diff" });
  const undo = el("button", { type: "button", text: "Undo this turn's file changes", onclick: () => restore("undo") });
  const redo = el("button", { type: "button", text: "Redo", onclick: () => restore("redo") });
  const retry = el("button", { type: "button", text: "Try again", hidden: true, onclick: () => restore(null) });
  const undoNote = el("p", { class: "hint ws-undo-note" });
  const result = el("p", { class: "ws-result", role: "status", "aria-live": "polite" });
  const changes = el(
    "section",
    { class: "ws-section", "aria-labelledby": "ws-changes-title" },
    el("h3", { id: "ws-changes-title", text: "A turn's changes" }),
    el("label", { for: "ws-turn", class: "ws-turn-label" }, "Turn ", turnPick),
    diff,
    el("div", { class: "ws-actions" }, undo, redo, retry),
    undoNote,
    result,
  );
  // Two tabs: the files (and a turn's changes), and the terminal (its chunk loaded when first shown).
  const filesPanel = el(
    "div",
    { id: "ws-files-panel", class: "ws-tab-panel" },
    note,
    status,
    filesSection,
    viewer,
    changes,
  );
  const termPanel = el("div", { id: "ws-term-panel", class: "ws-tab-panel term-panel", hidden: true });
  const FILES_TAB = "ws-tab-files";
  const TERMINAL_TAB = "ws-tab-terminal";
  const tabs = createTabs({
    el,
    label: "Workspace",
    tabs: [
      { id: FILES_TAB, text: "Files", panel: filesPanel },
      { id: TERMINAL_TAB, text: "Terminal", panel: termPanel },
    ],
    picked: (id) => {
      openOn = id;
      const onTerminal = id === TERMINAL_TAB;
      downloadAll.hidden = onTerminal || !hasFiles;
      if (onTerminal) sessionStorage.setItem(TAB_KEY, "terminal");
      else sessionStorage.removeItem(TAB_KEY);
      if (onTerminal && open) terminal.show();
    },
  });
  const termTab = tabs.tab(TERMINAL_TAB);
  const terminal = createTerminalTab({
    api,
    el,
    store,
    tab: termTab,
    panel: termPanel,
    sent: () => sentTurns().length > 0,
    hide: () => tabs.pick(FILES_TAB),
  });
  /** The tab the panel opens on: the one shown when this browser tab last left it (a reload shows the terminal again). */
  let openOn = sessionStorage.getItem(TAB_KEY) === "terminal" ? TERMINAL_TAB : FILES_TAB;
  panel.replaceChildren(
    el("div", { class: "ws-head" }, el("h2", { id: "workspace-title", text: "Workspace" }), downloadAll, close),
    tabs.node,
    filesPanel,
    termPanel,
  );

  /** Says `text` (none: nothing); a live region stays shown, so what it is given next is announced. @param {HTMLElement} node @param {string} text */
  function say(node, text) {
    node.textContent = text;
    if (!node.hasAttribute("role")) node.hidden = !text;
  }

  // --- the files ---------------------------------------------------------------------------------

  /**
   * Whose files: the sandbox the open conversation's active branch runs on (a branch from an
   * earlier turn has one of its own), once the conversation has a turn; else the user's.
   */
  function whose() {
    return sentTurns().length > 0 ? `&conversation=${enc(store.conv.cid)}` : "";
  }

  /** @param {string} path @returns {Promise<import("../lib/wire").WorkspaceListing>} */
  async function list(path) {
    return (await api.request(`${FILES}?path=${enc(path)}${whose()}`)).data;
  }

  /** Whether the environment serves files; false once it said it has none (501) or there is no sandbox (404). */
  let hasFiles = true;

  /** Lists the files again (the root and every open folder), and the open file. */
  async function refreshFiles() {
    try {
      await tree.refresh();
      hasFiles = true;
      say(note, tree.truncated() ? "Some folders list only their first 1,000 entries." : "");
    } catch (err) {
      hasFiles = false;
      const code = codeOf(err);
      say(
        note,
        code === "capability_denied"
          ? "This environment has no workspace files to show."
          : code === "environment_not_found"
            ? "No sandbox yet: the agent's files show here once a turn has run."
            : `The files could not be read: ${why(err)}`,
      );
    }
    filesSection.hidden = !hasFiles;
    viewer.hidden = !hasFiles;
    downloadAll.hidden = !hasFiles || tabs.current() === TERMINAL_TAB;
    empty.hidden = !hasFiles || !tree.empty();
    if (shown) await show(shown, false);
  }

  /** The file in the viewer. @type {string | null} */
  let shown = null;

  /** Shows a file. @param {string} path @param {boolean} [announce] the title says it is loading */
  async function show(path, announce = true) {
    shown = path;
    tree.select(path);
    fileTitle.textContent = path;
    fileDownload.hidden = false;
    fileDownload.onclick = () => download(path);
    if (announce) fileBody.replaceChildren(el("p", { class: "hint", text: "Loading…" }));
    try {
      /** @type {import("../lib/wire").FileContent} */
      const file = (await api.request(`${FILES}/content?path=${enc(path)}${whose()}`)).data;
      if (shown !== path) return;
      fileBody.replaceChildren(
        file.binary
          ? el("p", { class: "ws-binary", text: `binary, ${sizeText(file.size)}` })
          : fenced(file.content, langOf(path, file.content.length)),
        file.truncated ? el("p", { class: "hint", text: "Only its start: it grew while it was read." }) : "",
      );
    } catch (err) {
      if (shown !== path) return;
      const code = codeOf(err);
      if (code === "file_not_found") {
        fileDownload.hidden = true;
        tree.select(null);
      }
      fileBody.replaceChildren(
        el("p", {
          class: "hint",
          text:
            code === "file_not_found"
              ? `${path} is no longer in the workspace.`
              : code === "file_too_large"
                ? `Too large to show here (${sizeText(/** @type {any} */ (err).body?.error?.details?.size)}): download it instead.`
                : `It could not be read: ${why(err)}`,
        }),
      );
    }
  }

  /**
   * Downloads a file (or, with null, the whole workspace as a tarball): the route needs the user's
   * token, so its answer is read here, within a bound, and saved from a temporary object URL.
   * @param {string | null} path
   */
  async function download(path) {
    const label = path ?? "the workspace";
    say(status, `Downloading ${label}…`);
    try {
      const token = api.token();
      const query = `${path ? `path=${enc(path)}` : ""}${whose()}`.replace(/^&/, "");
      const res = await fetch(`${api.baseUrl}${FILES}/download${query ? `?${query}` : ""}`, {
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      if (!res.ok) throw new Error((await res.json().catch(() => null))?.error?.message ?? `HTTP ${res.status}`);
      const blob = await readBounded(res);
      const url = URL.createObjectURL(blob);
      const link = el("a", { href: url, download: fileNameOf(res, "download"), hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      say(status, `Downloaded ${label} (${sizeText(blob.size)}).`);
    } catch (err) {
      say(status, `The download of ${label} failed: ${why(err)}`);
    }
  }

  // --- a turn's changes, undo and redo -----------------------------------------------------------

  /** The turn shown; `following`: the newest, until one is picked. @type {string | null} */
  let turnId = null;
  let following = true;
  /** Each turn's checkpoint as GET …/turns/:turnId said it, by conversation and turn. @type {Map<string, CheckpointView>} */
  const checkpoints = new Map();
  /** Those being read, and those to read again (shown as they were meanwhile). */
  const reading = new Set();
  const stale = new Set();
  /** The undo or redo whose outcome is unknown: tried again with its operation id. @type {{ turnId: string, direction: "undo" | "redo", operationId: string } | null} */
  let pending = null;
  let restoring = false;

  const turns = () => store.conv.order.map((id) => /** @type {Turn} */ (store.conv.turns[id]));
  /** The turns that reached the server, oldest first. */
  const sentTurns = () => turns().filter((t) => t.status !== "sending" && t.status !== "unsent");

  /** What the turn list and the changes were drawn from: drawn again only when it changed (not at each text delta). */
  let drawnList = "";
  let drawnChanges = "\0";

  function drawTurns() {
    if (store.conv.cid !== cid) {
      // Another conversation: its newest turn, and nothing said of the last one's.
      cid = store.conv.cid;
      following = true;
      pending = null;
      say(result, "");
      // Its files: the sandbox its active branch runs on.
      if (open) refreshSoon();
    }
    const sent = sentTurns();
    if (following || !sent.some((t) => t.turnId === turnId)) turnId = sent.at(-1)?.turnId ?? null;
    const listKey = `${store.conv.cid}|${turnId}|${sent.map((t) => `${t.turnId}:${t.userText.length}`).join()}`;
    if (listKey !== drawnList) {
      drawnList = listKey;
      turnPick.replaceChildren(
        ...sent.map((t, i) =>
          el("option", {
            value: t.turnId,
            selected: t.turnId === turnId,
            text: `${i + 1}. ${t.userText.slice(0, 48)}`,
          }),
        ),
      );
      turnPick.disabled = sent.length === 0;
    }
    drawChanges(false);
  }

  /** @param {string} id @param {boolean} picked */
  function pickTurn(id, picked) {
    turnId = id;
    following = !picked || id === sentTurns().at(-1)?.turnId;
    say(result, "");
    drawChanges();
  }

  /** The turn's latest undo or redo (its `restore:` lines). @param {Turn} turn @returns {"undo" | "redo" | null} */
  const lastRestore = (turn) => {
    const block = turn.blocks.findLast((b) => b.key.startsWith("restore:"));
    return block ? /** @type {"undo" | "redo"} */ (block.id) : null;
  };

  function drawChanges(force = true) {
    const turn = turnId ? store.conv.turns[turnId] : undefined;
    const checkpoint = checkpoints.get(`${store.conv.cid}/${turnId}`);
    const key = turn
      ? [
          turnId,
          turn.status,
          !!turn.workspace,
          lastRestore(turn),
          busy(),
          restoring,
          pending?.turnId,
          checkpoint?.status,
          stale.has(`${store.conv.cid}/${turnId}`),
        ].join("|")
      : "";
    if (!force && key === drawnChanges) return;
    drawnChanges = key;
    if (!turn) {
      diff.replaceChildren(el("p", { class: "hint", text: "No turn yet: what a turn changes shows here." }));
      undo.hidden = redo.hidden = true;
      say(undoNote, "");
      return;
    }
    const active = busy() && turnId === sentTurns().at(-1)?.turnId;
    diff.replaceChildren(...changesView({ el, fenced }, turn.workspace, active ? null : () => toolChanges(turn)));
    drawRestore(turn);
  }

  /** @param {Turn} turn */
  function drawRestore(turn) {
    const key = `${store.conv.cid}/${turn.turnId}`;
    const known = checkpoints.get(key);
    if ((known === undefined || stale.has(key)) && !reading.has(key) && !busy()) readCheckpoint(key, turn.turnId);
    const offer = restoreOffer({ checkpoint: known ?? null, last: lastRestore(turn), busy: busy() || restoring });
    const can = known?.status === "created";
    undo.hidden = !can;
    redo.hidden = !can;
    undo.disabled = !offer.undo;
    redo.disabled = !offer.redo;
    retry.hidden = pending?.turnId !== turn.turnId;
    say(undoNote, busy() && known === undefined ? "Undo and Redo wait until the running turn ends." : offer.note);
  }

  /** @param {string} key @param {string} id */
  async function readCheckpoint(key, id) {
    reading.add(key);
    stale.delete(key);
    try {
      const view = (await api.request(`/v1/conversations/${enc(store.conv.cid)}/turns/${enc(id)}`)).data;
      checkpoints.set(key, view.checkpoint ?? { status: "none" });
    } catch (err) {
      checkpoints.set(key, {
        status: "unknown",
        message: `whether it has a checkpoint could not be read (${why(err)})`,
      });
    }
    reading.delete(key);
    if (turnId === id) drawChanges();
  }

  /**
   * Undoes or redoes the shown turn's file changes under a fresh operation id; `null`: the last one
   * again, with its operation id (its outcome was unknown: the gateway makes the two one restore).
   * @param {"undo" | "redo" | null} direction
   */
  async function restore(direction) {
    if (restoring || busy()) return;
    const op =
      direction === null
        ? pending
        : { turnId: /** @type {string} */ (turnId), direction, operationId: crypto.randomUUID() };
    if (!op) return;
    pending = null;
    restoring = true;
    const cid = store.conv.cid;
    say(result, op.direction === "undo" ? "Undoing this turn's file changes…" : "Redoing this turn's file changes…");
    drawChanges();
    try {
      await api.request(`/v1/conversations/${enc(cid)}/turns/${enc(op.turnId)}/${op.direction}`, {
        method: "POST",
        body: { operationId: op.operationId },
      });
      say(
        result,
        op.direction === "undo"
          ? "Undone: the files are as they were before this turn."
          : "Redone: this turn's file changes are back.",
      );
      await refreshFiles();
    } catch (err) {
      if (codeOf(err) === "outcome_unknown" || /** @type {any} */ (err)?.status === 0) {
        pending = op;
        say(result, `Whether it was done is not known (${why(err)}). Try again: it is done once.`);
      } else say(result, `Not done: ${why(err)}`);
    } finally {
      restoring = false;
      if (store.conv.cid === cid) drawChanges();
    }
  }

  // --- open, close, follow the conversation ------------------------------------------------------

  let open = false;
  /** @type {HTMLElement | null} */
  let returnFocus = null;

  /** Whether the panel is a drawer over the chat (a phone, while open). */
  function drawer() {
    const on = open && phone.matches;
    if (on) {
      panel.setAttribute("role", "dialog");
      panel.setAttribute("aria-modal", "true");
    } else {
      panel.removeAttribute("role");
      panel.removeAttribute("aria-modal");
    }
    return on;
  }
  phone.addEventListener("change", drawer);

  /** @param {boolean} next @param {{ focus?: boolean }} [options] */
  function setOpen(next, { focus = true } = {}) {
    if (next === open) return;
    open = next;
    panel.hidden = !open;
    ui.app.classList.toggle("ws-open", open);
    ui.workspaceButton.setAttribute("aria-expanded", String(open));
    remember(open);
    const isDrawer = drawer();
    if (open) {
      returnFocus = /** @type {HTMLElement | null} */ (document.activeElement);
      // What changed while it was closed is not known: each turn's checkpoint is read again when shown.
      for (const key of checkpoints.keys()) stale.add(key);
      drawTurns();
      const listed = refreshFiles();
      terminal.probe();
      tabs.pick(openOn);
      if (focus) {
        if (isDrawer) close.focus();
        else if (tabs.current() === TERMINAL_TAB) termTab.focus();
        else listed.then(() => (hasFiles && !tree.empty() ? tree.focus() : close.focus()));
      }
    } else if (panel.contains(document.activeElement) || document.activeElement === document.body) {
      (returnFocus?.isConnected ? returnFocus : ui.workspaceButton).focus();
    }
  }

  // A drawer keeps the focus: Tab from its last control goes to its first, and back. Escape in the
  // panel closes it, on a phone or not, and never reaches the page's own Escape (Stop the turn).
  panel.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && open && !event.shiftKey) {
      event.preventDefault();
      setOpen(false);
      return;
    }
    if (event.key !== "Tab" || !(open && phone.matches)) return;
    const focusable = /** @type {HTMLElement[]} */ (
      [...panel.querySelectorAll("button, select, textarea, [tabindex='0'], a[href], pre[tabindex]")].filter(
        (n) =>
          !(/** @type {HTMLElement} */ (n).closest("[hidden]")) &&
          !(/** @type {HTMLButtonElement} */ (n).disabled) &&
          /** @type {HTMLElement} */ (n).tabIndex >= 0,
      )
    );
    const first = focusable[0];
    const last = focusable.at(-1);
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last?.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first?.focus();
    }
  });
  // Focus that leaves an open drawer (a click behind it) comes back.
  document.addEventListener("focusin", (event) => {
    if (open && phone.matches && !panel.contains(/** @type {Node} */ (event.target))) close.focus();
  });

  /** The conversation the panel shows; another one resets the file shown and the turn. */
  let cid = store.conv.cid;
  /** A refresh under way, and whether another was asked for meanwhile. @type {Promise<void> | null} */
  let refreshing = null;
  let again = false;
  function refreshSoon() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = refreshFiles().finally(() => {
      refreshing = null;
      if (again) {
        again = false;
        refreshSoon();
      }
    });
  }

  store.subscribe((_before, _after, action) => {
    terminal.changed();
    if (!open) return;
    // A branch switched: the files are the other branch's (its own sandbox, or the conversation's).
    if (action.type === "event" && action.event.type === "branch.switched") refreshSoon();
    if (action.type === "event" && /^(workspace\.|turn\.(completed|failed|cancelled))/.test(action.event.type)) {
      // A turn's checkpoint may be settled only once its changes are read: read again when next shown.
      stale.add(`${cid}/${action.event.turnId ?? action.event.data?.turnId}`);
      refreshSoon();
    }
    drawTurns();
  });

  return {
    /** Opens it, or closes it (the header's button). */
    toggle: () => setOpen(!open),
    /** Opens it without taking the focus (it was open when the page was last left). */
    restoreOpen: () => setOpen(true, { focus: false }),
    /** Opens its Terminal tab on the open conversation's agent's UI (interactive mode). */
    openAgent() {
      terminal.openAgent();
      if (open) tabs.pick(TERMINAL_TAB, true);
      else {
        openOn = TERMINAL_TAB;
        setOpen(true);
      }
    },
  };
}

/** @typedef {ReturnType<typeof createWorkspace>} Workspace */
