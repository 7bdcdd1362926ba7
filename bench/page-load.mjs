// Benchmark `page-load`: the chat page opened over a slow link in Debian's Chromium (playwright-core,
// /usr/bin/chromium or CHROMIUM_PATH), throttled by the DevTools protocol's
// Network.emulateNetworkConditions: PAGE_LOAD_LATENCY_MS (400) added to every request and
// PAGE_LOAD_BYTES_PER_S (50,000 = 400 kbit/s) down and up. For each of PAGE_LOAD_RUNS (5) runs, a
// fresh browser profile signs in unthrottled (dev login), then opens a conversation that has one
// finished turn, throttled: cold (the HTTP cache cleared) and then warm (the same URL again, cache
// kept, as when a tab is opened again). Figures, each the median of the runs, from the
// navigation's start:
//   - fcp: the first contentful paint (the `paint` timing entry);
//   - live: the page is usable — the header's connection pill says "live" (the page has the
//     conversation and follows its stream) and the composer is enabled;
//   - requests, how many came from the cache and how many were answered 304, and the bytes
//     received (headers included, bodies as sent: compressed).
// PAGE_LOAD_PROTOCOL: "h2" (the default) puts an HTTP/2 front before the dev server, as a
// deployment serves the page (below); "h1" loads from `wrangler dev` itself, HTTP/1.1.
// Its baseline, with PAGE_LOAD_BEFORE_REF (e.g. 0e361c4): the same measurement against a server of
// that older commit (a git worktree in the temp dir, removed afterwards), in the same run, the
// runs of both interleaved. Each load's request timeline (start, end, status on the wire, from the
// cache) is kept in results.pageLoad.*.runs (bench/results/latest.json).
// Static requests and bytes are the page's files (every request but the API's: /v1/…, /healthz), the
// issue 38 item 1 targets beside them (PAGE_LOAD_TARGETS).
//
// It runs on servers of its own (this tree's and the before-ref's, started here), not on the run's
// server: after `latency`'s 300 viewers wrangler dev's proxy can be out of descriptors ("Too many open
// files", bench/notes/2026-12-03-figures.md), and every load then timed out. A load that fails is tried
// once more; a section that cannot measure (a server that does not start, a browser that does not
// launch, every run failing) reports why in results.pageLoad.error and the run's problems, and the
// run goes on with its other sections.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { atCommit, env, num, sleep, startBenchServer, tag, untilInterrupted } from "./harness.mjs";

export const config = {
  PAGE_LOAD_RUNS: num("PAGE_LOAD_RUNS", 5),
  PAGE_LOAD_LATENCY_MS: num("PAGE_LOAD_LATENCY_MS", 400),
  PAGE_LOAD_BYTES_PER_S: num("PAGE_LOAD_BYTES_PER_S", 50_000),
  PAGE_LOAD_BEFORE_REF: env.PAGE_LOAD_BEFORE_REF ?? "",
  PAGE_LOAD_PROTOCOL: env.PAGE_LOAD_PROTOCOL ?? "h2",
};
const { PAGE_LOAD_RUNS, PAGE_LOAD_LATENCY_MS, PAGE_LOAD_BYTES_PER_S, PAGE_LOAD_BEFORE_REF, PAGE_LOAD_PROTOCOL } =
  config;

/** Issue 38 item 1: at 400 ms and 50,000 B/s, over HTTP/2. */
export const PAGE_LOAD_TARGETS = { coldLiveMs: 3000, warmLiveMs: 1200, staticRequests: 6, staticBytes: 70_000 };

/** A request of the API (the rest are the page's static files). */
const isApi = (/** @type {string} */ path) => path.startsWith("/v1/") || path === "/healthz";

/** Headers of one hop only, never forwarded. */
const HOP = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "proxy-connection",
  "http2-settings",
  "host",
  "te",
]);

/**
 * An HTTP/2 front (TLS, a throwaway self-signed certificate) to the dev server at `upstream`, which
 * speaks HTTP/1.1 only: Chromium opens at most six HTTP/1.1 connections to a host, so over
 * `wrangler dev` itself thirty modules take five rounds of the link's latency, where a deployment
 * (HTTP/2 or 3) sends them on one connection at once. Requests go on to the dev server as they
 * came (its loopback Host, so dev login still answers), responses stream back (the event stream
 * too).
 */
