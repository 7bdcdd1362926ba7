// The reference chat client of the agent chat gateway. Plain ES module, no build step.
// Everything the agent sends is put on the page with textContent: never as HTML.
//
// Embedding: define window.AGENT_GATEWAY = { getToken: async () => "<user token>", baseUrl: "" }
// before this module loads, and the page signs in with that token instead of asking.

const config = window.AGENT_GATEWAY ?? {};
const BASE = config.baseUrl ?? "";
const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  user: null,
  cid: null,
  conversations: [],
  turns: new Map(), // turnId → turn view
  interactions: new Map(), // interactionId → card
  lastSeq: 0,
  source: null,
  replayTarget: 0,
  usageTotal: null,
  budget: null,
  activeTurnId: null,
  generation: 0, // bumps on every conversation switch; stale async work checks it
};

// ------------------------------------------------------------------ helpers

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

function uuid() {
  return crypto.randomUUID();
}

function announce(text) {
  const node = $("announcer");
  node.textContent = "";
  setTimeout(() => (node.textContent = text), 50);
}

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code;
    this.body = body;
  }
}

async function api(path, { method = "GET", body, raw = false } = {}) {
  const headers = { authorization: `Bearer ${state.token}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${BASE}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await res.json().catch(() => null);
  if (raw) return { status: res.status, data };
  if (res.status === 401) {
    signOut("Your session ended. Please sign in again.");
    throw new ApiError(401, data);
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

const enc = encodeURIComponent;
const convPath = (cid) => `/v1/conversations/${enc(cid)}`;

function formatTokens(n) {
  return n === null || n === undefined ? "unknown" : n.toLocaleString("en-US");
}

function formatCost(n) {
  return n === null || n === undefined ? "unknown" : `$${n.toFixed(4)}`;
}

/** "in 1,980 · out 80 · $0.0021", saying "unknown" where unknown and "at least" for a floor. */
function usageText(usage, { floor = false } = {}) {
  if (!usage) return "";
  const prefix = floor ? "at least " : "";
  return `${prefix}in ${formatTokens(usage.inputTokens)} · out ${formatTokens(usage.outputTokens)} · ${formatCost(usage.cost)}`;
}

// ------------------------------------------------------------------ sign in

async function start() {
  if (typeof config.getToken === "function") {
    try {
      state.token = await config.getToken();
    } catch {
      state.token = null;
    }
  }
  state.token ??= sessionStorage.getItem("gw:token");
  state.user = sessionStorage.getItem("gw:user");
  if (state.token) return enterApp();
  const health = await fetch(`${BASE}/healthz`).then((r) => r.json()).catch(() => ({}));
  $("signin").hidden = false;
  $(health.devLogin ? "dev-login" : "token-login").hidden = false;
  (health.devLogin ? $("dev-user") : $("user-token")).focus();
}

$("dev-login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const user = $("dev-user").value.trim();
  const res = await fetch(`${BASE}/v1/dev/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ user }) });
  const body = await res.json().catch(() => null);
  if (!res.ok) return showSigninError(body?.error?.message ?? "Sign in failed");
  signIn(body.token, user);
});

