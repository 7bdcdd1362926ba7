/**
 * File paths of the bridge's host, taken out of what users see. Pure.
 *
 * A CLI Bridge's errors name files on its own machine (`backend pi cannot read
 * /home/ops/.pi/agent/models.json …`): a user of the gateway has no business with them, and they
 * tell anyone how the host is laid out. Every message this provider passes on from the bridge (a
 * turn's failure, a refusal's reason, a warning) goes through `withoutHostPaths`: each absolute
 * path (`/…`, `~/…`, `C:\…`, `file://…`) becomes `<path on the bridge>`, followed by its file name
 * where it ends in one (`<path on the bridge>/models.json`), so the message still says which file.
 * The bridge's own routes (`/v1/…`) are not paths of its host and stay. The whole message is kept
 * in the server log (`scrubbed`).
 */

export const HOST_PATH = "<path on the bridge>";

/**
 * An absolute path: not inside a word, a URL or a relative path (`pi/tangle-router/…`), at least
 * one segment long; it ends at whitespace, a quote or a closing bracket, and before a colon,
 * semicolon or comma that ends a clause.
 */
const PATH = new RegExp(
  [
    /(?<![\w.~:/\\-])/.source, // not inside a word, a URL or a relative path
    /(?:file:\/\/)?(?:~|[A-Za-z]:)?[/\\](?![/\\\s])/.source, // its root
    /(?:[^\s"'`<>()[\]{}|,;:]|[:;,](?![\s"'`)\]]|$))+/.source, // the rest
  ].join(""),
  "g",
);
/** A file name at the end of a path: an extension of 1–8 letters or digits. */
const FILE_NAME = /[/\\]([^/\\]+\.[A-Za-z0-9]{1,8})$/;

/** `text` with every host path replaced (see the module comment). */
export function withoutHostPaths(text: string): string {
  return text.replace(PATH, (path) => {
    if (/^\/v\d+\//.test(path)) return path;
    const file = FILE_NAME.exec(path.replace(/[.:]+$/, ""));
    const trailing = /[.:]+$/.exec(path)?.[0] ?? "";
    return `${HOST_PATH}${file ? `/${file[1]}` : ""}${trailing}`;
  });
}

/**
 * `text` without host paths; when it had any, the whole of it is logged for the operator
 * (`where`: which message it was), never shown.
 */
export function scrubbed(text: string, where: string): string {
  const shown = withoutHostPaths(text);
  if (shown !== text) {
    const msg = "a CLI Bridge message named paths on its host: shown without them";
    console.warn(JSON.stringify({ msg, where, message: text }));
  }
  return shown;
}
