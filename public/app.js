// @ts-check
/**
 * The reference chat client of the agent chat gateway: the controller. It signs in, opens a
 * conversation (transcript, then the stream strictly after it), turns what happens (stream
 * events, sends, answers) into actions for the reducer (lib/reducer.js), and redraws from the
 * reducer's state (views/). Everything the agent sends is drawn as text or sanitized markdown.
 *
 * Embedding: define window.AGENT_GATEWAY = { getToken: async () => "<user token>", baseUrl: "" }
 * before this module loads, and the page signs in with that token instead of asking.
 */
import { ApiError, createApi } from "./lib/api.js";
import { ACK_PROBLEM, formatTokens, usageText } from "./lib/format.js";
import { activeTurn, emptyConversation, reduce } from "./lib/reducer.js";
import { announceDeleted, choiceStore, signInStore, unsentStore, watchOtherTabs } from "./lib/storage.js";
import { followStream } from "./lib/stream.js";
import { problemsByField } from "./views/ask.js";
import { el } from "./views/dom.js";
import { renderConversationList } from "./views/sidebar.js";
import { createTranscriptView } from "./views/transcript.js";

/** @typedef {import("./lib/reducer.js").Action} Action */
/** @typedef {import("./lib/reducer.js").ConversationState} ConversationState */
/** @typedef {import("./lib/stream.js").ConnectionState} ConnectionState */

const config = window.AGENT_GATEWAY ?? {};
const LIST_LIMIT = 100;
const APP_NAME = "Agent chat";
const SEND_RETRY_DELAY_MS = 800;

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
  newConversation: $("new-conversation"),
  conversationList: $("conversation-list"),
  title: $("conversation-title"),
  usageTotal: $("usage-total"),
  banner: $("banner"),
  bannerText: $("banner-text"),
  bannerClose: $("banner-close"),
  transcript: $("transcript"),
  empty: $("empty"),
  examples: $("examples"),
  jump: /** @type {HTMLButtonElement} */ ($("jump-latest")),
  composer: /** @type {HTMLFormElement} */ ($("composer")),
  input: /** @type {HTMLTextAreaElement} */ ($("composer-input")),
  send: /** @type {HTMLButtonElement} */ ($("send")),
  stop: /** @type {HTMLButtonElement} */ ($("stop")),
  announcer: $("announcer"),
};

const page = {
  /** @type {string | null} */ token: null,
  /** @type {string | null} */ user: null,
  provider: "",
  /** @type {import("./lib/api.js").ConversationEntry[]} */ conversations: [],
  /** Whether the list holds every conversation (a conversation missing from it is new). */
  listComplete: false,
  /** @type {ConversationState} */ conv: emptyConversation(""),
  /** @type {{ close: () => void } | null} */ stream: null,
  /** @type {string | null} */ editing: null,
  /** Bumps on every conversation switch: late answers of the last one check it. */
  generation: 0,
};

const api = createApi({ baseUrl: config.baseUrl ?? "", token: () => page.token, onUnauthorized: () => signOut("Your session ended. Please sign in again.") });
const uuid = () => crypto.randomUUID();
const newConversationId = () => `c-${uuid().slice(0, 18)}`;
const narrow = matchMedia("(max-width: 720px)");

// ------------------------------------------------------------------ state, drawing, announcing

/** @param {string} text */
function announce(text) {
  ui.announcer.textContent = "";
  setTimeout(() => (ui.announcer.textContent = text), 50);
}

/** A stop asked for while the message was still being sent: done once the turn runs. */
let stopWhenRunning = /** @type {string | null} */ (null);

/**
 * @param {Action} action
 */
function dispatch(action) {
  const before = page.conv;
  page.conv = reduce(before, action);
  if (page.conv === before) return;
  if (action.type === "event") announceChanges(before, page.conv);
  if (stopWhenRunning && page.conv.turns[stopWhenRunning]?.status === "running") stopTurn();
  if (action.type === "event" && /^turn\./.test(action.event.type)) refreshConversations();
  updateDocumentTitle();
  scheduleRender();
}