async function http2Front(upstream, tls) {
  const up = new URL(upstream);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http2.createSecureServer(tls, (req, res) => {
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => !name.startsWith(":") && !HOP.has(name)),
    );
    const forwarded = http.request(
      {
        host: up.hostname,
        port: up.port,
        method: req.method,
        path: req.url,
        headers: { ...headers, host: up.host },
        agent,
      },
      (answer) => {
        res.writeHead(
          answer.statusCode ?? 502,
          Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !HOP.has(name))),
        );
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    res.on("close", () => forwarded.destroy());
    req.pipe(forwarded);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `https://127.0.0.1:${server.address().port}`,
    close: () => {
      agent.destroy();
      server.close();
    },
  };
}

/**
 * A throwaway self-signed certificate for 127.0.0.1, and its public key's SHA-256 (base64), which
 * Chromium is told to trust (--ignore-certificate-errors-spki-list): a certificate error would
 * also keep responses out of its HTTP cache, and the warm load would not be one.
 */
function certificate() {
  const dir = mkdtempSync(join(tmpdir(), "page-load-tls-"));
  try {
    const key = join(dir, "key.pem");
    const cert = join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-out",
        cert,
        "-days",
        "1",
        "-subj",
        "/CN=127.0.0.1",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { stdio: "ignore" },
    );
    const spki = execFileSync("sh", [
      "-c",
      `openssl x509 -in "${cert}" -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`,
    ])
      .toString()
      .trim();
    return { key: readFileSync(key), cert: readFileSync(cert), spki };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** One throttled load of `url` in `page`: fcp, live (ms from navigation start), requests, bytes, 304s. */
async function load(page, cdp, url) {
  const seen = new Map();
  let t0 = null;
  const onRequest = (e) => {
    t0 ??= e.timestamp;
    seen.set(e.requestId, {
      path: new URL(e.request.url).pathname,
      start: Math.round((e.timestamp - t0) * 1000),
      status: null,
      end: null,
      fromCache: false,
      bytes: 0,
    });
  };
  const onResponse = (e) => {
    const entry = seen.get(e.requestId);
    if (entry)
      Object.assign(entry, {
        status: e.response.status,
        fromCache: Boolean(e.response.fromDiskCache || e.response.fromMemoryCache),
      });
  };
  const onFinished = (e) => {
    const entry = seen.get(e.requestId);
    if (entry) Object.assign(entry, { bytes: e.encodedDataLength, end: Math.round((e.timestamp - t0) * 1000) });
  };
  const onExtra = (e) => {
    const entry = seen.get(e.requestId);
    if (entry) entry.wireStatus = e.statusCode;
  };
  cdp.on("Network.requestWillBeSent", onRequest);
  cdp.on("Network.responseReceivedExtraInfo", onExtra);
  cdp.on("Network.responseReceived", onResponse);
  cdp.on("Network.loadingFinished", onFinished);
  try {
    await page.goto(url, { waitUntil: "commit", timeout: 120_000 });
    const live = await page.waitForFunction(
      () => {
        const pill = document.getElementById("connection");
        const input = /** @type {HTMLTextAreaElement | null} */ (document.getElementById("composer-input"));
        const app = document.getElementById("app");
        return pill?.dataset.state === "live" && app && !app.hidden && input && !input.disabled && performance.now();
      },
      undefined,
      { polling: "raf", timeout: 120_000 },
    );
    const liveMs = await live.jsonValue();
    const fcp = await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null);
    const entries = [...seen.values()];
    const files = entries.filter((e) => !isApi(e.path));
    return {
      fcp: fcp === null ? null : Math.round(fcp),
      live: Math.round(Number(liveMs)),
      requests: entries.length,
      fromCache: entries.filter((e) => e.fromCache).length,
      notModified: entries.filter((e) => e.wireStatus === 304).length,
      bytes: entries.reduce((sum, e) => sum + e.bytes, 0),
      // The page's files: requested, of them over the network (not from the cache), and their bytes.
      staticRequests: files.length,
      staticFetched: files.filter((e) => !e.fromCache).length,
      staticBytes: files.reduce((sum, e) => sum + e.bytes, 0),
      timeline: entries,
    };
  } finally {
    cdp.off("Network.requestWillBeSent", onRequest);
    cdp.off("Network.responseReceivedExtraInfo", onExtra);
    cdp.off("Network.responseReceived", onResponse);
    cdp.off("Network.loadingFinished", onFinished);
  }
}

