/**
 * Member names that must never reach an object as keys (`__proto__`, `constructor`, `prototype`):
 * JSON.parse leaves them as own properties, and a later copy or merge can turn them into prototype
 * changes. In lib because two layers read them: the HTTP route reads the raw answer body before Zod
 * copies it (src/http/routes/interactions.ts), and the session's answer check names each one it
 * finds (src/session/answer-check.ts).
 */
const FORBIDDEN_NAMES = new Set(["__proto__", "constructor", "prototype"]);

export function isForbiddenName(key: string): boolean {
  return FORBIDDEN_NAMES.has(key);
}

/**
 * The paths of every forbidden name at any depth of a value, as JSON parsing leaves them: own
 * properties. Read on the raw JSON, before anything copies it.
 */
export function forbiddenPaths(value: unknown, path: string): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => forbiddenPaths(item, `${path}[${i}]`));
  if (typeof value !== "object" || value === null) return [];
  const out: string[] = [];
  for (const key of Object.keys(value)) {
    const at = path ? `${path}.${key}` : key;
    if (FORBIDDEN_NAMES.has(key)) out.push(at);
    out.push(...forbiddenPaths((value as Record<string, unknown>)[key], at));
  }
  return out;
}