/** What a screen reader user should hear as it happens: answers, failures, asks. */
function announceChanges(/** @type {ConversationState} */ before, /** @type {ConversationState} */ after) {
  for (const id of after.order) {
    const now = after.turns[id];
    const was = before.turns[id];
    if (!now || was?.status === now.status) continue;
    if (now.status === "completed") {
      const text = now.blocks.flatMap((b) => (b.kind === "text" ? [b.text] : [])).join(" ");
      announce(`The agent answered: ${text.slice(0, 200)}`);
    } else if (now.status === "failed") announce("The turn failed.");
    else if (now.status === "cancelled") announce("The turn was cancelled.");
  }
  for (const ask of Object.values(after.asks)) {
    if (ask.status === "outstanding" && !before.asks[ask.id]) announce(`The agent is waiting for you: ${ask.request.title}`);
  }
}

/** Nothing can be sent: no conversation is open yet, it was deleted, or a turn is under way. */
const busy = () => !page.conv.cid || page.conv.deleted || activeTurn(page.conv) !== null;

function updateDocumentTitle() {
  const title = page.conv.title || "New conversation";
  const waiting = Object.values(page.conv.asks).some((a) => a.status === "outstanding");
  const active = activeTurn(page.conv);
  const prefix = waiting ? "Waiting for you · " : active ? "Working… · " : "";
  document.title = ui.app.hidden ? APP_NAME : `${prefix}${title} — ${APP_NAME}`;
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  // A frame when visible; a timer too, so a background tab still catches up.
  requestAnimationFrame(render);
  setTimeout(render, 100);
}

function render() {
  if (!renderQueued) return;
  renderQueued = false;
  const conv = page.conv;
  const active = activeTurn(conv);
  transcriptView.render(conv, { busy: busy(), editing: page.editing });
  ui.title.textContent = conv.title || "New conversation";
  ui.empty.hidden = !conv.cid || conv.order.length > 0;
  ui.stop.hidden = !active || active.status === "sending";
  ui.send.disabled = busy();
  const total = conv.usageTotal;
  const parts = [];
  if (total) parts.push(`Total: ${usageText(total, { floor: !total.complete })}`);
  if (conv.budget) {
    const b = conv.budget;
    parts.push(`Budget ${b.complete ? "" : "at least "}${formatTokens(b.used)} of ${formatTokens(b.tokens)} tokens${spendNote(b.provenance)}${b.exceeded ? " (reached)" : ""}`);
  }
  ui.usageTotal.textContent = parts.join(" · ");
  if (conv.budgetExceeded && ui.banner.dataset.kind !== "budget") {
    const stopped = conv.budgetExceeded;
    showBanner(`Token budget reached: the run was stopped (${stopped.scope ?? "conversation"} budget ${stopped.tokens ?? ""}${spendNote(stopped.provenance)}).`, "budget");
  }
}

/**
 * What a budget's spend is made of, when it is not all measured.
 * @param {import("./lib/reducer.js").Provenance | undefined} provenance
 */
function spendNote(provenance) {
  return provenance === "estimated" ? ", counting estimates" : provenance === "unknown" ? ", counting unverified figures" : "";
}

/** @param {string} text @param {string} [kind] */
function showBanner(text, kind = "notice") {
  ui.bannerText.textContent = text;
  ui.banner.dataset.kind = kind;
  ui.banner.hidden = false;
}

function hideBanner() {
  ui.banner.hidden = true;
  delete ui.banner.dataset.kind;
}

ui.bannerClose.addEventListener("click", () => {
  hideBanner();
  ui.input.focus();
});

/** @param {ConnectionState | "idle"} state */
function setConnection(state) {
  const label = { idle: "Idle", connecting: "Connecting", replaying: "Catching up", live: "Live", reconnecting: "Reconnecting" }[state];
  if (ui.connection.dataset.state === state) return;
  ui.connection.dataset.state = state;
  ui.connection.textContent = label;
}

// ------------------------------------------------------------------ sign in

async function start() {
  const health = await api.health().catch(() => null);
  page.provider = health?.provider ?? "";
  drawExamples();
  if (typeof config.getToken === "function") {
    page.token = await config.getToken().catch(() => null);
  }
  if (!page.token) {
    page.token = signInStore.token();
    page.user = signInStore.user();
  }
  if (page.token) return enterApp();
  ui.signin.hidden = false;
  const dev = health?.devLogin === true;
  (dev ? ui.devLogin : ui.tokenLogin).hidden = false;
  (dev ? ui.devUser : ui.userToken).focus();
}