$("token-login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = $("user-token").value.trim();
  const res = await fetch(`${BASE}/v1/conversations?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    return showSigninError(body?.error?.message ?? "That token was not accepted");
  }
  signIn(token, null);
});

function showSigninError(message) {
  const node = $("signin-error");
  node.textContent = message;
  node.hidden = false;
}

function signIn(token, user) {
  state.token = token;
  state.user = user;
  sessionStorage.setItem("gw:token", token);
  if (user) sessionStorage.setItem("gw:user", user);
  $("signin").hidden = true;
  enterApp();
}

function signOut(message) {
  closeStream();
  sessionStorage.removeItem("gw:token");
  sessionStorage.removeItem("gw:user");
  state.token = null;
  $("app").hidden = true;
  $("signin").hidden = false;
  if (message) showSigninError(message);
}

$("sign-out").addEventListener("click", () => signOut());

async function enterApp() {
  $("signin").hidden = true;
  $("app").hidden = false;
  $("who").textContent = state.user ? `Signed in as ${state.user}` : "";
  await refreshConversations();
  const fromUrl = new URL(location.href).searchParams.get("c");
  await openConversation(fromUrl ?? newConversationId(), { push: false });
}

// ------------------------------------------------------------------ conversations

function newConversationId() {
  return `c-${uuid().slice(0, 18)}`;
}

async function refreshConversations() {
  try {
    const { conversations } = await api("/v1/conversations?limit=100");
    state.conversations = conversations;
  } catch {
    // keep what we had
  }
  renderConversationList();
}

function renderConversationList() {
  const list = $("conversation-list");
  list.replaceChildren(
    ...state.conversations.map((c) =>
      el(
        "li",
        { "aria-current": c.conversationId === state.cid ? "page" : undefined },
        el(
          "a",
          { href: `?c=${enc(c.conversationId)}`, onclick: (e) => (e.preventDefault(), openConversation(c.conversationId)) },
          el("span", { class: "title", text: c.title }),
          el("span", { class: "meta", text: c.state === "running" ? "working…" : new Date(c.updatedAt).toLocaleString() }),
        ),
        el("button", { class: "delete", title: `Delete “${c.title}”`, "aria-label": `Delete conversation ${c.title}`, onclick: () => deleteConversation(c) }, "✕"),
      ),
    ),
  );
}

$("new-conversation").addEventListener("click", () => openConversation(newConversationId()));
$("toggle-sidebar").addEventListener("click", () => {
  const open = !$("sidebar").classList.contains("open");
  $("sidebar").classList.toggle("open", open);
  $("toggle-sidebar").setAttribute("aria-expanded", String(open));
});

async function deleteConversation(c) {
  if (!confirm(`Delete “${c.title}”? This removes it everywhere.`)) return;
  try {
    await api(convPath(c.conversationId), { method: "DELETE" });
  } catch (err) {
    return showBanner(`Could not delete: ${err.message}`);
  }
  await refreshConversations();
  if (c.conversationId === state.cid) openConversation(newConversationId());
}

async function openConversation(cid, { push = true } = {}) {
  closeStream();
  state.generation++;
  const generation = state.generation;
  state.cid = cid;
  state.turns.clear();
  state.interactions.clear();
  state.lastSeq = 0;
  state.activeTurnId = null;
  state.usageTotal = null;
  state.budget = null;
  $("transcript").replaceChildren();
  hideBanner();
  $("sidebar").classList.remove("open");
  const url = new URL(location.href);
  url.searchParams.set("c", cid);
  if (push) history.pushState({ cid }, "", url);
  else history.replaceState({ cid }, "", url);
  renderConversationList();
  const known = state.conversations.find((c) => c.conversationId === cid);
  $("conversation-title").textContent = known?.title ?? "New conversation";
  setConnection("idle", "Idle");

  // Rebuild from the transcript, then follow the stream strictly after it: nothing twice, nothing missed.
  const messages = await api(`${convPath(cid)}/messages`, { raw: true });
  if (generation !== state.generation) return;
  if (messages.status === 200) {
    loadTranscript(messages.data);
    const summary = await api(convPath(cid), { raw: true });
    if (summary.status === 200) {
      for (const request of summary.data.interactions) addInteraction(request.turnId, request);
      $("conversation-title").textContent = summary.data.title ?? "Conversation";
    }
    await refreshUsage();
  }
  if (generation !== state.generation) return;
  updateEmpty();
  updateComposer();
  sessionStorage.setItem(`gw:last:${cid}`, String(state.lastSeq));
  connect(state.lastSeq);
  $("composer-input").focus();
}

window.addEventListener("popstate", () => {
  const cid = new URL(location.href).searchParams.get("c");
  if (cid && cid !== state.cid) openConversation(cid, { push: false });
});

function loadTranscript({ messages, lastEventId }) {
  for (const m of messages) {
    if (m.role === "user") {
      ensureTurn(m.turnId, m.text);
    } else {
      const turn = ensureTurn(m.turnId);
      for (const part of m.parts) applyPart(turn, part);
      setTurnStatus(turn, m.status, { error: m.error });
    }
  }
  state.lastSeq = lastEventId;
}

// ------------------------------------------------------------------ the event stream

function setConnection(stateName, label) {
  const node = $("connection");
  node.dataset.state = stateName;
  node.textContent = label;
}

function closeStream() {
  if (state.source) {
    state.source.close();
    state.source = null;
  }
}

async function connect(after) {
  closeStream();
  const generation = state.generation;
  setConnection("connecting", "Connecting");
  let minted;
  try {
    minted = await api(`${convPath(state.cid)}/stream-token`, { method: "POST" });
  } catch {
    if (generation === state.generation) setTimeout(() => generation === state.generation && connect(state.lastSeq), 2000);
    return;
  }
  if (generation !== state.generation) return;
  // ?after= for this first connection (a reloaded page has no Last-Event-ID); EventSource sends
  // Last-Event-ID on its own reconnects, and the server prefers it.
  const source = new EventSource(`${BASE}${minted.eventsUrl}&after=${after}`);
  state.source = source;
  source.addEventListener("open", async () => {
    if (state.source !== source) return;
    const summary = await api(convPath(state.cid), { raw: true });
    state.replayTarget = summary.status === 200 ? summary.data.lastEventId : 0;
    updateConnectionState();
  });
  source.addEventListener("error", () => {
    if (state.source !== source) return;
    if (source.readyState === EventSource.CLOSED) {
      // Refused (an expired stream token, say): mint a new token and resume after the last event.
      setConnection("reconnecting", "Reconnecting");
      setTimeout(() => state.source === source && connect(state.lastSeq), 1000);
    } else {
      setConnection("reconnecting", "Reconnecting");
    }
  });
  source.onmessage = () => {};
  for (const type of EVENT_TYPES) source.addEventListener(type, (e) => onFrame(e, source));
}

const EVENT_TYPES = [
  "turn.accepted",
  "turn.completed",
  "turn.failed",
  "turn.cancelled",
  "message.part.updated",
  "status",
  "result",
  "raw",
  "warning",
  "usage.updated",
  "budget.exceeded",
  "interaction.requested",
  "interaction.resolved",
  "interaction",
  "interaction.cancel",
  "plan.submitted",
  "stream.reset",
  "session.updated",
  "tool-heartbeat",
  "tool-slow",
  "model-processing",
  "error",
  "child-task",
];

function updateConnectionState() {
  if (state.lastSeq < state.replayTarget) setConnection("replaying", "Catching up");
  else setConnection("live", "Live");
}

function onFrame(event, source) {
  if (state.source !== source) return;
  if (event.type === "stream.reset") {
    // Our cursor is gone from the log: rebuild from the transcript.
    openConversation(state.cid, { push: false });
    return;
  }
  let envelope;
  try {
    envelope = JSON.parse(event.data);
  } catch {
    return;
  }
  if (typeof envelope.seq !== "number" || envelope.seq <= state.lastSeq) return; // seen already
  state.lastSeq = envelope.seq;
  sessionStorage.setItem(`gw:last:${state.cid}`, String(state.lastSeq));
  apply(envelope);
  updateConnectionState();
}

function apply(e) {
  const turn = e.turnId ? ensureTurn(e.turnId, e.type === "turn.accepted" ? e.data.message : undefined) : null;
  switch (e.type) {
    case "turn.accepted":
      setTurnStatus(turn, "running");
      if ($("conversation-title").textContent === "New conversation") $("conversation-title").textContent = (e.data.message ?? "").slice(0, 80);
      refreshConversations();
      break;
    case "message.part.updated":
      applyPart(turn, e.data.part);
      break;
    case "turn.completed":
    case "turn.failed":
    case "turn.cancelled": {
      setTurnStatus(turn, e.data.status, { error: e.data.error, reason: e.data.reason, resultText: e.data.result?.text });
      const text = e.data.result?.text;
      announce(e.type === "turn.completed" ? `The agent answered: ${(text ?? "").slice(0, 200)}` : e.type === "turn.failed" ? "The turn failed." : "The turn was cancelled.");
      refreshConversations();
      break;
    }
    case "usage.updated":
      turn.usage = e.data.usage;
      renderTurnFooter(turn);
      state.usageTotal = e.data.conversation;
      renderUsageTotal();
      break;
    case "budget.exceeded":
      showBanner(`Token budget reached: the run was stopped (${e.data.budget?.scope ?? "conversation"} budget ${e.data.budget?.tokens ?? ""}).`);
      refreshUsage();
      break;
    case "interaction.requested":
      addInteraction(e.turnId, e.data.interaction);
      break;
    case "interaction.resolved":
      resolveInteraction(e.data.interactionId, e.data.status, e.data.outcome, e.data.reason);
      break;
    case "warning":
      if (turn) turn.agent.append(el("p", { class: "warning-line", text: `⚠ ${e.data.message ?? e.data.code}` }));
      break;
    default:
      break; // status, raw, result, and variants newer than this page: nothing to draw
  }
  updateEmpty();
  updateComposer();
}

// ------------------------------------------------------------------ turns

function ensureTurn(turnId, message) {
  let turn = state.turns.get(turnId);
  if (turn) {
    if (message !== undefined && !turn.userText) setUserText(turn, message);
    return turn;
  }
  const user = el("div", { class: "bubble-user" });
  const parts = el("div", { class: "parts" });
  const typing = el("p", { class: "typing", text: "Working" });
  const footer = el("div", { class: "turn-footer" });
  const agent = el("div", { class: "agent", "aria-label": "Agent" }, parts, typing, footer);
  const node = el("li", { class: "turn", "data-turn": turnId }, user, agent);
  turn = { turnId, node, user, agent, parts, typing, footer, partNodes: new Map(), status: "running", usage: null, userText: "" };
  state.turns.set(turnId, turn);
  if (message !== undefined) setUserText(turn, message);
  $("transcript").append(node);
  scrollToEnd();
  return turn;
}

function setUserText(turn, text) {
  turn.userText = text;
  turn.user.textContent = text;
}

function setTurnStatus(turn, status, { error, reason, resultText } = {}) {
  turn.status = status;
  turn.typing.hidden = status !== "running" && status !== "pending";
  if (status === "running" || status === "pending") state.activeTurnId = turn.turnId;
  else if (state.activeTurnId === turn.turnId) state.activeTurnId = null;
  turn.agent.querySelector(".turn-error")?.remove();
  if (status === "failed") turn.agent.insertBefore(el("p", { class: "turn-error", role: "alert", text: `The turn failed: ${error?.message ?? "unknown error"}` }), turn.footer);
  if (status === "cancelled") turn.cancelReason = reason;
  if (status === "completed" && resultText && turn.partNodes.size === 0) applyPart(turn, { id: `${turn.turnId}:result`, type: "text", text: resultText });
  renderTurnFooter(turn);
}

function renderTurnFooter(turn) {
  const label = { running: "working", pending: "starting", completed: "done", failed: "failed", cancelled: "cancelled" }[turn.status] ?? turn.status;
  const items = [el("span", { class: `badge ${turn.status}`, text: label })];
  if (turn.status === "cancelled" && turn.cancelReason) items.push(el("span", { text: turn.cancelReason === "budget_exceeded" ? "token budget reached" : turn.cancelReason }));
  if (turn.usage) items.push(el("span", { class: "usage", text: usageText(turn.usage) }));
  turn.footer.replaceChildren(...items);
}

function applyPart(turn, part) {
  if (!part?.id) return;
  let node = turn.partNodes.get(part.id);
  switch (part.type) {
    case "text":
      if (!node) node = addPart(turn, part.id, el("div", { class: "text" }));
      // Parts carry their cumulative text: setting it (not appending deltas) can never duplicate words.
      node.textContent = part.text ?? "";
      break;
    case "reasoning":
      if (!node) node = addPart(turn, part.id, el("details", { class: "reasoning" }, el("summary", { text: "Reasoning" }), el("div", { class: "reasoning-body" })));
      node.querySelector(".reasoning-body").textContent = part.text ?? "";
      break;
    case "tool":
      if (!node) node = addPart(turn, part.id, toolCard());
      renderTool(node, part);
      break;
    case "file":
    case "subtask":
      if (!node) node = addPart(turn, part.id, el("p", { class: "warning-line" }));
      node.textContent = `${part.type}: ${part.filename ?? part.description ?? part.id}`;
      break;
    default:
      break; // step-start, step-finish: bookkeeping, not content
  }
  scrollToEnd();
}

function addPart(turn, id, node) {
  turn.partNodes.set(id, node);
  turn.parts.append(node);
  return node;
}

function toolCard() {
  return el(
    "details",
    { class: "tool" },
    el("summary", {}, el("span", { class: "tool-name" }), el("span", { class: "tool-status" })),
    el("div", { class: "tool-body" }, el("div", { class: "tool-input" }), el("div", { class: "tool-output" })),
  );
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function renderTool(node, part) {
  const status = part.state?.status ?? "pending";
  node.querySelector(".tool-name").textContent = part.tool ?? "tool";
  const badge = node.querySelector(".tool-status");
  badge.textContent = status;
  badge.className = `tool-status ${status}`;
  const input = node.querySelector(".tool-input");
  input.replaceChildren(...(part.state?.input !== undefined ? [el("strong", { text: "Input" }), el("pre", { text: pretty(part.state.input) })] : []));
  const output = node.querySelector(".tool-output");
  const result = part.state?.error ?? part.state?.output;
  output.replaceChildren(...(result !== undefined ? [el("strong", { text: part.state?.error ? "Error" : "Output" }), el("pre", { text: pretty(result) })] : []));
}

// ------------------------------------------------------------------ interactions

function addInteraction(turnId, request) {
  if (!request?.id || state.interactions.has(request.id)) return;
  const turn = ensureTurn(turnId);
  const card = el("section", { class: "interaction", "aria-label": request.title, "data-interaction": request.id });
  const entry = { request, card, operationId: uuid(), resolved: false };
  state.interactions.set(request.id, entry);
  card.append(el("span", { class: "kind", text: request.kind }), el("h3", { text: request.title }));
  if (request.kind === "permission") renderPermission(entry);
  else if (request.kind === "plan") renderPlan(entry);
  else renderQuestion(entry);
  card.append(el("p", { class: "outcome", role: "status" }));
  turn.parts.append(card);
  entry.turn = turn;
  turn.typing.textContent = "Waiting for you";
  announce(`The agent is waiting for you: ${request.title}`);
  scrollToEnd();
}

function renderQuestion(entry) {
  const { request, card } = entry;
  if (request.body) card.append(el("p", { text: request.body }));
  const form = el("form", { novalidate: true });
  for (const field of request.answerSpec?.fields ?? []) form.append(fieldInput(request.id, field));
  const allowed = request.allowedOutcomes ?? ["accepted", "declined", "cancelled"];
  form.append(
    el(
      "div",
      { class: "actions" },
      el("button", { type: "submit", class: "primary", text: "Send answer" }),
      allowed.includes("declined") ? el("button", { type: "button", text: "Decline", onclick: () => submitAnswer(entry, "declined") }) : null,
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const { data, problems } = readForm(form, request.answerSpec?.fields ?? []);
    if (problems.length) return showOutcome(entry, problems.join("; "), true);
    submitAnswer(entry, "accepted", data);
  });
  card.append(form);
}

function fieldId(iid, name) {
  return `f-${iid.replace(/[^A-Za-z0-9_-]/g, "_")}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function fieldInput(iid, field) {
  const id = fieldId(iid, field.name);
  const label = `${field.label ?? field.name}${field.required ? " *" : ""}`;
  const describe = field.description ? el("p", { class: "hint", text: field.description }) : null;
  const options = (field.options ?? []).map((o) => (typeof o === "string" ? { value: o, label: o } : { value: o.value, label: o.label ?? o.value }));
  switch (field.type) {
    case "boolean":
      return el("div", { class: "field" }, el("label", { class: "choice" }, el("input", { type: "checkbox", id, name: field.name }), label), describe);
    case "number":
      return el("div", { class: "field" }, el("label", { for: id, text: label }), el("input", { type: "number", id, name: field.name, min: field.min, max: field.max, step: field.integer ? 1 : "any", required: field.required }), describe);
    case "secret":
      return el("div", { class: "field" }, el("label", { for: id, text: label }), el("input", { type: "password", id, name: field.name, autocomplete: "off", required: field.required }), describe);
    case "select":
      if (field.multi) {
        return el(
          "fieldset",
          { class: "field" },
          el("legend", { text: label }),
          ...options.map((o) => el("label", { class: "choice" }, el("input", { type: "checkbox", name: field.name, value: o.value }), o.label)),
          field.allowCustom ? el("input", { type: "text", name: `${field.name}::custom`, "aria-label": `${field.label ?? field.name}: other (comma separated)`, placeholder: "Other (comma separated)" }) : null,
          describe,
        );
      }
      return el(
        "div",
        { class: "field" },
        el("label", { for: id, text: label }),
        el("select", { id, name: field.name, required: field.required }, el("option", { value: "", text: "Choose…" }), ...options.map((o) => el("option", { value: o.value, text: o.label }))),
        describe,
      );
    default:
      return el(
        "div",
        { class: "field" },
        el("label", { for: id, text: label }),
        field.multiline ? el("textarea", { id, name: field.name, rows: 3, maxlength: field.maxLength, required: field.required }) : el("input", { type: "text", id, name: field.name, maxlength: field.maxLength, required: field.required }),
        describe,
      );
  }
}

/** The form's answer: empty optional fields are left out; required ones are checked. */
function readForm(form, fields) {
  const data = {};
  const problems = [];
  for (const field of fields) {
    let value;
    if (field.type === "boolean") value = form.querySelector(`[name="${CSS.escape(field.name)}"]`).checked;
    else if (field.type === "select" && field.multi) {
      value = [...form.querySelectorAll(`input[type=checkbox][name="${CSS.escape(field.name)}"]:checked`)].map((i) => i.value);
      const custom = form.querySelector(`[name="${CSS.escape(`${field.name}::custom`)}"]`)?.value ?? "";
      value.push(...custom.split(",").map((s) => s.trim()).filter(Boolean));
      if (value.length === 0) value = undefined;
    } else {
      const raw = form.querySelector(`[name="${CSS.escape(field.name)}"]`).value;
      if (raw === "") value = undefined;
      else if (field.type === "number") value = Number(raw);
      else value = raw;
    }
    if (value === undefined) {
      if (field.required) problems.push(`${field.label ?? field.name} is required`);
      continue;
    }
    data[field.name] = value;
  }
  return { data, problems };
}

function allowedGrants(request) {
  const scopes = request.responseScopes ?? ["once"];
  const grants = [];
  if (scopes.includes("once")) grants.push(["allow_once", "Allow once"]);
  if (scopes.includes("session")) grants.push(["allow_session", "Allow for this session"]);
  if (scopes.includes("always") || scopes.includes("persistent")) grants.push(["allow_always", "Always allow"]);
  grants.push(["deny", "Deny"]);
  return grants;
}

function renderPermission(entry) {
  const { request, card } = entry;
  if (request.body) card.append(el("p", { text: request.body }));
  if (request.subject) {
    const s = request.subject;
    card.append(el("p", { class: "subject", text: [s.tool, s.command ?? s.path ?? ""].filter(Boolean).join(": ") || pretty(s) }));
  }
  const feedbackId = fieldId(request.id, "feedback");
  const feedback = el("input", { type: "text", id: feedbackId, name: "feedback", placeholder: "Optional note for the agent" });
  card.append(
    el("div", { class: "field" }, el("label", { for: feedbackId, text: "Note (optional)" }), feedback),
    el(
      "div",
      { class: "actions" },
      ...allowedGrants(request).map(([grant, label]) =>
        el("button", {
          type: "button",
          class: grant === "deny" ? "danger" : "primary",
          text: label,
          onclick: () => submitAnswer(entry, "accepted", { grant, ...(feedback.value.trim() ? { feedback: feedback.value.trim() } : {}) }),
        }),
      ),
    ),
  );
}

function renderPlan(entry) {
  const { request, card } = entry;
  card.append(el("pre", { text: request.body ?? "" }));
  const feedbackId = fieldId(request.id, "feedback");
  const feedback = el("textarea", { id: feedbackId, rows: 2, placeholder: "What should change?" });
  card.append(
    el("div", { class: "field" }, el("label", { for: feedbackId, text: "Feedback (to reject)" }), feedback),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", class: "primary", text: "Approve", onclick: () => submitAnswer(entry, "accepted", { decision: "approve" }) }),
      el("button", {
        type: "button",
        text: "Reject with feedback",
        onclick: () => {
          if (!feedback.value.trim()) return showOutcome(entry, "Say what should change to reject the plan.", true);
          submitAnswer(entry, "accepted", { decision: "reject", feedback: feedback.value.trim() });
        },
      }),
    ),
  );
}

const ACK_TEXT = {
  accepted: "Answer sent.",
  already_resolved_same: "Already answered (the same answer).",
  already_resolved_different: "Already answered differently.",
  expired: "This request expired.",
  cancelled: "The agent no longer waits for this.",
  unknown_interaction: "The agent no longer knows this request.",
  unknown_run: "The run is gone.",
  binding_mismatch: "This request belongs to another run.",
  invalid_response: "The answer was not accepted:",
  transport_failure: "Could not confirm the answer was delivered; try again.",
};

async function submitAnswer(entry, outcome, data) {
  if (entry.resolved) return;
  setCardBusy(entry, true);
  let ack;
  try {
    const res = await api(`${convPath(state.cid)}/interactions/${enc(entry.request.id)}`, {
      method: "POST",
      body: { operationId: entry.operationId, outcome, ...(data ? { data } : {}) },
      raw: true,
    });
    ack = res.data;
  } catch {
    ack = { status: "transport_failure" };
  }
  setCardBusy(entry, false);
  if (!ack?.status) return showOutcome(entry, ack?.error?.message ?? "The answer could not be sent.", true);
  const text = `${ACK_TEXT[ack.status] ?? ack.status}${ack.status === "invalid_response" && ack.message ? ` ${ack.message}` : ""}`;
  if (ack.status === "invalid_response" || ack.status === "transport_failure") {
    // Not recorded: a fixed answer is a new command, so it gets a new operation id.
    if (ack.status === "invalid_response") entry.operationId = uuid();
    return showOutcome(entry, text, true);
  }
  markResolved(entry, text);
}

function setCardBusy(entry, busy) {
  for (const control of entry.card.querySelectorAll("button, input, select, textarea")) control.disabled = busy;
}

function showOutcome(entry, text, isError = false) {
  const node = entry.card.querySelector(".outcome");
  node.textContent = text;
  node.classList.toggle("field-error", isError);
}

function markResolved(entry, text) {
  entry.resolved = true;
  if (entry.turn) entry.turn.typing.textContent = "Working";
  entry.card.classList.add("resolved");
  for (const control of entry.card.querySelectorAll("button, input, select, textarea")) control.disabled = true;
  showOutcome(entry, text);
}

function resolveInteraction(interactionId, status, outcome, reason) {
  const entry = state.interactions.get(interactionId);
  if (!entry || entry.resolved) return;
  const text =
    status === "answered" ? `Answered (${outcome ?? "accepted"}).` : status === "expired" ? "This request expired." : `No longer needed${reason ? ` (${reason})` : ""}.`;
  markResolved(entry, text);
}

// ------------------------------------------------------------------ usage

async function refreshUsage() {
  const res = await api(`${convPath(state.cid)}/usage`, { raw: true });
  if (res.status !== 200) return;
  state.usageTotal = res.data.total;
  state.budget = res.data.budget;
  for (const t of res.data.turns) {
    const turn = state.turns.get(t.turnId);
    if (turn && t.usage.source !== "none") {
      turn.usage = t.usage;
      renderTurnFooter(turn);
    }
  }
  renderUsageTotal();
}

function renderUsageTotal() {
  const total = state.usageTotal;
  const node = $("usage-total");
  if (!total) return node.replaceChildren();
  const parts = [el("span", { text: `Total: ${usageText(total, { floor: !total.complete })}` })];
  if (state.budget) {
    const b = state.budget;
    parts.push(el("span", { text: ` · Budget ${b.complete ? "" : "at least "}${formatTokens(b.used)} of ${formatTokens(b.tokens)} tokens${b.exceeded ? " (reached)" : ""}` }));
  }
  node.replaceChildren(...parts);
}

// ------------------------------------------------------------------ composer

$("composer-input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = $("composer-input");
  const message = input.value.trim();
  if (!message || state.activeTurnId) return;
  const turnId = `t-${uuid()}`;
  // The message shows at once; the stream's turn.accepted then confirms it.
  const turn = ensureTurn(turnId, message);
  setTurnStatus(turn, "pending");
  input.value = "";
  updateEmpty();
  updateComposer();
  hideBanner();
  await sendTurn(turnId, message, turn, 0);
  input.focus();
});

