// @ts-check
/**
 * The page's one script in <head> (built into a classic script: scripts/build-page.mjs), run as the
 * HTML is parsed, before the first paint: the theme (theme.js: a dark page never flashes light), and
 * the page's first requests (lib/early.js: under way while app.js is still loading).
 */
import "./theme.js";
import { startEarly } from "./lib/early.js";

startEarly();
