import { describe, expect, it } from "vitest";
import { checkTarget } from "./target";

const verdict = (url: string, local = false) => {
  const v = checkTarget(url, local);
  return v.ok ? "ok" : v.reason;
};

describe("webhook targets when deployed", () => {
  it("accepts a public https URL, with a port and a path", () => {
    expect(verdict("https://hooks.example.com/agent?x=1")).toBe("ok");
    expect(verdict("https://203.0.114.9:8443/in")).toBe("ok");
    expect(verdict("https://[2606:4700::1111]/in")).toBe("ok");
  });

  it("refuses anything but https, credentials and fragments", () => {
    expect(verdict("http://hooks.example.com/")).toBe("must be https");
    expect(verdict("ws://hooks.example.com/")).toBe("must be https");
    expect(verdict("file:///etc/passwd")).toBe("must be https");
    expect(verdict("https://a:b@hooks.example.com/")).toContain("credentials");
    expect(verdict("https://hooks.example.com/#x")).toContain("fragment");
    expect(verdict("hooks.example.com/in")).toBe("is not an absolute URL");
  });

  it.each([
    ["https://127.0.0.1/", "loopback"],
    ["https://127.9.9.9/", "loopback"],
    ["https://localhost/", "loopback"],
    ["https://LOCALHOST./", "loopback"],
    ["https://api.localhost/", "loopback"],
    ["https://[::1]/", "loopback"],
    ["https://[::ffff:127.0.0.1]/", "loopback"],
    ["https://0x7f.1/", "loopback"],
    ["https://2130706433/", "loopback"],
    ["https://0177.0.0.1/", "loopback"],
    ["https://10.0.0.1/", "private"],
    ["https://172.16.5.4/", "private"],
    ["https://172.31.255.255/", "private"],
    ["https://192.168.1.1/", "private"],
    ["https://100.64.0.1/", "carrier-grade NAT"],
    ["https://169.254.169.254/", "metadata"],
    ["https://169.254.1.1/", "link-local"],
    ["https://0.0.0.0/", "unspecified"],
    ["https://224.0.0.1/", "multicast"],
    ["https://255.255.255.255/", "broadcast"],
    ["https://192.0.2.10/", "documentation"],
    ["https://[::]/", "unspecified"],
    ["https://[fc00::1]/", "unique local"],
    ["https://[fd00:ec2::254]/", "unique local"],
    ["https://[fe80::1]/", "link-local"],
    ["https://[ff02::1]/", "multicast"],
    ["https://[2001:db8::1]/", "documentation"],
    ["https://[::ffff:10.0.0.1]/", "private"],
    ["https://[::ffff:a9fe:a9fe]/", "metadata"],
    ["https://[64:ff9b::a00:1]/", "private"],
    ["https://[2002:c0a8:101::1]/", "private"],
    ["https://[::10.0.0.1]/", "private"],
    ["https://intranet/", "fully qualified"],
    ["https://printer.local/", "local-network"],
    ["https://db.internal/", "local-network"],
    ["https://metadata.google.internal/", "local-network"],
    ["https://nas.home.arpa/", "local-network"],
    ["https://1.0.0.10.in-addr.arpa/", "local-network"],
  ])("refuses %s (%s)", (url, why) => {
    expect(verdict(url)).toContain(why);
  });

  it("a look-alike of a refused range is not refused", () => {
    expect(verdict("https://172.32.0.1/")).toBe("ok");
    expect(verdict("https://11.0.0.1/")).toBe("ok");
    expect(verdict("https://169.255.0.1/")).toBe("ok");
    expect(verdict("https://local.example.com/")).toBe("ok");
    expect(verdict("https://localhost.example.com/")).toBe("ok");
  });
});

describe("webhook targets in local development", () => {
  it("allows http and https to loopback only", () => {
    expect(verdict("http://127.0.0.1:9999/hook", true)).toBe("ok");
    expect(verdict("http://localhost:9999/hook", true)).toBe("ok");
    expect(verdict("http://[::1]:9999/hook", true)).toBe("ok");
    expect(verdict("https://localhost/hook", true)).toBe("ok");
    expect(verdict("http://hooks.example.com/", true)).toContain("only to a loopback address");
    expect(verdict("http://10.0.0.1/", true)).toContain("only to a loopback address");
  });

  it("still refuses private, link-local and metadata addresses", () => {
    expect(verdict("https://10.0.0.1/", true)).toContain("private");
    expect(verdict("https://169.254.169.254/", true)).toContain("metadata");
    expect(verdict("https://[fe80::1]/", true)).toContain("link-local");
  });
});
