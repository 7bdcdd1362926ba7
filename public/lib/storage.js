// @ts-check
/**
 * What the page keeps in this browser (localStorage, shared by its tabs): the sign-in, messages
 * that have not reached the server yet, what this browser answered to asks (in words, never a
 * secret value), and whether it notifies when the agent asks. Signing out forgets all of it. Other tabs learn of changes through the `storage`
 * event: a sign-out, a sign-in, a conversation deleted or renamed here. (The theme is kept by
 * theme.js, outside the sign-in: it stays when you sign out.)
 */

const PREFIX = "gw:";
const TOKEN = `${PREFIX}token`;
const USER = `${PREFIX}user`;
const DELETED = `${PREFIX}deleted`;
const RENAMED = `${PREFIX}renamed`;
const NOTIFY = `${PREFIX}notify`;
const WORKSPACE = `${PREFIX}workspace`;
const unsentKey = (/** @type {string} */ cid) => `${PREFIX}unsent:${cid}`;
const choiceKey = (/** @type {string} */ interactionId) => `${PREFIX}choice:${interactionId}`;

/** @param {string} key */
function read(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null; // storage disabled: the page still works, per tab
  }
}

/** @param {string} key @param {string | null} value */
function write(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // full or disabled: nothing is kept
  }
}

export const signInStore = {
  token: () => read(TOKEN),
  user: () => read(USER),
  /** @param {string} token @param {string | null} user */
  save(token, user) {
    write(TOKEN, token);
    write(USER, user);
  },
  forget() {
    const keys = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      if (key?.startsWith(PREFIX)) keys.push(key);
    }
    for (const key of keys) write(key, null);
  },
};

/** @typedef {import("./reducer-load.js").UnsentTurn} UnsentTurn */

export const unsentStore = {
  /** @param {string} cid @returns {UnsentTurn[]} */
  list(cid) {
    try {
      const list = JSON.parse(read(unsentKey(cid)) ?? "[]");
      return Array.isArray(list) ? list : [];
    } catch {
      return [];
    }
  },
  /** @param {string} cid @param {UnsentTurn} turn */
  put(cid, turn) {
    const list = unsentStore.list(cid).filter((t) => t.turnId !== turn.turnId);
    write(unsentKey(cid), JSON.stringify([...list, turn]));
  },
  /** @param {string} cid @param {string} turnId */
  remove(cid, turnId) {
    const list = unsentStore.list(cid).filter((t) => t.turnId !== turnId);
    write(unsentKey(cid), list.length ? JSON.stringify(list) : null);
  },
};

export const choiceStore = {
  /** @param {string[]} interactionIds @returns {Record<string, string>} */
  read(interactionIds) {
    /** @type {Record<string, string>} */
    const out = {};
    for (const id of interactionIds) {
      const choice = read(choiceKey(id));
      if (choice) out[id] = choice;
    }
    return out;
  },
  /** @param {string} interactionId @param {string} choice */
  save: (interactionId, choice) => write(choiceKey(interactionId), choice),
};

/** "Notify me when the agent needs me" (controllers/notify.js), this browser's choice. */
export const notifySetting = {
  on: () => read(NOTIFY) === "on",
  /** @param {boolean} on */
  save: (on) => write(NOTIFY, on ? "on" : null),
};

/** Tells this browser's other tabs that a conversation was deleted here. */
export function announceDeleted(/** @type {string} */ cid) {
  write(DELETED, JSON.stringify({ cid, at: Date.now() }));
}

/** Tells this browser's other tabs that a conversation was renamed here (their lists fetch it). */
export function announceRenamed(/** @type {string} */ cid) {
  write(RENAMED, JSON.stringify({ cid, at: Date.now() }));
}

/**
 * Changes other tabs made.
 * @param {{ signedOut: () => void, signedIn: () => void, deleted: (cid: string) => void, renamed: () => void, answered: (interactionId: string, choice: string) => void }} on
 */
export function watchOtherTabs(on) {
  addEventListener("storage", (event) => {
    if (event.storageArea !== localStorage) return;
    if (event.key === null || (event.key === TOKEN && event.newValue === null)) on.signedOut();
    else if (event.key === TOKEN && event.oldValue === null) on.signedIn();
    else if (event.key === DELETED && event.newValue) {
      try {
        on.deleted(JSON.parse(event.newValue).cid);
      } catch {
        // not ours
      }
    } else if (event.key === RENAMED && event.newValue) on.renamed();
    else if (event.key.startsWith(`${PREFIX}choice:`) && event.newValue)
      on.answered(event.key.slice(`${PREFIX}choice:`.length), event.newValue);
  });
}

/** Whether the workspace panel was open when the page was last left (controllers/workspace.js). */
export const panelStore = {
  open: () => read(WORKSPACE) === "open",
  /** @param {boolean} open */
  set: (open) => write(WORKSPACE, open ? "open" : null),
};
