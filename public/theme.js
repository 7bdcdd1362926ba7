// @ts-check
/**
 * The page's theme — System (the browser's prefers-color-scheme), Light or Dark — kept in this
 * browser (localStorage `gw-theme`, outside the sign-in's keys: signing out keeps it) and set on
 * <html> as `data-theme="light|dark"` (style.css draws each) with the choice itself in
 * `data-theme-choice`. A classic script in <head>, before the stylesheet: it runs before the first
 * paint, so a dark page never flashes light (a module would run only after the page is parsed).
 * It follows a change of the system's scheme and a choice made in another tab. The sidebar's
 * Theme control (controllers/theme.js) reads and sets the choice through `window.pageTheme`.
 */
(() => {
  const KEY = "gw-theme";
  const systemDark = matchMedia("(prefers-color-scheme: dark)");
  /** A choice this browser could not keep (storage disabled): this tab still shows it. */
  /** @type {"system" | "light" | "dark" | null} */
  let unkept = null;
  /** @returns {"system" | "light" | "dark"} */
  const choice = () => {
    if (unkept) return unkept;
    try {
      const kept = localStorage.getItem(KEY);
      return kept === "light" || kept === "dark" ? kept : "system";
    } catch {
      return "system"; // storage disabled: the system's scheme
    }
  };
  const apply = () => {
    const chosen = choice();
    const root = document.documentElement;
    root.dataset.theme = chosen === "system" ? (systemDark.matches ? "dark" : "light") : chosen;
    root.dataset.themeChoice = chosen;
  };
  apply();
  systemDark.addEventListener("change", apply);
  addEventListener("storage", (event) => {
    if (event.key === KEY || event.key === null) {
      apply();
      dispatchEvent(new Event("pagethemechange"));
    }
  });
  window.pageTheme = {
    choice,
    choose(next) {
      try {
        if (next === "system") localStorage.removeItem(KEY);
        else localStorage.setItem(KEY, next);
        unkept = null;
      } catch {
        unkept = next;
      }
      apply();
    },
  };
})();
