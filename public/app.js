// @ts-check
/**
 * The reference chat client of the agent chat gateway: the wiring. It finds the page's elements,
 * makes the store (lib/store.js: the page's state over the reducer, lib/reducer.js) and the
 * controllers (controllers/: each one job — signing in, opening a conversation, the stream,
 * sending, answering, the sidebar, the keyboard, what the screen shows), and hands each the
 * others' functions it needs. Controllers turn what happens into actions for the store and redraw
 * from its state. Only this module imports a controller, so splitting them out added no level
 * to the page's imports (each level is one more round trip before the page runs).
 *
 * Embedding: define window.AGENT_GATEWAY = { getToken: async () => "<user token>", baseUrl: "" }
 * before this module loads, and the page signs in with that token instead of asking.
 */
import { createAsks } from "./controllers/asks.js";
import { createBranches } from "./controllers/branches.js";
import { createComposer } from "./controllers/composer.js";
import { createConversations } from "./controllers/conversations.js";
import { listenForKeys } from "./controllers/keyboard.js";
import { createNotifier } from "./controllers/notify.js";
import { createQueued } from "./controllers/queued.js";
import { createScreen } from "./controllers/screen.js";
import { createSession } from "./controllers/session.js";
import { createSidebar } from "./controllers/sidebar.js";
import { createStreamController } from "./controllers/stream.js";
import { createThemeControl } from "./controllers/theme.js";
import { createApi } from "./lib/api.js";
import { changedFiles } from "./lib/changes.js";
import { activeTurn } from "./lib/conversation.js";
import { takeEarly } from "./lib/early.js";
import { timeText } from "./lib/format.js";
import { panelStore, watchOtherTabs } from "./lib/storage.js";
import { createStore } from "./lib/store.js";
import { createChangesView, fenced } from "./views/changes.js";
import { el, timeElement } from "./views/dom.js";
import { createTranscriptView } from "./views/transcript.js";

const config = window.AGENT_GATEWAY ?? {};