async function sendTurn(turnId, message, turn, attempt) {
  try {
    await api(`${convPath(state.cid)}/turns`, { method: "POST", body: { turnId, message } });
    if (!state.conversations.some((c) => c.conversationId === state.cid)) {
      $("conversation-title").textContent = message.slice(0, 80);
      refreshConversations();
    }
  } catch (err) {
    if (err instanceof ApiError && err.status && err.status < 500) {
      turn.node.remove();
      state.turns.delete(turnId);
      state.activeTurnId = null;
      $("composer-input").value = message;
      showBanner(err.code === "budget_exceeded" ? `Token budget reached: ${err.message}` : err.message);
    } else if (attempt < 2) {
      // A retry under the same turn id never runs the turn twice.
      setTimeout(() => sendTurn(turnId, message, turn, attempt + 1), 1000 * (attempt + 1));
      return;
    } else {
      setTurnStatus(turn, "failed", { error: { message: `could not reach the server (${err.message})` } });
    }
  }
  updateEmpty();
  updateComposer();
}

$("stop").addEventListener("click", async () => {
  $("stop").disabled = true;
  try {
    const res = await api(`${convPath(state.cid)}/cancel`, { method: "POST", body: { operationId: uuid(), reason: "stopped by the user" }, raw: true });
    if (res.status >= 400) showBanner(res.data?.error?.message ?? res.data?.message ?? "Could not stop the run.");
  } finally {
    $("stop").disabled = false;
  }
});

function updateComposer() {
  const running = state.activeTurnId !== null;
  $("stop").hidden = !running;
  $("send").disabled = running;
}

function updateEmpty() {
  $("empty").hidden = state.turns.size > 0;
}

function showBanner(text) {
  const node = $("banner");
  node.textContent = text;
  node.hidden = false;
}

function hideBanner() {
  $("banner").hidden = true;
}

function scrollToEnd() {
  const list = $("transcript");
  const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 160;
  if (nearBottom) list.scrollTop = list.scrollHeight;
}

start();
