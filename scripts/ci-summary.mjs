#!/usr/bin/env node
// The last lines of CI (.ci/run): every suite's counts, and `N passed, N failed` on a line of its
// own. Nothing that never ran is hidden: a vitest run killed at its bound counts the tests it
// collected and did not run, and the test files it never started, as failed; a node:test file cut
// short counts each test it queued and did not end as failed; and each says so.
//
//   node scripts/ci-summary.mjs <results dir> <other failed steps>
// Reads <dir>/vitest.json (vitest's JSON report, written when it ends), else
// <dir>/vitest-progress.ndjson (scripts/vitest-progress.mjs, written as it goes), and every
// <dir>/counts/*.counts (scripts/test-counts.mjs), one per node:test file.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** @typedef {{ name: string, passed: number, failed: number, notRun: number, notes: string[] }} Suite */

/** vitest's counts: from its report when it finished, else from what it wrote as it went. */
export function vitestCounts(dir) {
  /** @type {Suite} */
  const suite = { name: "vitest", passed: 0, failed: 0, notRun: 0, notes: [] };
  try {
    const report = JSON.parse(readFileSync(join(dir, "vitest.json"), "utf8"));
    suite.passed = report.numPassedTests;
    suite.failed = report.numFailedTests;
    // A file that failed to load has no failed test, yet the run did not succeed.
    if (!report.success && suite.failed === 0) {
      suite.failed = 1;
      suite.notes.push("vitest did not succeed, with no failed test (a file that failed to load?)");
    }
    return suite;
  } catch {
    // No report: vitest did not finish.
  }
  const path = join(dir, "vitest-progress.ndjson");
  if (!existsSync(path)) {
    suite.failed = 1;
    suite.notes.push("vitest wrote no report and no progress: it never ran (counted as one failure)");
    return suite;
  }
  let files = 0;
  const collected = new Map();
  let ended = 0;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (!line) continue;
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line cut by the kill
    }
    if (entry.files !== undefined) files = entry.files;
    else if (entry.collected !== undefined) collected.set(entry.collected, entry.tests);
    else if (entry.state === "passed" || entry.state === "failed" || entry.state === "skipped") {
      if (entry.state === "passed") suite.passed++;
      if (entry.state === "failed") suite.failed++;
      ended++;
    }
  }
  const queued = [...collected.values()].reduce((a, b) => a + b, 0);
  suite.notRun = Math.max(0, queued - ended);
  const unstarted = Math.max(0, files - collected.size);
  suite.notes.push(
    `vitest did not finish (killed at its bound?): ${suite.notRun} of the tests it collected never ran` +
      (unstarted > 0
        ? `, and ${unstarted} of its ${files} test files never started (their tests are not counted; each counts as one failure)`
        : ""),
  );
  suite.notRun += unstarted;
  return suite;
}

/** A node:test file's counts (scripts/test-counts.mjs). */
export function nodeTestCounts(path, name) {
  /** @type {Suite} */
  const suite = { name, passed: 0, failed: 0, notRun: 0, notes: [] };
  const open = new Map();
  const startedAt = [];
  const suites = new Set();
  let fileFailed = false;
  const key = (nesting, test) => `${nesting}\t${test}`;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const [kind, nestingText, test] = line.split("\t");
    if (!kind || test === undefined) continue;
    const nesting = Number(nestingText);
    const k = key(nesting, test);
    if (kind === "queued") {
      open.set(k, (open.get(k) ?? 0) + 1);
      if (nesting > 0 && startedAt[nesting - 1] !== undefined) suites.add(startedAt[nesting - 1]);
    } else if (kind === "started") startedAt[nesting] = k;
    else if (kind === "file-failed") fileFailed = true;
    else {
      if (open.get(k)) open.set(k, open.get(k) - 1);
      if (kind === "suite") suites.add(k);
      else if (kind === "passed") suite.passed++;
      else if (kind === "failed") suite.failed++;
    }
  }
  for (const [k, n] of open) if (!suites.has(k)) suite.notRun += n;
  if (suite.notRun > 0)
    suite.notes.push(`${name}: ${suite.notRun} tests it queued did not run to their end (the file was cut short)`);
  if (fileFailed && suite.failed === 0 && suite.notRun === 0) {
    suite.failed = 1;
    suite.notes.push(`${name}: the file failed outside its tests (a hook, or its bound)`);
  }
  return suite;
}

function main() {
  const [dir = "test-results", otherText = "0"] = process.argv.slice(2);
  const suites = [vitestCounts(dir)];
  const countsDir = join(dir, "counts");
  if (existsSync(countsDir)) {
    for (const file of readdirSync(countsDir)
      .filter((f) => f.endsWith(".counts"))
      .sort())
      suites.push(nodeTestCounts(join(countsDir, file), file.replace(/\.counts$/, "")));
  }
  const other = Number(otherText) || 0;
  let passed = 0;
  let failed = other;
  let notRun = 0;
  for (const s of suites) {
    passed += s.passed;
    failed += s.failed + s.notRun;
    notRun += s.notRun;
    console.log(`${s.name}: ${s.passed} passed, ${s.failed} failed${s.notRun > 0 ? `, ${s.notRun} never ran` : ""}`);
  }
  for (const s of suites) for (const note of s.notes) console.log(`note: ${note}`);
  if (other > 0) console.log(`note: ${other} other steps failed (each counted as one failure)`);
  if (notRun > 0) console.log(`note: ${notRun} tests that never ran are counted as failed`);
  console.log(`${passed} passed, ${failed} failed`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) main();
