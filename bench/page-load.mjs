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
//   - requests and bytes: what the load fetched (304s included; bytes as received, compressed or not).
// Its baseline, with PAGE_LOAD_BEFORE_REF (e.g. 0e361c4): the same measurement against a server of
// that older commit (a git worktree in the temp dir, removed afterwards), in the same run.
import { chromium } from "playwright-core";
import { atCommit, env, num, startBenchServer, tag, untilInterrupted } from "./harness.mjs";

export const config = {
  PAGE_LOAD_RUNS: num("PAGE_LOAD_RUNS", 5),
  PAGE_LOAD_LATENCY_MS: num("PAGE_LOAD_LATENCY_MS", 400),
  PAGE_LOAD_BYTES_PER_S: num("PAGE_LOAD_BYTES_PER_S", 50_000),
  PAGE_LOAD_BEFORE_REF: env.PAGE_LOAD_BEFORE_REF ?? "",
};
const { PAGE_LOAD_RUNS, PAGE_LOAD_LATENCY_MS, PAGE_LOAD_BYTES_PER_S, PAGE_LOAD_BEFORE_REF } = config;

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
    seen.set(e.requestId, { path: new URL(e.request.url).pathname, start: Math.round((e.timestamp - t0) * 1000), status: null, end: null, fromCache: false, bytes: 0 });
  };
  const onResponse = (e) => {
    const entry = seen.get(e.requestId);
    if (entry) Object.assign(entry, { status: e.response.status, fromCache: Boolean(e.response.fromDiskCache || e.response.fromMemoryCache) });
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
    return {
      fcp: fcp === null ? null : Math.round(fcp),
      live: Math.round(Number(liveMs)),
      requests: entries.length,
      fromCache: entries.filter((e) => e.fromCache).length,
      notModified: entries.filter((e) => e.wireStatus === 304).length,
      bytes: entries.reduce((sum, e) => sum + e.bytes, 0),
      timeline: entries,
    };
  } finally {
    cdp.off("Network.requestWillBeSent", onRequest);
    cdp.off("Network.responseReceivedExtraInfo", onExtra);
    cdp.off("Network.responseReceived", onResponse);
    cdp.off("Network.loadingFinished", onFinished);
  }
}

/** PAGE_LOAD_RUNS cold and warm loads against the server at `base`: each figure's runs and median. */
async function measure(base) {
  const browser = await chromium.launch({
    executablePath: env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const undo = untilInterrupted(() => browser.close());
  const runs = [];
  try {
    for (let i = 0; i < PAGE_LOAD_RUNS; i++) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 860 } });
      const page = await context.newPage();
      // Signed in, unthrottled, with a conversation that has one finished turn.
      const cid = `page-load-${tag}-${i}`;
      await page.goto(`${base}/?c=${cid}`);
      await page.getByLabel("Your name").fill(`page-load-${i}`);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator("#connection[data-state=live]").waitFor();
      await page.locator("#composer-input").fill("An answer to reload [words:60]");
      await page.keyboard.press("Enter");
      await page.locator("li.turn .badge", { hasText: "done" }).waitFor({ timeout: 60_000 });
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.enable");
      await cdp.send("Network.clearBrowserCache");
      await page.goto("about:blank");
      await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: PAGE_LOAD_LATENCY_MS, downloadThroughput: PAGE_LOAD_BYTES_PER_S, uploadThroughput: PAGE_LOAD_BYTES_PER_S });
      const url = `${base}/?c=${cid}`;
      const cold = await load(page, cdp, url);
      await page.goto("about:blank");
      const warm = await load(page, cdp, url);
      runs.push({ cold, warm });
      await context.close();
    }
  } finally {
    await browser.close();
    undo();
  }
  const summary = (which) => Object.fromEntries(["fcp", "live", "requests", "fromCache", "notModified", "bytes"].map((k) => [k, median(runs.map((r) => r[which][k] ?? Number.NaN))]));
  return { runs, cold: summary("cold"), warm: summary("warm") };
}

/** This tree's figures, and with PAGE_LOAD_BEFORE_REF that commit's, measured the same way. */
export async function pageLoad({ base, results, problems }) {
  results.pageLoad = { latencyMs: PAGE_LOAD_LATENCY_MS, bytesPerSecond: PAGE_LOAD_BYTES_PER_S, runs: PAGE_LOAD_RUNS, now: await measure(base) };
  if (!PAGE_LOAD_BEFORE_REF) return;
  await atCommit(PAGE_LOAD_BEFORE_REF, problems, async (dir, sameDeps) => {
    const server = await startBenchServer({ checkout: dir, timeoutMs: 90_000 });
    const undo = untilInterrupted(() => server.stop());
    try {
      results.pageLoad.before = { ref: PAGE_LOAD_BEFORE_REF, sameDeps, ...(await measure(server.base)) };
    } finally {
      await server.stopped();
      undo();
    }
  });
}

export function report(results) {
  const r = results.pageLoad;
  if (!r) return [];
  const line = (name, m) =>
    `  ${name}: cold fcp ${m.cold.fcp} ms, live ${m.cold.live} ms (${m.cold.requests} requests, ${m.cold.bytes} B) · warm fcp ${m.warm.fcp} ms, live ${m.warm.live} ms (${m.warm.requests} requests, ${m.warm.fromCache} from the cache, ${m.warm.notModified} answered 304, ${m.warm.bytes} B)`;
  const out = ["", `page load at ${r.latencyMs} ms latency, ${r.bytesPerSecond} B/s, median of ${r.runs}:`, line("this tree", r.now)];
  if (r.before) out.push(line(`before (${r.before.ref})`, r.before));
  return out;
}
