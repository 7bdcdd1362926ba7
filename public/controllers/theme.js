// @ts-check
/**
 * The sidebar's Theme control (System, Light, Dark): radio buttons over the choice theme.js keeps
 * and applies before the first paint (window.pageTheme). A choice made in another tab shows here too.
 */

/** @param {{ ui: { themeChoice: HTMLElement } }} deps */
export function createThemeControl({ ui }) {
  const theme = window.pageTheme;
  const radios = /** @type {HTMLInputElement[]} */ ([...ui.themeChoice.querySelectorAll('input[name="theme"]')]);
  if (!theme) {
    // theme.js did not run (a copy of the page without it): the system's scheme, no choice.
    ui.themeChoice.hidden = true;
    return;
  }
  const show = () => {
    for (const radio of radios) radio.checked = radio.value === theme.choice();
  };
  for (const radio of radios) {
    radio.addEventListener("change", () => {
      if (radio.checked && (radio.value === "system" || radio.value === "light" || radio.value === "dark"))
        theme.choose(radio.value);
    });
  }
  addEventListener("pagethemechange", show);
  show();
}
