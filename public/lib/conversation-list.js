// @ts-check
/**
 * The sidebar's list as chat products show it (pure, tested in Node by test/page/): conversations
 * filtered by a search of their titles, and grouped under headings by their last activity — Today,
 * Yesterday, Previous 7 days, Previous 30 days, then one heading per month ("October 2026"). Days
 * are the browser's calendar days (local midnight to midnight, whatever a day's length across a
 * clock change).
 */

const DAY_MS = 24 * 60 * 60 * 1000;
const MONTH = new Intl.DateTimeFormat("en-US", { month: "long", year: "numeric" });

/** @param {Date} d */
const startOfDay = (d) => new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();

/**
 * The heading a moment goes under, seen at `now`. A moment after now (another device's clock) is Today.
 * @param {Date} at
 * @param {Date} now
 */
export function dateGroupOf(at, now) {
  const days = Math.round((startOfDay(now) - startOfDay(at)) / DAY_MS);
  if (days <= 0) return "Today";
  if (days === 1) return "Yesterday";
  if (days <= 7) return "Previous 7 days";
  if (days <= 30) return "Previous 30 days";
  return MONTH.format(at);
}

/**
 * Entries in their groups, each group in the entries' order, the groups in the order their first
 * entry comes (the list is newest first, so Today comes first). An unreadable date goes under "Older".
 * @template {{ updatedAt: string }} T
 * @param {T[]} entries
 * @param {Date} now
 * @returns {Array<{ label: string, entries: T[] }>}
 */
export function groupByDate(entries, now) {
  /** @type {Map<string, T[]>} */
  const groups = new Map();
  for (const entry of entries) {
    const at = new Date(entry.updatedAt);
    const label = Number.isNaN(at.getTime()) ? "Older" : dateGroupOf(at, now);
    const group = groups.get(label);
    if (group) group.push(entry);
    else groups.set(label, [entry]);
  }
  return [...groups].map(([label, list]) => ({ label, entries: list }));
}

/** Lower case without accents: "Résumé" and "resume" match. @param {string} text */
const folded = (text) => text.normalize("NFD").replace(/\p{M}/gu, "").toLocaleLowerCase("en-US");

/**
 * The entries whose title holds every word of the query (any order, any case, accents ignored);
 * all of them for an empty query.
 * @template {{ title: string }} T
 * @param {T[]} entries
 * @param {string} query
 * @returns {T[]}
 */
export function searchTitles(entries, query) {
  const words = folded(query).split(/\s+/).filter(Boolean);
  if (words.length === 0) return entries;
  return entries.filter((entry) => {
    const title = folded(entry.title);
    return words.every((word) => title.includes(word));
  });
}
