// `npm start` as a user runs it and stops it (README.md#run-it): `kill` of the npm process, a closed
// terminal (SIGHUP) and npm killed with SIGKILL each stop wrangler and its workerd too, and the
// private env file it hands wrangler never holds a secret on disk, even after a start killed
// outright, whose leftovers the next start removes. Run: node --test test/start/start.test.mjs
//
// Each case starts `npm start` in a scratch checkout (this tree's code, linked), in a process group
// of its own, with a secret of its own in the environment.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "../../scripts/devserver.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let checkout;
const groups = new Set();
const states = new Set();

before(() => {
  checkout = mkdtempSync(join(tmpdir(), "gateway-checkout-"));
  for (const name of ["src", "public", "node_modules", "tsconfig.json", "worker-configuration.d.ts"])
    symlinkSync(realpathSync(join(root, name)), join(checkout, name));
  for (const name of ["scripts", "wrangler.toml", "package.json"])
    cpSync(join(root, name), join(checkout, name), { recursive: true });
});

after(() => {
  // Whatever a failed case left running.
  for (const pgid of groups) signal(-pgid, "SIGKILL");
  for (const dir of [checkout, ...states]) if (dir) rmSync(dir, { recursive: true, force: true });
});

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

/** The processes of a process group (from /proc): id and command line. */
function groupOf(pgid) {
  const out = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid)
        out.push({
          pid: Number(pid),
          cmd: readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 120),
        });
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

/** The process ids of `npm start` and of the start script it runs. */
function startScriptOf(group) {
  return group.find((p) => p.cmd.includes("scripts/start.mjs"))?.pid;
}

/** `npm start` on a free port, in a process group of its own, with `secret` as its AUTH_JWT_SECRET; answers once it serves. */
async function npmStart(secret) {
  const port = await freePort();
  const persist = mkdtempSync(join(tmpdir(), "gateway-state-"));
  states.add(persist);
  const npm = spawn("npm", ["start"], {
    cwd: checkout,
    env: { ...process.env, PORT: String(port), PERSIST_TO: persist, INSPECTOR_PORT: "0", AUTH_JWT_SECRET: secret },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  groups.add(npm.pid);
  let output = "";
  npm.stdout.on("data", (d) => (output += d));
  npm.stderr.on("data", (d) => (output += d));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    assert.equal(npm.exitCode, null, `npm start exited:\n${output}`);
    assert.ok(i < 600, `npm start did not serve:\n${output}`);
    if (
      await fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { npm, pgid: npm.pid, base, output: () => output };
}

/** Waits until nothing of the group runs (at most `ms`); answers what still does. */
async function drained(pgid, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (groupOf(pgid).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  return groupOf(pgid);
}

const serves = (base) =>
  fetch(`${base}/healthz`).then(
    () => true,
    () => false,
  );

for (const [name, how] of [
  ["`kill` of the npm start process (SIGTERM)", (s) => signal(s.npm.pid, "SIGTERM")],
  ["a closed terminal (SIGHUP to the start script)", (s) => signal(startScriptOf(groupOf(s.pgid)), "SIGHUP")],
  ["npm killed with SIGKILL", (s) => signal(s.npm.pid, "SIGKILL")],
]) {
  it(`${name} stops the server: wrangler and workerd too, nothing left serving`, async () => {
    const started = await npmStart(`start-test-secret-${crypto.randomUUID()}`);
    assert.ok(
      groupOf(started.pgid).some((p) => p.cmd.includes("workerd")),
      "workerd runs in the start's group",
    );
    how(started);
    assert.deepEqual(await drained(started.pgid), []);
    assert.equal(await serves(started.base), false);
  });
}

it("the private env file never holds a secret on disk, not even after a start killed outright; the next start removes what it left", async () => {
  const mark = crypto.randomUUID();
  const started = await npmStart(`start-test-secret-${mark}`);
  const pid = startScriptOf(groupOf(started.pgid));
  const mine = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`gateway-dev-vars-${pid}-`));
  assert.equal(mine().length, 1);
  const file = join(tmpdir(), mine()[0], "dev.vars");
  // Not a file with the values in it: a pipe the start script writes into as wrangler reads.
  assert.equal(lstatSync(file).isFIFO(), true);
  assert.equal(lstatSync(file).size, 0);
  // Killed outright, the start script and everything it started: nothing gets to clean up.
  signal(-started.pgid, "SIGKILL");
  assert.deepEqual(await drained(started.pgid), []);
  assert.equal(mine().length, 1, "what the killed start left is there");
  const left = join(tmpdir(), mine()[0]);
  for (const name of readdirSync(left)) assert.equal(lstatSync(join(left, name)).size, 0, `${name} holds nothing`);
  // The next start removes it.
  const next = await npmStart(`start-test-secret-${crypto.randomUUID()}`);
  assert.deepEqual(mine(), []);
  signal(next.npm.pid, "SIGTERM");
  assert.deepEqual(await drained(next.pgid), []);
});