ui.devLogin.addEventListener("submit", async (event) => {
  event.preventDefault();
  const user = ui.devUser.value.trim();
  try {
    const answer = await api.devLogin(user);
    signIn(answer.token, user);
  } catch (err) {
    showSigninError(err instanceof Error ? err.message : "Sign in failed");
  }
});

ui.tokenLogin.addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = ui.userToken.value.trim();
  const problem = await api.checkToken(token);
  if (problem) return showSigninError(problem);
  signIn(token, null);
});

/** @param {string} message */
function showSigninError(message) {
  ui.signinError.textContent = message;
  ui.signinError.hidden = false;
}

/** @param {string} token @param {string | null} user */
function signIn(token, user) {
  page.token = token;
  page.user = user;
  signInStore.save(token, user);
  ui.signinError.hidden = true;
  enterApp();
}

/** @param {string} [message] @param {{ here?: boolean }} [options] */
function signOut(message, { here = true } = {}) {
  closeStream();
  // Signing out here signs this browser out: every tab shares the sign-in.
  if (here) signInStore.forget();
  page.token = null;
  page.generation++;
  ui.app.hidden = true;
  ui.signin.hidden = false;
  updateDocumentTitle();
  if (message) showSigninError(message);
  start();
}

ui.signOut.addEventListener("click", () => signOut());

async function enterApp() {
  ui.signin.hidden = true;
  ui.app.hidden = false;
  ui.who.textContent = page.user ? `Signed in as ${page.user}` : "";
  await refreshConversations();
  const fromUrl = new URL(location.href).searchParams.get("c");
  await openConversation(fromUrl ?? newConversationId(), { push: false });
}

watchOtherTabs({
  signedOut: () => page.token && !config.getToken && signOut("You signed out in another tab.", { here: false }),
  signedIn: () => {
    if (page.token) return;
    page.token = signInStore.token();
    page.user = signInStore.user();
    if (page.token) enterApp();
  },
  deleted: (cid) => {
    if (cid === page.conv.cid) leaveDeleted();
    else refreshConversations();
  },
  answered: (interactionId, choice) => {
    const ask = page.conv.asks[interactionId];
    if (ask) dispatch({ type: "answered", interactionId, outcome: ask.outcome ?? "accepted", choice });
  },
});

// ------------------------------------------------------------------ conversations

let listRefresh = /** @type {Promise<void> | null} */ (null);
function refreshConversations() {
  listRefresh ??= (async () => {
    try {
      page.conversations = await api.conversations(LIST_LIMIT);
      page.listComplete = page.conversations.length < LIST_LIMIT;
    } catch {
      // keep what we had
    } finally {
      listRefresh = null;
    }
    drawConversationList();
  })();
  return listRefresh;
}

function drawConversationList() {
  // The open conversation as its stream has it: the list may not have caught up with a new ask yet.
  const active = activeTurn(page.conv);
  const entries = page.conversations.map((c) =>
    c.conversationId === page.conv.cid && active?.status === "running" ? { ...c, state: /** @type {const} */ ("running"), waitingFor: active.waitingFor } : c,
  );
  renderConversationList(ui.conversationList, entries, page.conv.cid, { open: (cid) => openConversation(cid), remove: deleteConversation });
}

ui.newConversation.addEventListener("click", () => openConversation(newConversationId()));

/** @param {import("./lib/api.js").ConversationEntry} entry */
async function deleteConversation(entry) {
  if (!confirm(`Delete “${entry.title}”? This removes it everywhere.`)) return;
  try {
    await api.remove(entry.conversationId);
  } catch (err) {
    return showBanner(`Could not delete: ${err instanceof Error ? err.message : String(err)}`);
  }
  announceDeleted(entry.conversationId);
  await refreshConversations();
  if (entry.conversationId === page.conv.cid) await openConversation(newConversationId());
  else ui.input.focus();
  announce(`Deleted “${entry.title}”.`);
}

/** The open conversation was deleted elsewhere: say so, and leave it for a new one. */
async function leaveDeleted() {
  const title = page.conv.title || "This conversation";
  dispatch({ type: "deleted" });
  page.conversations = page.conversations.filter((c) => c.conversationId !== page.conv.cid);
  await openConversation(newConversationId());
  showBanner(`“${title}” was deleted in another tab or on another device. This is a new conversation.`, "deleted");
  announce(`“${title}” was deleted elsewhere.`);
  refreshConversations();
}

