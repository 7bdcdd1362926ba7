// Every browser test runs with the page's Content-Security-Policy on (public/_headers; the contexts
// never bypass it) and fails if the page reports a violation: a `securitypolicyviolation` event in
// any frame, or a console line in which Chromium says it refused something for the policy. A test
// that provokes a violation on purpose takes it with takeViolations() and checks it.
import assert from "node:assert/strict";
import { afterEach } from "node:test";

/** @type {Array<Record<string, unknown>>} */
const violations = [];

/** Watches every page and frame of `context`; call before its first page opens. */
export async function watchCsp(context) {
  await context.exposeBinding("__reportCspViolation", ({ frame }, v) => violations.push({ frame: frame.url(), ...v }));
  await context.addInitScript(() => {
    document.addEventListener(
      "securitypolicyviolation",
      (e) =>
        // @ts-expect-error the binding exposed above
        window.__reportCspViolation({
          directive: e.effectiveDirective,
          blocked: e.blockedURI,
          sample: e.sample,
          source: `${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`,
        }),
      true,
    );
  });
  context.on("console", (m) => {
    const text = m.text();
    if (/^Refused to |Content[- ]Security[- ]Policy/i.test(text))
      violations.push({ frame: m.page()?.url(), console: text });
  });
}

/** The violations reported since the last call (or since the test began), and forgets them. */
export const takeViolations = () => violations.splice(0);

afterEach(() => {
  const seen = takeViolations();
  assert.deepEqual(seen, [], `the page reported Content-Security-Policy violations:\n${JSON.stringify(seen, null, 2)}`);
});
