// The imports a page module makes statically, read from its source: the module-graph test's rules
// (test/page/module-graph.test.ts) and the browser test of the preload list (test/e2e/changes.mjs)
// walk the same graph.

/**
 * @param {string} code  a module's source
 * @returns {{ relative: string[], bare: string[] }}  relative specifiers ("./x.js", "../lib/y.js")
 *   and bare ones (libraries, resolved by index.html's import map)
 */
export function staticImports(code) {
  const text = code.replace(/\/\*[\s\S]*?\*\//g, "");
  const relative = [
    ...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"(\.{1,2}\/[^"]+)"|^\s*import\s+"(\.{1,2}\/[^"]+)"/gm),
  ].map((m) => /** @type {string} */ (m[1] ?? m[2]));
  const bare = [...text.matchAll(/^\s*import\b[^;]*?\bfrom\s+"([^./][^"]*)"/gm)].map(
    (m) => /** @type {string} */ (m[1]),
  );
  return { relative, bare };
}