/** @template {HTMLElement} T @param {string} id @returns {T} */
const $ = (id) => /** @type {T} */ (document.getElementById(id));
const ui = {
  signin: $("signin"),
  devLogin: /** @type {HTMLFormElement} */ ($("dev-login")),
  devUser: /** @type {HTMLInputElement} */ ($("dev-user")),
  tokenLogin: /** @type {HTMLFormElement} */ ($("token-login")),
  userToken: /** @type {HTMLTextAreaElement} */ ($("user-token")),
  signinError: $("signin-error"),
  app: $("app"),
  toggleSidebar: $("toggle-sidebar"),
  connection: $("connection"),
  who: $("who"),
  signOut: $("sign-out"),
  sidebar: $("sidebar"),
  scrim: $("scrim"),
  newConversation: $("new-conversation"),
  conversationList: $("conversation-list"),
  conversationSearch: /** @type {HTMLInputElement} */ ($("conversation-search")),
  searchStatus: $("search-status"),
  themeChoice: $("theme-choice"),
  shortcuts: /** @type {HTMLDialogElement} */ ($("shortcuts")),
  shortcutList: $("shortcut-list"),
  shortcutsClose: $("shortcuts-close"),
  shortcutsButton: $("shortcuts-button"),
  title: $("conversation-title"),
  usageTotal: $("usage-total"),
  banner: $("banner"),
  bannerText: $("banner-text"),
  bannerClose: $("banner-close"),
  transcript: $("transcript"),
  queued: $("queued"),
  queuedList: $("queued-list"),
  empty: $("empty"),
  examples: $("examples"),
  jump: /** @type {HTMLButtonElement} */ ($("jump-latest")),
  composer: /** @type {HTMLFormElement} */ ($("composer")),
  input: /** @type {HTMLTextAreaElement} */ ($("composer-input")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  composerStatus: $("composer-status"),
  agentPicker: $("agent-picker"),
  agentBackendField: $("agent-backend-field"),
  agentBackend: /** @type {HTMLSelectElement} */ ($("agent-backend")),
  agentModelField: $("agent-model-field"),
  agentModel: /** @type {HTMLSelectElement} */ ($("agent-model")),
  agentKeyField: $("agent-key-field"),
  agentKey: /** @type {HTMLSelectElement} */ ($("agent-key")),
  agentTools: /** @type {HTMLFieldSetElement} */ ($("agent-tools")),
  agentToolsList: $("agent-tools-list"),
  agentNote: $("agent-note"),
  settingsButton: $("settings-button"),
  settings: /** @type {HTMLDialogElement} */ ($("settings")),
  sandboxButton: $("sandbox-button"),
  sandboxPanel: $("sandbox-panel"),
  sandboxFacts: $("sandbox-facts"),
  sandboxNote: $("sandbox-note"),
  sandboxStop: /** @type {HTMLButtonElement} */ ($("sandbox-stop")),
  sandboxDelete: /** @type {HTMLButtonElement} */ ($("sandbox-delete")),
  sandboxConfirm: $("sandbox-confirm"),
  sandboxQuestion: $("sandbox-question"),
  sandboxYes: /** @type {HTMLButtonElement} */ ($("sandbox-yes")),
  sandboxNo: /** @type {HTMLButtonElement} */ ($("sandbox-no")),
  sandboxClose: $("sandbox-close"),
  accountDelete: /** @type {HTMLButtonElement} */ ($("account-delete")),
  announcer: $("announcer"),
  notifyToggle: /** @type {HTMLInputElement} */ ($("notify-toggle")),
  notifyStatus: $("notify-status"),
  workspaceButton: $("workspace-button"),
  interactiveNote: $("interactive-note"),
  workspace: $("workspace"),
  attach: $("attach"),
};
const narrow = matchMedia("(max-width: 720px)");

// Controllers call one another only through the functions handed to them here; an arrow stands
// for a controller made further down (each is called only once the page runs).
const store = createStore();
const api = createApi({
  baseUrl: config.baseUrl ?? "",
  token: () => session.token(),
  onUnauthorized: () => session.signOut("Your session ended. Please sign in again."),
  early: takeEarly,
});
const transcript = createTranscriptView({
  list: ui.transcript,
  jump: ui.jump,
  handlers: {
    resend: (turnId) => composer.handlers.resend(turnId),
    rerun: (turnId) => composer.handlers.rerun(turnId),
    edit: (turnId) => composer.handlers.edit(turnId),
    sendEdited: (turnId, message) => branches.edit(turnId, message),
    regenerate: (turnId) => branches.regenerate(turnId),
    pick: (turnId, delta) => branches.pick(turnId, delta),
    answer: (ask, outcome, data, choice) => asks.answer(ask, outcome, data, choice),
  },
  copy: (text, button) => screen.copy(text, button),
  siblings: (turnId) => branches.siblingsOf(turnId),
});
const screen = createScreen({ store, transcript, ui, connection: () => stream.status() });
const stream = createStreamController({
  api,
  store,
  ui,
  onReset: () => conversations.reload(),
  onChange: () => screen.schedule(),
});
// The agent picker and the settings view are loaded when first needed (the picker once the
// conversation is open, the settings at their first opening): nothing of them is on the way to
// "live" (docs/chat-page.md "Fast on slow links"). Neither imports a module of this bundle: the
// page's DOM helpers are handed to them, so loading one is one request.
/** @type {import("./controllers/agent-picker.js").AgentPicker | null} */
let picker = null;
/** @type {Promise<import("./controllers/agent-picker.js").AgentPicker> | null} */
let pickerLoading = null;
const loadPicker = () => {
  pickerLoading ??= import("./controllers/agent-picker.js").then(({ createAgentPicker }) => {
    picker = createAgentPicker({ api, store, ui, el });
    return picker;
  });
  pickerLoading.catch(() => (pickerLoading = null));
  return pickerLoading;
};
const agentPicker = {
  prefetch: () => loadPicker().then((p) => p.prefetch()),
  draw: () => picker?.draw(),
  settingsChanged: () => picker?.settingsChanged() ?? Promise.resolve(),
  /** Nothing until the picker is loaded: the turn runs on the conversation's agent; with the files attached. @returns {import("./lib/agents.js").TurnAgentFields} */
  forTurn: () => ({ ...picker?.forTurn(), ...attachments?.forTurn() }),
  /** @param {string} cid */
  accepted: (cid) => {
    picker?.accepted(cid);
    attachments?.accepted(cid);
  },
};
ui.input.addEventListener("focus", () => void whenLive().then(() => agentPicker.prefetch().catch(() => {})));
/** Resolves once the connection says live (at once if it does). */
const whenLive = () =>
  new Promise((resolve) => {
    const live = () => ui.connection.dataset.state === "live";
    if (live()) return resolve(undefined);
    const watch = new MutationObserver(() => {
      if (!live()) return;
      watch.disconnect();
      resolve(undefined);
    });
    watch.observe(ui.connection, { attributes: true, attributeFilter: ["data-state"] });
  });
/** The conversation list fetched again; the picker follows it (a new conversation's agent is in its entry). */
const refreshList = () => sidebar.refresh().then(agentPicker.draw);
const sidebar = createSidebar({
  api,
  store,
  ui,
  narrow,
  open: (cid) => conversations.open(cid),
  openNew: () => conversations.openNew(),
  screen,
});
const conversations = createConversations({
  api,
  store,
  ui,
  narrow,
  connect: stream.connect,
  closeStream: stream.close,
  refreshList,
  drawList: sidebar.draw,
  closeSidebar: sidebar.close,
  follow: () => transcript.follow(),
  screen,
});
const composer = createComposer({
  api,
  store,
  ui,
  narrow,
  refreshList,
  queue: (message, agent) => queued.add(message, agent),
  agent: agentPicker,
  follow: () => transcript.follow(),
  screen,
});
const queued = createQueued({ api, store, ui, sent: () => composer.sent(), accepted: agentPicker.accepted, screen });
const asks = createAsks({ api, store });
// The sandbox panel: a chunk of its own, loaded at its first opening (the sidebar's Sandbox button).
/** @type {Promise<{ toggle: () => void }> | null} */
let sandbox = null;
ui.sandboxButton.addEventListener("click", () => {
  sandbox ??= import("./controllers/sandbox.js").then(({ createSandbox }) =>
    createSandbox({ api, ui, screen, signOut: (message) => session.signOut(message), el }),
  );
  sandbox.catch(() => (sandbox = null));
  sandbox.then((s) => s.toggle());
});
// The settings view is loaded at its first opening: nothing of it is on the way to "live".
/** @type {Promise<{ open(): void }> | null} */
let settingsView = null;
ui.settingsButton.addEventListener("click", async () => {
  settingsView ??= import("./controllers/settings.js").then(({ createSettings }) =>
    createSettings({ api, ui, changed: () => agentPicker.settingsChanged(), dom: { el, timeElement, timeText } }),
  );
  settingsView.catch(() => (settingsView = null));
  (await settingsView).open();
});
// The workspace panel (its first opening, or once live if it was open when the page was last left) and the
// composer's attachments (the first file attached, pasted or dropped): chunks of their own, handed the page's helpers.
/** @type {Promise<import("./controllers/workspace.js").Workspace> | null} */
let workspace = null;
const loadWorkspace = () => {
  workspace ??= import("./controllers/workspace.js").then(({ createWorkspace }) =>
    createWorkspace({
      api,
      store,
      ui,
      dom: { el, fenced, changedFiles, createChangesView, activeTurn },
      remember: panelStore.set,
    }),
  );
  workspace.catch(() => (workspace = null));
  return workspace;
};
ui.workspaceButton.addEventListener("click", () => loadWorkspace().then((w) => w.toggle()));
// Interactive mode (the banner while the agent's terminal UI has the conversation): its terminal, or the session back.
$("interactive-open").addEventListener("click", () => loadWorkspace().then((w) => w.openAgent()));
$("interactive-release").addEventListener("click", () =>
  api
    .request(`/v1/conversations/${encodeURIComponent(store.conv.cid)}/interactive`, { method: "DELETE" })
    .catch((err) => screen.showBanner(err.message)),
);
/** @type {import("./controllers/attachments.js").Attachments | null} */
let attachments = null;
/** @type {Promise<import("./controllers/attachments.js").Attachments> | null} */
let attachLoading = null;
/** @param {FileList | File[] | undefined} files */
const attach = (files) => {
  attachLoading ??= import("./controllers/attachments.js").then(({ createAttachments }) => {
    attachments = createAttachments({ api, store, ui, el });
    return attachments;
  });
  attachLoading.catch(() => (attachLoading = null));
  return attachLoading.then((a) => a.add([...(files ?? [])]));
};
// No file yet: the chunk opens the file chooser.
ui.attach.addEventListener("click", () => attach([]));
for (const type of /** @type {const} */ (["paste", "drop"]))
  ui.composer.addEventListener(type, (event) => {
    const files = (
      event instanceof ClipboardEvent ? event.clipboardData : /** @type {DragEvent} */ (event).dataTransfer
    )?.files;
    if (!files?.length) return;
    event.preventDefault();
    attach(files);
  });
ui.composer.addEventListener(
  "dragover",
  (event) => event.dataTransfer?.types.includes("Files") && event.preventDefault(),
);
const branches = createBranches({
  api,
  store,
  ui,
  reload: () => conversations.reload(),
  follow: () => transcript.follow(),
  screen,
  focusPicker: transcript.focusPicker,
});
const notifier = createNotifier({ ui });
const session = createSession({
  api,
  config,
  store,
  ui,
  showExamples: composer.showExamples,
  // The picker is loaded and the agents read once the conversation is live: the page is live without them.
  enter: () =>
    conversations.enter().then((entered) => {
      whenLive().then(() => {
        agentPicker.prefetch().catch(() => {});
        if (panelStore.open()) loadWorkspace().then((w) => w.restoreOpen());
      });
      return entered;
    }),
  closeStream: stream.close,
  updateTitle: screen.updateTitle,
});
listenForKeys({
  store,
  ui,
  sidebar,
  narrow,
  openNew: () => conversations.openNew(),
  stopEditing: () => composer.handlers.edit(null),
  stop: composer.stop,
});
createThemeControl({ ui });

// What a change of the open conversation sets off, in this order.
store.subscribe((before, after, action) => {
  if (action.type === "event") screen.announceChanges(before, after);
  branches.changed(action);
  if (action.type === "event") notifier.changed(before, after);
  composer.stopIfNowRunning();
  if (action.type === "event" && /^turn\./.test(action.event.type)) refreshList();
  screen.updateTitle();
  screen.schedule();
});

watchOtherTabs({
  signedOut: session.signedOutElsewhere,
  signedIn: session.signedInElsewhere,
  deleted: conversations.deletedElsewhere,
  renamed: () => sidebar.refresh(),
  answered: asks.answeredElsewhere,
});

session.start();
