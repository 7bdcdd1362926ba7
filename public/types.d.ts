// Types the page's JSDoc needs that no package provides.

/** highlight.js's browser build (the package of that build ships no types). */
declare module "@highlightjs/cdn-assets/es/highlight.min.js" {
  const hljs: {
    highlight(code: string, options: { language: string; ignoreIllegals?: boolean }): { value: string };
    getLanguage(name: string): unknown;
  };
  export default hljs;
}

/** Embedding: defined before app.js loads, it signs the page in with the host's token. */
interface Window {
  AGENT_GATEWAY?: { getToken?: () => Promise<string>; baseUrl?: string };
}

/** The theme the page shows, set up before the first paint by public/theme.js (a classic script). */
interface Window {
  pageTheme?: { choice: () => "system" | "light" | "dark"; choose: (choice: "system" | "light" | "dark") => void };
}

/** The requests public/lib/early.js started before app.js ran, with the token they carry; their answers taken once. */
interface Window {
  pageEarly?: { token: string | null; answers: Map<string, Promise<Response>> };
}

/** A stylesheet a lazy chunk imports: its text, minified by the build (scripts/build-page.mjs, cssAsText). */
declare module "*.css" {
  const text: string;
  export default text;
}