function closeStream() {
  page.stream?.close();
  page.stream = null;
  setConnection("idle");
}

/**
 * Follows the open conversation's stream, strictly after the last event applied. A conversation
 * the server does not have yet is followed too: another tab may start it.
 * @param {{ exists?: boolean }} [options]
 */
function connect({ exists = true } = {}) {
  closeStream();
  const generation = page.generation;
  const cid = page.conv.cid;
  page.stream = followStream({
    api,
    cid,
    after: () => page.conv.lastSeq,
    onEvent: (event) => generation === page.generation && dispatch({ type: "event", event }),
    onReset: () => generation === page.generation && reload(),
    onState: (state) => generation === page.generation && setConnection(state),
    exists,
  });
}

/**
 * Rebuilds the open conversation from its transcript, then follows it; a conversation that is
 * gone (deleted elsewhere) is left.
 * @returns {Promise<void>}
 */
async function reload() {
  const generation = page.generation;
  const cid = page.conv.cid;
  const hadHistory = page.conv.lastSeq > 0 || page.conversations.some((c) => c.conversationId === cid);
  let transcript;
  let summary;
  try {
    transcript = await api.messages(cid);
    summary = await api.summary(cid);
  } catch (err) {
    if (generation !== page.generation) return;
    if (err instanceof ApiError && err.code === "conversation_not_found") {
      if (hadHistory) return void leaveDeleted();
      dispatch({ type: "loaded", transcript: { messages: [], lastEventId: 0 }, unsent: unsentStore.list(cid) });
      connect({ exists: false });
      return;
    }
    showBanner(`Could not load the conversation: ${err instanceof Error ? err.message : String(err)}`);
    setTimeout(() => generation === page.generation && reload(), 3000);
    return;
  }
  if (generation !== page.generation) return;
  // Messages this tab is still sending are not in the transcript yet: they stay on the page.
  const sending = Object.values(page.conv.turns).filter((turn) => turn.status === "sending");
  const askIds = [
    ...transcript.messages.flatMap((m) => (m.role === "assistant" ? m.parts.filter((p) => p.type === "interaction").map((p) => String(p.id)) : [])),
    ...(summary.interactions ?? []).map((/** @type {{ id: string }} */ i) => i.id),
  ];
  const waiting = summary.activeTurn ? { turnId: summary.activeTurn.turnId, waitingFor: summary.activeTurn.waitingFor ?? null } : null;
  dispatch({ type: "loaded", transcript, outstanding: summary.interactions, waiting, title: summary.title, unsent: unsentStore.list(cid), choices: choiceStore.read(askIds) });
  for (const turn of sending) {
    if (!page.conv.turns[turn.turnId]) dispatch({ type: "send", turnId: turn.turnId, message: turn.userText, at: turn.sentAt ?? new Date().toISOString() });
  }
  for (const turnId of page.conv.order) if (page.conv.turns[turnId]?.status !== "unsent") unsentStore.remove(cid, turnId);
  connect();
  loadUsage();
}

async function loadUsage() {
  const generation = page.generation;
  try {
    const usage = await api.usage(page.conv.cid);
    if (generation === page.generation) dispatch({ type: "usage", total: usage.total, budget: usage.budget, turns: usage.turns });
  } catch {
    // usage stays as the stream reports it
  }
}

/**
 * @param {string} cid
 * @param {{ push?: boolean }} [options]
 */
async function openConversation(cid, { push = true } = {}) {
  closeStream();
  page.generation++;
  page.editing = null;
  page.conv = emptyConversation(cid);
  hideBanner();
  setSidebar(false);
  const url = new URL(location.href);
  url.searchParams.set("c", cid);
  if (push) history.pushState({ cid }, "", url);
  else history.replaceState({ cid }, "", url);
  const known = page.conversations.find((c) => c.conversationId === cid);
  drawConversationList();
  // A conversation the server does not have yet asks the server nothing (no 404s): it starts
  // with the first message sent.
  if (known || !page.listComplete) {
    page.conv = { ...page.conv, title: known?.title ?? null };
    updateDocumentTitle();
    scheduleRender();
    await reload();
  } else {
    dispatch({ type: "loaded", transcript: { messages: [], lastEventId: 0 }, unsent: unsentStore.list(cid) });
    connect({ exists: false });
  }
  updateDocumentTitle();
  scheduleRender();
  transcriptView.follow();
  if (!narrow.matches || document.activeElement === document.body) ui.input.focus();
}

