/**
 * The small project a new sandbox starts with (docs/emulator.md "The workspace"), so the scripted
 * agent's edits land on real content: a README (what the scripted `read` returns), a package.json,
 * `src/server.ts` holding exactly what the `[edits]` script's edit replaces, `src/http.ts`, and a
 * binary `assets/logo.png` (a PNG signature and header, padded: NUL bytes in it). Pure.
 */
import { EDIT_OLD_STRING } from "./edits";

const README = "# Demo project\n\nA small service with a test suite.\n";

const PACKAGE_JSON = `${JSON.stringify(
  { name: "demo-project", version: "1.0.0", private: true, type: "module", scripts: { test: "node --test" } },
  null,
  2,
)}\n`;

const SERVER = `${EDIT_OLD_STRING}\n`;

const HTTP = [
  "/** Serves every request with the handler given. */",
  "export function serve(handler: (request: Request) => Response): void {",
  '  globalThis.addEventListener?.("fetch", (event: any) => event.respondWith(handler(event.request)));',
  "}",
  "",
].join("\n");

/** A PNG signature and IHDR header (16×16, RGBA), padded to 300 bytes with a fixed pattern. */
function logo(): Uint8Array {
  const head = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x10, 0x00, 0x00, 0x00, 0x10, 0x08, 0x06, 0x00, 0x00, 0x00,
  ];
  const bytes = new Uint8Array(300);
  bytes.set(head);
  for (let i = head.length; i < bytes.length; i++) bytes[i] = (i * 37) % 251;
  return bytes;
}

const text = (s: string) => new TextEncoder().encode(s);

/** The seeded files, by path relative to the workspace root. */
export function seedFiles(): Array<{ path: string; bytes: Uint8Array }> {
  return [
    { path: "README.md", bytes: text(README) },
    { path: "package.json", bytes: text(PACKAGE_JSON) },
    { path: "src/server.ts", bytes: text(SERVER) },
    { path: "src/http.ts", bytes: text(HTTP) },
    { path: "assets/logo.png", bytes: logo() },
  ];
}

/** The bytes of a `binary` change: `n` bytes of a fixed pattern, a NUL every 16th. */
export function binaryBytes(n: number): Uint8Array {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = i % 16 === 0 ? 0 : (i * 31 + 7) % 256;
  return bytes;
}
