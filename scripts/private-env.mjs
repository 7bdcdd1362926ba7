// The env file `npm start` hands wrangler (scripts/start.mjs), kept off the disk: it is a named pipe
// (FIFO) in a directory only this user can read, and its text, secrets among them (a CLI Bridge
// token, a TANGLE_API_KEY), lives only in the start script's memory, written into the pipe for each
// reader as it opens it (wrangler reads the file when it starts, and again when wrangler.toml
// changes). A start killed outright (SIGKILL: nothing gets to clean up) leaves only an empty pipe
// behind, and the next start removes what starts no longer running left.
//
// Where a named pipe cannot be made (no `mkfifo`), the file is written as before (mode 0600) and
// removed when the start ends; a killed start's file is removed by the next start.
import { execFileSync } from "node:child_process";
import { closeSync, constants, lstatSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PREFIX = "gateway-dev-vars-";

/** Whether a process with this id is running (ours or not). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === "EPERM";
  }
}

/**
 * Removes what earlier starts left in the temp folder that no running start owns: each start's
 * directory is named after its process id. Answers the directories removed.
 * @returns {string[]}
 */
export function removeLeftovers(dir = tmpdir()) {
  const removed = [];
  for (const name of readdirSync(dir)) {
    const owner = new RegExp(`^${PREFIX}(\\d+)-`).exec(name);
    if (!owner || alive(Number(owner[1]))) continue;
    const path = join(dir, name);
    try {
      // Only this user's: another user's directory is theirs to remove (and not ours to read).
      if (lstatSync(path).uid !== process.getuid?.()) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}

/**
 * Makes the private env file holding `text`: its path, whether it is a pipe (nothing on disk), and
 * `close()`, which stops serving it and removes its directory.
 * @param {string} text
 */
export function privateEnvFile(text) {
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
  const path = join(dir, "dev.vars");
  let serving = true;
  let pipe = false;
  const close = () => {
    if (!serving) return;
    serving = false;
    if (pipe) {
      // The server's open of the pipe waits for a reader in a thread of its own, which the process
      // cannot exit past: a reader that opens and goes at once lets it through.
      try {
        closeSync(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
      } catch {
        // removed already
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    execFileSync("mkfifo", ["-m", "600", path], { stdio: "ignore" });
  } catch {
    try {
      writeFileSync(path, text, { mode: 0o600 });
    } catch (error) {
      close();
      throw error;
    }
    return { path, pipe: false, close };
  }
  pipe = true;
  void (async () => {
    while (serving) {
      let handle;
      try {
        // Waits (in a thread of its own) until a reader opens the pipe; then the whole text, and
        // the close that ends the reader's file.
        // (Never created: a pipe removed meanwhile must not become a file with the text in it.)
        handle = await open(path, constants.O_WRONLY);
        if (!serving) break;
        await handle.writeFile(text);
      } catch (error) {
        // A reader that went away midway (EPIPE): the next reader. The pipe removed: no more readers.
        if (!serving || /** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") break;
      } finally {
        await handle?.close().catch(() => {});
      }
      // Let the reader see the end of the file before the pipe has a writer again.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return { path, pipe: true, close };
}