/** One run against the server at `base`: a fresh profile, signed in, its conversation loaded cold then warm. */
async function oneRun(browser, base, name) {
  const context = await browser.newContext({ viewport: { width: 1200, height: 860 }, ignoreHTTPSErrors: true });
  try {
    const page = await context.newPage();
    // Signed in, unthrottled, with a conversation that has one finished turn.
    const cid = `page-load-${tag}-${name}`;
    await page.goto(`${base}/?c=${cid}`);
    await page.getByLabel("Your name").fill(`page-load-${name}`);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.locator("#connection[data-state=live]").waitFor();
    await page.locator("#composer-input").fill("An answer to reload [words:60]");
    await page.keyboard.press("Enter");
    await page.locator("li.turn .badge", { hasText: "done" }).waitFor({ timeout: 60_000 });
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.clearBrowserCache");
    await page.goto("about:blank");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: PAGE_LOAD_LATENCY_MS,
      downloadThroughput: PAGE_LOAD_BYTES_PER_S,
      uploadThroughput: PAGE_LOAD_BYTES_PER_S,
    });
    const url = `${base}/?c=${cid}`;
    const cold = await load(page, cdp, url);
    await page.goto("about:blank");
    const warm = await load(page, cdp, url);
    return { cold, warm };
  } finally {
    await context.close();
  }
}

/** Each figure's median over the runs that measured, cold and warm; `failed`: the runs that did not. */
function summary(runs) {
  const done = runs.filter((r) => !r.error);
  const of = (which) =>
    Object.fromEntries(
      [
        "fcp",
        "live",
        "requests",
        "fromCache",
        "notModified",
        "bytes",
        "staticRequests",
        "staticFetched",
        "staticBytes",
      ].map((k) => [k, done.length ? median(done.map((r) => r[which][k] ?? Number.NaN)) : null]),
    );
  return { runs, failed: runs.length - done.length, cold: of("cold"), warm: of("warm") };
}

/** One run, tried again once if it fails (a load that timed out on a busy machine); its error if both did. */
async function runTwice(browser, base, name) {
  let error;
  for (const attempt of [1, 2]) {
    try {
      return await oneRun(browser, base, `${name}-${attempt}`);
    } catch (err) {
      error = err;
      console.error(`bench: page-load run ${name} (attempt ${attempt}) failed: ${err.message.split("\n")[0]}`);
      await sleep(2000);
    }
  }
  return { error: String(error?.message ?? error).split("\n")[0] };
}

/**
 * PAGE_LOAD_RUNS runs against each server of `targets` (name → base URL), interleaved (one run of
 * each in turn, the order alternating), so a change in the machine's load falls on all alike.
 */
async function measure(servers) {
  const tls = PAGE_LOAD_PROTOCOL === "h2" ? certificate() : null;
  const fronts = tls ? await Promise.all(Object.values(servers).map((base) => http2Front(base, tls))) : [];
  const targets =
    PAGE_LOAD_PROTOCOL === "h2" ? Object.fromEntries(Object.keys(servers).map((n, i) => [n, fronts[i].base])) : servers;
  const browser = await chromium.launch({
    executablePath: env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...(tls ? [`--ignore-certificate-errors-spki-list=${tls.spki}`] : []),
    ],
  });
  const undo = untilInterrupted(() => {
    browser.close();
    fronts.forEach((f) => f.close());
  });
  const names = Object.keys(targets);
  const runs = Object.fromEntries(names.map((n) => [n, []]));
  try {
    for (let i = 0; i < PAGE_LOAD_RUNS; i++) {
      for (const name of i % 2 ? [...names].reverse() : names)
        runs[name].push(await runTwice(browser, targets[name], `${name}-${i}`));
    }
  } finally {
    await browser.close();
    fronts.forEach((f) => f.close());
    undo();
  }
  return Object.fromEntries(names.map((n) => [n, summary(runs[n])]));
}

/**
 * This tree's figures, and with PAGE_LOAD_BEFORE_REF that commit's, measured the same way and interleaved,
 * each on a dev server of its own. Never throws: what stopped it is results.pageLoad.error and a problem.
 */
