// How a run of bench/run.mjs went, section by section, and the exit code that says it (pure: run.mjs
// records what happened, this decides what it means; test/bench/outcome.test.ts).
//
// A section is `ok` (it ran to its end and reported no problem), `problems` (it ran to its end and
// reported problems: an event lost or repeated, a figure it could not measure, the runtime restarted
// under it; its figures are not to be taken as they are), `failed` (it threw, or passed its deadline:
// its figures are partial or missing) or `not run` (not asked for). The exit code is the sum of the
// values of the sections that are not `ok` and ran: 0 when every section that ran is ok.

/** The sections in the order they run, each with its exit-code value (one bit each). */
export const SECTIONS = [
  { name: "relay", bit: 1 },
  { name: "replay", bit: 2 },
  { name: "rows", bit: 4 },
  { name: "idle", bit: 8 },
  { name: "agents", bit: 16 },
  { name: "latency", bit: 32 },
  { name: "memory", bit: 64 },
  { name: "page-load", bit: 128 },
];
/**
 * Sections that share another's bit (an exit status has eight): `before` (BENCH_BEFORE_REF), the idle
 * figure's baseline on an older commit, `stall`, the other unpaced 10,000-word burst, replay's, and
 * `terminal`, a terminal's relay beside the sandbox's own socket, relay's.
 */
const SHARES = { before: "idle", stall: "replay", terminal: "relay" };
const BIT = Object.fromEntries(SECTIONS.map((s) => [s.name, s.bit]));
for (const [name, owner] of Object.entries(SHARES)) BIT[name] = BIT[owner];
/** Every section's name in the order they run (for the summary). */
const ORDER = [
  "relay",
  "replay",
  "stall",
  ...SECTIONS.slice(2, 6).map((s) => s.name),
  "memory",
  "terminal",
  "page-load",
  "before",
];

/**
 * A section's outcome from what was recorded while it ran: `error` (its exception's message, or
 * its deadline's), the problems reported meanwhile (its own, and the run's: its dev server's start,
 * a reload, a promise nobody awaited), its time, and whether it ran on a dev server started afresh
 * because the one before it had died.
 * @param {{ error?: string | null, problems?: string[], seconds?: number, freshServer?: boolean }} ran
 */
export function outcomeOf({ error = null, problems = [], seconds, freshServer = false }) {
  const status = error ? "failed" : problems.length ? "problems" : "ok";
  return {
    status,
    ...(seconds === undefined ? {} : { seconds }),
    ...(error ? { error } : {}),
    problems,
    ...(freshServer ? { freshServer } : {}),
  };
}

/**
 * The exit code of a run: the sum of the bits of the sections (by name) whose outcome is not ok.
 * @param {Record<string, { status: string }>} outcomes
 */
export function exitCode(outcomes) {
  let code = 0;
  for (const [name, o] of Object.entries(outcomes)) {
    if (o.status === "failed" || o.status === "problems") code |= BIT[name] ?? 0;
  }
  return code;
}

/** The sections an exit code names, in run order (what `echo $?` means). */
export function sectionsOfExitCode(code) {
  return SECTIONS.filter((s) => code & s.bit).map((s) => s.name);
}

/**
 * The lines of the summary that say how each section went: its status, its time, and what failed.
 * @param {Record<string, { status: string, seconds?: number, error?: string, problems: string[], servers?: number }>} outcomes
 */
export function outcomeLines(outcomes) {
  const out = ["", "sections: status, seconds, what went wrong"];
  for (const name of ORDER) {
    const o = outcomes[name];
    if (!o) continue;
    const what =
      o.status === "failed"
        ? `: ${o.error}${o.problems.length ? ` (and ${o.problems.length} problem${o.problems.length === 1 ? "" : "s"})` : ""}`
        : o.status === "problems"
          ? `: ${o.problems.length} problem${o.problems.length === 1 ? "" : "s"} (listed under PROBLEMS)`
          : "";
    const fresh = o.freshServer ? " (on a fresh dev server: the one before it had died)" : "";
    out.push(
      `  ${name.padEnd(10)} ${o.status.toUpperCase().padEnd(9)} ${String(o.seconds ?? "-").padStart(7)} s${fresh}${what}`,
    );
  }
  const code = exitCode(outcomes);
  out.push(
    `exit code ${code}${code ? `: ${sectionsOfExitCode(code).join(", ")} not ok` : ": every section that ran is ok"}`,
  );
  return out;
}

/**
 * What a failure says: its message, and its cause's code or message (`fetch failed` says nothing on
 * its own: its cause, ECONNRESET, ECONNREFUSED, "other side closed", does), at most 500 characters.
 */
export function failureText(err) {
  const cause = err?.cause ? ` (${err.cause.code ?? err.cause.message ?? err.cause})` : "";
  return `${err?.message ?? err}${cause}`.slice(0, 500);
}

/**
 * Runs a section's work: null when it ended within `deadlineMs`, else its failure: `{ message,
 * overdue, err }`, `overdue` when it had not ended by then (its work is abandoned, still running:
 * the caller stops what it started). Whatever it throws, synchronously or not, is its failure.
 * @param {() => unknown} run
 * @param {number} deadlineMs
 */
export async function ranWithin(run, deadlineMs) {
  const late = new Error(`did not end within ${deadlineMs / 1000} s (BENCH_SECTION_DEADLINE_S)`);
  let timer;
  try {
    await Promise.race([
      (async () => run())(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(late), deadlineMs);
      }),
    ]);
    return null;
  } catch (err) {
    return { message: failureText(err), overdue: err === late, err };
  } finally {
    clearTimeout(timer);
  }
}
