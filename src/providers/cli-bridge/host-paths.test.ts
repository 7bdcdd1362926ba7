import { afterEach, describe, expect, it, vi } from "vitest";
import { HOST_PATH, scrubbed, withoutHostPaths } from "./host-paths";

describe("host paths in a CLI Bridge's messages", () => {
  afterEach(() => vi.restoreAllMocks());

  it("replaces each absolute path, keeping the file it names", () => {
    expect(
      withoutHostPaths("backend pi cannot read /home/ops/.pi/agent/models.json before isolated inference starts"),
    ).toBe(`backend pi cannot read ${HOST_PATH}/models.json before isolated inference starts`);
    expect(
      withoutHostPaths(
        "backend pi model tangle-router/x has no explicit entry in /srv/pi/models.json; the bridge refuses",
      ),
    ).toBe(`backend pi model tangle-router/x has no explicit entry in ${HOST_PATH}/models.json; the bridge refuses`);
    expect(withoutHostPaths('spawn failed: ENOENT "/opt/bin/pi" in /home/alice/repo.')).toBe(
      `spawn failed: ENOENT "${HOST_PATH}" in ${HOST_PATH}.`,
    );
    expect(
      withoutHostPaths("see ~/.pi/agent/auth.json, C:\\Users\\ops\\pi\\models.json and file:///etc/bridge/env"),
    ).toBe(`see ${HOST_PATH}/auth.json, ${HOST_PATH}/models.json and ${HOST_PATH}`);
    expect(withoutHostPaths("cwd (/home/ops/work) is outside the jail: /home/ops/work/.agent-home")).toBe(
      `cwd (${HOST_PATH}) is outside the jail: ${HOST_PATH}`,
    );
  });

  it("keeps what is not a path of the host: model routes, the bridge's routes, URLs, ratios", () => {
    for (const text of [
      "no model route pi/tangle-router/fake-echo",
      "use /v1/chat/completions for sandbox execution",
      "fetch http://127.0.0.1:3344/health failed",
      "host-executor: acquire timeout after 60000ms (in_flight=4/4, queued=0)",
      "a / b and //",
    ]) {
      expect(withoutHostPaths(text), text).toBe(text);
    }
  });

  it("logs the whole message when it named any, and nothing otherwise", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    expect(scrubbed("no path here", "run r")).toBe("no path here");
    expect(warn).not.toHaveBeenCalled();
    expect(scrubbed("cannot read /home/ops/models.json", "run r")).toBe(`cannot read ${HOST_PATH}/models.json`);
    expect(warn).toHaveBeenCalledOnce();
    expect(String(warn.mock.calls[0]![0])).toContain("/home/ops/models.json");
  });
});
