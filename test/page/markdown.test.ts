/**
 * Which link targets the page's markdown keeps as links (public/lib/markdown.js), in Node: an
 * absolute http:, https: or mailto: URL; everything else (javascript:, data:, other schemes,
 * relative paths that would open the gateway's own origin) is drawn as its text.
 */
import { describe, expect, it } from "vitest";

// Imported by a path the type check does not follow: the module draws DOM, whose types the
// server's tsconfig (which checks test/) does not have; tsconfig.public.json checks it.
const MARKDOWN_MODULE = "../../public/lib/markdown.js";
const { isLinkable } = (await import(/* @vite-ignore */ MARKDOWN_MODULE)) as {
  isLinkable: (href: string | null) => boolean;
};

describe("the markdown's link rule", () => {
  it("keeps absolute http, https and mailto URLs, whatever their case", () => {
    for (const href of [
      "https://example.com/docs",
      "http://localhost:8787/",
      "HTTPS://EXAMPLE.COM",
      "mailto:team@example.com",
      "https://example.com/a?b=c#d",
    ]) {
      expect(isLinkable(href), href).toBe(true);
    }
  });

  it("drops script, data and every other scheme, also when hidden behind case, whitespace or control characters", () => {
    for (const href of [
      "javascript:alert(1)",
      "JavaScript:alert(1)",
      "java\nscript:alert(1)",
      "java\tscript:alert(1)",
      " javascript:alert(1)",
      "\u0000javascript:alert(1)",
      "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
      "vbscript:msgbox(1)",
      "file:///etc/passwd",
      "blob:https://example.com/uuid",
      "ftp://example.com/file",
      "tel:+123",
    ]) {
      expect(isLinkable(href), JSON.stringify(href)).toBe(false);
    }
  });

  it("drops relative and empty targets: they lead nowhere from a chat answer", () => {
    for (const href of ["README.md", "./src/index.ts", "/v1/me", "//evil.example/x", "#section", "", null]) {
      expect(isLinkable(href), JSON.stringify(href)).toBe(false);
    }
  });
});