addEventListener("popstate", () => {
  const cid = new URL(location.href).searchParams.get("c");
  if (cid && cid !== page.conv.cid) openConversation(cid, { push: false });
});

// ------------------------------------------------------------------ sending

/**
 * Sends a message as a new turn; the message shows at once.
 * @param {string} message
 */
function sendMessage(message) {
  if (busy()) return;
  const turnId = `t-${uuid()}`;
  page.editing = null;
  dispatch({ type: "send", turnId, message, at: new Date().toISOString() });
  transcriptView.follow();
  hideBanner();
  deliver(turnId, message);
}

/**
 * Delivers a turn to the server. The turn id makes this safe to repeat: a turn runs once.
 * @param {string} turnId
 * @param {string} message
 */
async function deliver(turnId, message) {
  const generation = page.generation;
  const cid = page.conv.cid;
  const at = page.conv.turns[turnId]?.sentAt ?? new Date().toISOString();
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await api.send(cid, turnId, message);
      unsentStore.remove(cid, turnId);
      if (generation !== page.generation) return;
      dispatch({ type: "sent", turnId, status: answer.status });
      refreshConversations();
      return;
    } catch (err) {
      const error = err instanceof ApiError ? err : new ApiError(0, "unreachable", String(err));
      if (!error.unreachable) {
        // Refused (too large, a budget, another turn running): nothing was stored; the text goes back.
        if (generation !== page.generation) return;
        dispatch({ type: "sendRefused", turnId });
        if (!ui.input.value.trim()) ui.input.value = message;
        ui.input.focus();
        showBanner(error.code === "budget_exceeded" ? `Token budget reached: ${error.message}` : error.message);
        return;
      }
      if (attempt === 0) {
        await new Promise((resolve) => setTimeout(resolve, SEND_RETRY_DELAY_MS));
        if (generation !== page.generation) return;
        continue;
      }
      // Kept in this browser, with its turn id: Retry (even after a reload) is the same turn.
      const reason = { message: error.status === 0 ? "could not reach the server" : error.message };
      unsentStore.put(cid, { turnId, message, at, error: reason });
      if (generation === page.generation) dispatch({ type: "sendFailed", turnId, error: reason });
      return;
    }
  }
}

/** @type {import("./views/turn.js").TurnHandlers} */
const turnHandlers = {
  resend(turnId) {
    const turn = page.conv.turns[turnId];
    if (!turn || busy()) return;
    dispatch({ type: "send", turnId, message: turn.userText, at: turn.sentAt ?? new Date().toISOString() });
    transcriptView.follow();
    deliver(turnId, turn.userText);
  },
  rerun(turnId) {
    const turn = page.conv.turns[turnId];
    if (turn) sendMessage(turn.userText);
    ui.input.focus();
  },
  edit(turnId) {
    const turn = turnId ? page.conv.turns[turnId] : null;
    if (turn?.status === "unsent") {
      // An unsent message goes back to the composer; it is not kept twice.
      unsentStore.remove(page.conv.cid, turn.turnId);
      dispatch({ type: "sendRefused", turnId: turn.turnId });
      ui.input.value = turn.userText;
      ui.input.focus();
      return;
    }
    page.editing = turnId;
    scheduleRender();
    if (!turnId) ui.input.focus();
  },
  sendEdited(_turnId, message) {
    sendMessage(message);
    ui.input.focus();
  },
  answer: answerAsk,
};

/** One operation id per ask until its answer is taken or refused: a retry is the same command. */
const operationIds = new Map();

