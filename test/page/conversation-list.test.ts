/**
 * The sidebar's date headings and title search (public/lib/conversation-list.js), in Node. Dates are
 * built from local calendar fields, so the cases hold in any time zone.
 */
import { describe, expect, it } from "vitest";
import { dateGroupOf, groupByDate, searchTitles } from "../../public/lib/conversation-list.js";
import { quoted } from "../../public/lib/format.js";

const now = new Date(2026, 11, 2, 9, 30); // 2 December 2026, 09:30 local
const at = (month: number, day: number, hour = 12) => new Date(2026, month, day, hour);

describe("date headings", () => {
  it("Today, Yesterday, Previous 7 days, Previous 30 days, then by month", () => {
    expect(dateGroupOf(at(11, 2, 0), now)).toBe("Today"); // just after midnight
    expect(dateGroupOf(at(11, 2, 23), now)).toBe("Today"); // later today: another clock
    expect(dateGroupOf(at(11, 1, 23), now)).toBe("Yesterday"); // late last night: yesterday, though under 24 hours ago
    expect(dateGroupOf(at(11, 1, 0), now)).toBe("Yesterday");
    expect(dateGroupOf(at(10, 30), now)).toBe("Previous 7 days"); // 2 days
    expect(dateGroupOf(at(10, 25), now)).toBe("Previous 7 days"); // 7 days
    expect(dateGroupOf(at(10, 24), now)).toBe("Previous 30 days"); // 8 days
    expect(dateGroupOf(at(10, 2), now)).toBe("Previous 30 days"); // 30 days
    expect(dateGroupOf(at(10, 1), now)).toBe("November 2026"); // 31 days
    expect(dateGroupOf(at(9, 15), now)).toBe("October 2026");
    expect(dateGroupOf(new Date(2025, 11, 24), now)).toBe("December 2025"); // the same month a year ago is its own
    expect(dateGroupOf(new Date(2027, 0, 1), now)).toBe("Today"); // a clock ahead
  });

  it("counts calendar days across a clock change (a 23- or 25-hour day)", () => {
    // Whatever the zone's rules, midnight to midnight is one day: 10 days back is Previous 30 days.
    expect(dateGroupOf(new Date(2026, 2, 20, 12), new Date(2026, 2, 30, 12))).toBe("Previous 30 days");
    expect(dateGroupOf(new Date(2026, 9, 31, 23), new Date(2026, 10, 1, 0, 30))).toBe("Yesterday");
  });

  it("groups a newest-first list in order, each group keeping the list's order", () => {
    const list = [
      { id: "a", updatedAt: at(11, 2, 9).toISOString() },
      { id: "b", updatedAt: at(11, 2, 8).toISOString() },
      { id: "c", updatedAt: at(11, 1).toISOString() },
      { id: "d", updatedAt: at(10, 28).toISOString() },
      { id: "e", updatedAt: at(10, 10).toISOString() },
      { id: "f", updatedAt: at(9, 30).toISOString() },
      { id: "g", updatedAt: at(9, 1).toISOString() },
      { id: "h", updatedAt: "not a date" },
    ];
    expect(groupByDate(list, now).map((g) => [g.label, g.entries.map((e) => e.id)])).toEqual([
      ["Today", ["a", "b"]],
      ["Yesterday", ["c"]],
      ["Previous 7 days", ["d"]],
      ["Previous 30 days", ["e"]],
      ["October 2026", ["f", "g"]],
      ["Older", ["h"]],
    ]);
    expect(groupByDate([], now)).toEqual([]);
  });
});

describe("title search", () => {
  const list = [
    { title: "Fix the failing test" },
    { title: "Résumé du projet" },
    { title: "Release notes" },
    { title: "Test the parser" },
  ];

  it("keeps titles holding every word, in any case and order, accents ignored", () => {
    expect(searchTitles(list, "")).toBe(list);
    expect(searchTitles(list, "   ")).toBe(list);
    expect(searchTitles(list, "test").map((c) => c.title)).toEqual(["Fix the failing test", "Test the parser"]);
    expect(searchTitles(list, "TEST fix").map((c) => c.title)).toEqual(["Fix the failing test"]);
    expect(searchTitles(list, "resume").map((c) => c.title)).toEqual(["Résumé du projet"]);
    expect(searchTitles(list, "rel").map((c) => c.title)).toEqual(["Release notes"]);
    expect(searchTitles(list, "nothing like it")).toEqual([]);
  });
});

describe("a message quoted in a button's name", () => {
  it("is one line, at most 40 characters, in quotes", () => {
    expect(quoted("Fix the failing test")).toBe("“Fix the failing test”");
    expect(quoted("  two\n lines\there ")).toBe("“two lines here”");
    const long = "Explain what this repository does and how its tests run";
    expect(quoted(long)).toBe("“Explain what this repository does and h…”");
    expect([...quoted(long)].length).toBe(42);
    expect(quoted("x".repeat(40))).toBe(`“${"x".repeat(40)}”`);
  });
});
