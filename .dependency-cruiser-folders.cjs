/**
 * Folders form no cycle: each folder of the code sits above the folders it uses (docs/architecture.md
 * "Layers"). Run by `npm run lint:layers` after the module rules (./.dependency-cruiser.cjs), over
 * the code without its tests: a test may import the module it tests and a helper of test/ at once.
 */
const { options } = require("./.dependency-cruiser.cjs");

/** @type {import("dependency-cruiser").IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-folder-cycles",
      severity: "error",
      comment:
        "No folder imports, however indirectly, a folder that imports it back (src/session and src/ai-sdk, say).",
      scope: "folder",
      from: { path: "^(src|public|scripts|bench|examples)" },
      to: { circular: true },
    },
  ],
  options: { ...options, exclude: { path: ["\\.test\\.(ts|mjs)$"] } },
};