/** @type {import("./views/ask.js").AnswerHandler} */
async function answerAsk(ask, outcome, data, choice) {
  const cid = page.conv.cid;
  const operationId = operationIds.get(ask.id) ?? uuid();
  operationIds.set(ask.id, operationId);
  let ack;
  try {
    ack = await api.answer(cid, ask.id, { operationId, outcome, ...(data ? { data } : {}) });
  } catch (err) {
    return { ok: false, message: err instanceof ApiError && err.status === 0 ? ACK_PROBLEM.transport_failure ?? "" : err instanceof Error ? err.message : String(err) };
  }
  if (ack.status === "accepted" || ack.status === "already_resolved_same") {
    operationIds.delete(ask.id);
    choiceStore.save(ask.id, choice);
    if (cid === page.conv.cid) dispatch({ type: "answered", interactionId: ask.id, outcome, choice });
    return { ok: true };
  }
  if (ack.status === "invalid_response") {
    // Nothing was recorded: a corrected answer is a new command.
    operationIds.delete(ask.id);
    const { fields, rest } = problemsByField(ack.message ?? "", ask.request.answerSpec?.fields ?? []);
    return { ok: false, message: rest.length ? `${ACK_PROBLEM.invalid_response} ${rest.join("; ")}` : (ACK_PROBLEM.invalid_response ?? ""), fields };
  }
  return { ok: false, message: ACK_PROBLEM[ack.status] ?? ack.message ?? ack.status };
}

const transcriptView = createTranscriptView({ list: ui.transcript, jump: ui.jump, handlers: turnHandlers, copy });

/**
 * @param {string} text
 * @param {HTMLButtonElement} button
 */
async function copy(text, button) {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
    announce("Copied to the clipboard.");
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

// ------------------------------------------------------------------ composer, keyboard, sidebar

ui.input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  const message = ui.input.value.trim();
  if (!message || busy()) return;
  ui.input.value = "";
  sendMessage(message);
});

async function stopTurn() {
  const active = activeTurn(page.conv);
  if (!active || ui.stop.disabled) return;
  if (active.status !== "running") {
    // The server cannot cancel a turn it is still dispatching: cancel it as soon as it runs.
    stopWhenRunning = active.turnId;
    return;
  }
  stopWhenRunning = null;
  // Focus stays in the composer, not on a button about to disappear.
  ui.input.focus();
  ui.stop.disabled = true;
  try {
    const res = await api.cancel(page.conv.cid, uuid(), "stopped by the user");
    if (res.status >= 400) showBanner(res.data?.message ?? "Could not confirm the run stopped.");
  } catch (err) {
    showBanner(`Could not stop the run: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    ui.stop.disabled = false;
  }
}

ui.stop.addEventListener("click", stopTurn);

/** @param {boolean} open */
function setSidebar(open) {
  ui.sidebar.classList.toggle("open", open);
  ui.toggleSidebar.setAttribute("aria-expanded", String(open));
  // Closed on a narrow screen, it is off-screen: out of the tab order and the accessibility tree.
  ui.sidebar.inert = narrow.matches && !open;
}

ui.toggleSidebar.addEventListener("click", () => {
  const open = !ui.sidebar.classList.contains("open");
  setSidebar(open);
  if (open) ui.newConversation.focus();
});
narrow.addEventListener("change", () => setSidebar(false));
setSidebar(false);

document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.defaultPrevented || ui.app.hidden) return;
  if (ui.sidebar.classList.contains("open")) {
    setSidebar(false);
    ui.toggleSidebar.focus();
  } else if (page.editing) {
    turnHandlers.edit(null);
  } else if (activeTurn(page.conv)) {
    event.preventDefault();
    stopTurn();
  }
});

/** Example prompts for an empty conversation; the emulator's markers show what each script does. */
function drawExamples() {
  const examples =
    page.provider === "emulator"
      ? [
          ["Explain the README", "What does the README say?"],
          ["Answer a few questions first", "Set up the test runner [ask]"],
          ["Ask before running a command", "Run the test suite [permission]"],
          ["Propose a plan to approve", "Add a parser test, with a plan first [plan]"],
          ["A long, streamed answer", "Explain how this project fits together [long]"],
          ["A run that fails", "Try something that breaks [fail]"],
        ]
      : [
          ["Explain the project", "Explain what this repository does and how it is organised."],
          ["Find a bug", "Run the tests and explain any failure."],
          ["Write a test", "Add a test for the most important function that has none."],
          ["Review recent changes", "Summarize the most recent changes and anything risky in them."],
        ];
  ui.examples.replaceChildren(
    ...examples.map(([label, prompt]) =>
      el(
        "li",
        {},
        el("button", { type: "button", class: "example", onclick: () => sendMessage(/** @type {string} */ (prompt)) }, el("strong", { text: label }), el("span", { text: prompt })),
      ),
    ),
  );
}

start();