export async function pageLoad({ results, problems }) {
  const settings = {
    protocol: PAGE_LOAD_PROTOCOL,
    latencyMs: PAGE_LOAD_LATENCY_MS,
    bytesPerSecond: PAGE_LOAD_BYTES_PER_S,
    runs: PAGE_LOAD_RUNS,
    targets: PAGE_LOAD_TARGETS,
  };
  /** @type {Array<{ stopped: () => Promise<void>, output: () => string }>} */
  const servers = [];
  const start = async (options) => {
    const server = await startBenchServer({ timeoutMs: 180_000, ...options });
    servers.push(server);
    return server;
  };
  const undo = untilInterrupted(() => servers.forEach((s) => s.stop()));
  try {
    const now = await start();
    if (!PAGE_LOAD_BEFORE_REF) {
      results.pageLoad = { ...settings, ...(await measure({ now: now.base })) };
    } else {
      await atCommit(PAGE_LOAD_BEFORE_REF, problems, async (dir, sameDeps) => {
        const before = await start({ checkout: dir });
        try {
          const measured = await measure({ now: now.base, before: before.base });
          results.pageLoad = {
            ...settings,
            now: measured.now,
            before: { ref: PAGE_LOAD_BEFORE_REF, sameDeps, ...measured.before },
          };
        } finally {
          // Stopped before its checkout is removed.
          await before.stopped();
        }
      });
    }
    for (const [name, m] of Object.entries(results.pageLoad)) {
      if (!m?.runs) continue;
      if (m.failed)
        problems.push(
          `page-load ${name}: ${m.failed} of ${m.runs.length} runs failed (${m.runs.find((r) => r.error)?.error})`,
        );
      if (m.failed === m.runs.length) results.pageLoad.error = `every run of ${name} failed`;
    }
  } catch (err) {
    const tail = servers.map((s) => s.output().slice(-1500)).join("\n---\n");
    results.pageLoad = { ...settings, ...results.pageLoad, error: String(err?.message ?? err).split("\n")[0] };
    problems.push(`page-load did not measure: ${results.pageLoad.error}`);
    console.error(`bench: page-load failed: ${err?.stack ?? err}\n--- its servers' output (tail) ---\n${tail}`);
  } finally {
    await Promise.all(servers.map((s) => s.stopped()));
    undo();
  }
}

/** Whether a figure meets its target: "met", "**not met**", or "–" when it was not measured. */
const verdict = (value, target) =>
  value === null || Number.isNaN(value) ? "–" : value <= target ? "met" : "**not met**";

export function report(results) {
  const r = results.pageLoad;
  if (!r) return [];
  const line = (name, m) =>
    m.cold.live === null
      ? `  ${name}: no run measured`
      : `  ${name}: cold fcp ${m.cold.fcp} ms, live ${m.cold.live} ms (${m.cold.requests} requests, ${m.cold.bytes} B; static ${m.cold.staticRequests} requests, ${m.cold.staticBytes} B) · warm fcp ${m.warm.fcp} ms, live ${m.warm.live} ms (${m.warm.requests} requests, ${m.warm.fromCache} from the cache, ${m.warm.notModified} answered 304, ${m.warm.bytes} B; static ${m.warm.staticFetched} of ${m.warm.staticRequests} over the network)${m.failed ? ` · ${m.failed} runs failed` : ""}`;
  const out = [
    "",
    `page load over ${r.protocol === "h2" ? "HTTP/2" : "HTTP/1.1"} at ${r.latencyMs} ms latency, ${r.bytesPerSecond} B/s, median of ${r.runs}:`,
  ];
  if (r.error) out.push(`  FAILED: ${r.error}`);
  if (r.now) out.push(line("this tree", r.now));
  if (r.before?.cold) out.push(line(`before (${r.before.ref})`, r.before));
  if (r.now?.cold) {
    const t = r.targets ?? PAGE_LOAD_TARGETS;
    const c = r.now.cold;
    out.push(
      `  targets (issue 38 item 1): cold live ≤ ${t.coldLiveMs} ms ${verdict(c.live, t.coldLiveMs)}, warm live ≤ ${t.warmLiveMs} ms ${verdict(r.now.warm.live, t.warmLiveMs)}, static requests ≤ ${t.staticRequests} ${verdict(c.staticRequests, t.staticRequests)}, static bytes ≤ ${t.staticBytes} ${verdict(c.staticBytes, t.staticBytes)}`,
    );
  }
  return out;
}
