// @ts-check
/**
 * Signing in and out. The page signs in with the embedding host's token (window.AGENT_GATEWAY),
 * else the one this browser kept, else it asks: a name where the server offers dev login, a pasted
 * user token elsewhere. Signing out here signs this browser out (its tabs share the sign-in), and
 * a sign-in or sign-out in another tab is followed here.
 */
import { signInStore } from "../lib/storage.js";

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   config: NonNullable<Window["AGENT_GATEWAY"]>,
 *   store: import("../lib/store.js").Store,
 *   ui: {
 *     signin: HTMLElement, devLogin: HTMLFormElement, devUser: HTMLInputElement, tokenLogin: HTMLFormElement, userToken: HTMLTextAreaElement,
 *     signinError: HTMLElement, app: HTMLElement, who: HTMLElement, signOut: HTMLElement,
 *   },
 *   showExamples: (provider: string) => void,
 *   enter: () => Promise<void>,
 *   closeStream: () => void,
 *   updateTitle: () => void,
 * }} deps  `enter`: the app is shown; open the conversation the URL names (or a new one)
 */
export function createSession({ api, config, store, ui, showExamples, enter, closeStream, updateTitle }) {
  /** @type {string | null} */
  let token = null;
  /** @type {string | null} */
  let user = null;

  async function start() {
    // The token this browser kept is read before anything is asked: the requests boot.js started
    // carry it (lib/early.js), and the api takes their answers only for the same token.
    if (typeof config.getToken !== "function") {
      token = signInStore.token();
      user = signInStore.user();
    }
    // Signed in already, the page does not wait for /healthz (one round trip less on a slow link):
    // only the sign-in form needs it first; the examples are filled in when it answers.
    const healthy = api.health().catch(() => null);
    healthy.then((health) => showExamples(health?.provider ?? ""));
    if (typeof config.getToken === "function") {
      token = await config.getToken().catch(() => null);
    }
    if (!token) {
      token = signInStore.token();
      user = signInStore.user();
    }
    if (token) return enterApp();
    const health = await healthy;
    if (token) return; // signed in meanwhile (another tab)
    ui.signin.hidden = false;
    const dev = health?.devLogin === true;
    (dev ? ui.devLogin : ui.tokenLogin).hidden = false;
    (dev ? ui.devUser : ui.userToken).focus();
  }

  ui.devLogin.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = ui.devUser.value.trim();
    try {
      const answer = await api.devLogin(name);
      signIn(answer.token, name);
    } catch (err) {
      showSigninError(err instanceof Error ? err.message : "Sign in failed");
    }
  });

  ui.tokenLogin.addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = ui.userToken.value.trim();
    const problem = await api.checkToken(candidate);
    if (problem) return showSigninError(problem);
    signIn(candidate, null);
  });

  /** @param {string} message */
  function showSigninError(message) {
    ui.signinError.textContent = message;
    ui.signinError.hidden = false;
  }

  /** @param {string} newToken @param {string | null} newUser */
  function signIn(newToken, newUser) {
    token = newToken;
    user = newUser;
    signInStore.save(newToken, newUser);
    ui.signinError.hidden = true;
    enterApp();
  }

  /** @param {string} [message] @param {{ here?: boolean }} [options] */
  function signOut(message, { here = true } = {}) {
    closeStream();
    // Signing out here signs this browser out: every tab shares the sign-in.
    if (here) signInStore.forget();
    token = null;
    store.generation++;
    ui.app.hidden = true;
    ui.signin.hidden = false;
    updateTitle();
    if (message) showSigninError(message);
    start();
  }

  ui.signOut.addEventListener("click", () => signOut());

  async function enterApp() {
    ui.signin.hidden = true;
    ui.app.hidden = false;
    ui.who.textContent = user ? `Signed in as ${user}` : "";
    await enter();
  }

  return {
    start,
    signOut,
    token: () => token,
    /** Another tab signed this browser out (an embedding host's token is not this browser's to drop). */
    signedOutElsewhere() {
      if (token && !config.getToken) signOut("You signed out in another tab.", { here: false });
    },
    /** Another tab signed in: this one follows, unless it is signed in already. */
    signedInElsewhere() {
      if (token) return;
      token = signInStore.token();
      user = signInStore.user();
      if (token) enterApp();
    },
  };
}
