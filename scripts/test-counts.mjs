// A node:test reporter that keeps count for CI (scripts/node-tests.mjs adds it when TEST_COUNTS_DIR
// is set): one line per test queued and per test ended, appended to the file TEST_COUNTS_FILE names
// as it happens (synchronously: a file killed midway, even with SIGKILL, leaves every line up to
// then), so a file cut short still shows what passed, what failed and what never ran. It prints
// nothing itself. Read by scripts/ci-summary.mjs.
//
// Lines, tab-separated: `queued|started|passed|failed|skipped|suite|file-failed`, the test's nesting,
// its name. A test is queued when its file (or its describe block) reaches it, started when it
// begins; one queued and never ended did not run (or not to its end). Tests queued at nesting n+1
// belong to the test last started at nesting n: a describe block, not a test of its own.
import { appendFileSync } from "node:fs";

const out = process.env.TEST_COUNTS_FILE;

/** @param {AsyncIterable<{ type: string, data: any }>} source */
export default async function* testCounts(source) {
  for await (const { type, data } of source) {
    if (!out || !data || typeof data.name !== "string") continue;
    const line = (kind) => appendFileSync(out, `${kind}\t${data.nesting}\t${data.name.replace(/[\t\n]/g, " ")}\n`);
    // The file's own test (named by its path) holds the file's tests: only its failure counts (a
    // hook that failed, the file's bound), and only where no test of it tells already.
    const fileLevel = data.file !== undefined && data.name === data.file && data.nesting === 0;
    if (type === "test:fail" && fileLevel) line("file-failed");
    if (fileLevel) continue;
    if (type === "test:enqueue") line("queued");
    else if (type === "test:dequeue") line("started");
    else if (type === "test:pass" || type === "test:fail") {
      if (data.details?.type === "suite") line("suite");
      else if (data.skip !== undefined || data.todo !== undefined) line("skipped");
      else line(type === "test:pass" ? "passed" : "failed");
    }
  }
  yield "";
}
