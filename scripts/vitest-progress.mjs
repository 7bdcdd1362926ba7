// A vitest reporter for CI (.ci/run): what the run is to do and what each test did, appended to
// VITEST_PROGRESS_FILE as it happens (synchronously), one JSON object a line. vitest's own JSON
// report is written only when the run ends; a run killed at its bound leaves this instead, from
// which scripts/ci-summary.mjs counts what passed, what failed and what never ran.
//   { files }                  the test files the run was given
//   { collected, tests }       a file collected, with its number of tests
//   { test, state }            a test ended: passed, failed or skipped
import { appendFileSync } from "node:fs";

export default class VitestProgress {
  constructor() {
    this.out = process.env.VITEST_PROGRESS_FILE;
  }

  write(entry) {
    if (this.out) appendFileSync(this.out, `${JSON.stringify(entry)}\n`);
  }

  onTestRunStart(specifications) {
    this.write({ files: specifications.length });
  }

  onTestModuleCollected(module) {
    this.write({
      collected: `${module.project.name}:${module.moduleId}`,
      tests: [...module.children.allTests()].length,
    });
  }

  onTestCaseResult(test) {
    this.write({ test: test.fullName, state: test.result().state });
  }
}
