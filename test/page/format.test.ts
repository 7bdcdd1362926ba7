/**
 * The page's words for usage and models (public/lib/format.js), in Node: an estimate never reads
 * as a measurement, a figure of unknown provenance says so, and the served model is the one the
 * provider reported, never the one asked for.
 */
import { describe, expect, it } from "vitest";
import { modelText, usageText } from "../../public/lib/format.js";

const measured = { inputTokens: "measured", outputTokens: "measured", cost: "measured" } as const;

describe("the usage line", () => {
  it("measured figures read plainly; a floor says at least", () => {
    expect(usageText({ inputTokens: 1980, outputTokens: 80, cost: 0.0021, provenance: measured })).toBe(
      "in 1,980 · out 80 · $0.0021",
    );
    expect(
      usageText({ inputTokens: 1980, outputTokens: 80, cost: 0.0021, provenance: measured }, { floor: true }),
    ).toBe("at least in 1,980 · out 80 · $0.0021");
  });

  it("an estimate reads as one: ≈ before each estimated figure, and a note", () => {
    expect(
      usageText({
        inputTokens: 17,
        outputTokens: 23,
        cost: null,
        provenance: { inputTokens: "estimated", outputTokens: "estimated", cost: null },
      }),
    ).toBe("in ≈17 · out ≈23 · unknown (tokens estimated)");
    // One estimated part is enough for the note: the tokens are not all measured.
    expect(
      usageText({
        inputTokens: 17,
        outputTokens: 23,
        cost: null,
        provenance: { inputTokens: "measured", outputTokens: "estimated", cost: null },
      }),
    ).toBe("in 17 · out ≈23 · unknown (tokens estimated)");
  });

  it("figures of unknown provenance are unverified, the cost on its own; an older server's view claims nothing", () => {
    expect(
      usageText({
        inputTokens: 1980,
        outputTokens: 80,
        cost: 0.0021,
        provenance: { inputTokens: "measured", outputTokens: "measured", cost: "unknown" },
      }),
    ).toBe("in 1,980 · out 80 · $0.0021 (cost unverified)");
    expect(
      usageText({
        inputTokens: 17,
        outputTokens: 23,
        cost: null,
        provenance: { inputTokens: "unknown", outputTokens: "unknown", cost: null },
      }),
    ).toBe("in 17 · out 23 · unknown (tokens unverified)");
    expect(usageText({ inputTokens: 17, outputTokens: 23, cost: null })).toBe(
      "in 17 · out 23 · unknown (tokens unverified)",
    );
  });

  it("nothing known reads unknown: no reading, or one without a figure (also as a floor)", () => {
    expect(usageText(null)).toBe("unknown");
    expect(usageText({ inputTokens: null, outputTokens: null, cost: null })).toBe("unknown");
    expect(
      usageText(
        {
          inputTokens: null,
          outputTokens: null,
          cost: null,
          provenance: { inputTokens: null, outputTokens: null, cost: null },
        },
        { floor: true },
      ),
    ).toBe("unknown");
    // A count that is known is shown, the rest unknown.
    expect(usageText({ inputTokens: null, outputTokens: null, cost: null, modelRequests: 2 })).toBe(
      "in unknown · out unknown · unknown · 2 model requests",
    );
    expect(
      usageText(
        {
          inputTokens: 12,
          outputTokens: null,
          cost: null,
          provenance: { inputTokens: "measured", outputTokens: null, cost: null },
        },
        { floor: true },
      ),
    ).toBe("at least in 12 · out unknown · unknown");
  });

  it("request counts where reported", () => {
    expect(usageText({ inputTokens: 4, outputTokens: 5, cost: null, provenance: measured, modelRequests: 1 })).toBe(
      "in 4 · out 5 · unknown · 1 model request",
    );
    expect(usageText({ inputTokens: 4, outputTokens: 5, cost: null, provenance: measured, modelRequests: 3 })).toBe(
      "in 4 · out 5 · unknown · 3 model requests",
    );
    expect(usageText({ inputTokens: 4, outputTokens: 5, cost: null, provenance: measured, modelRequests: null })).toBe(
      "in 4 · out 5 · unknown",
    );
  });
});

describe("the model line", () => {
  it("the served model as reported, next to the one asked for; never inferred", () => {
    expect(modelText("codex/default", ["gpt-5.4"])).toBe("codex/default · served by gpt-5.4");
    expect(modelText(null, ["gpt-5.4", "gpt-5.4-mini"])).toBe("served by gpt-5.4, gpt-5.4-mini");
    expect(modelText("codex/default", null)).toBe("codex/default · served model not reported");
    expect(modelText("codex/default", [])).toBe("codex/default · served model not reported");
    expect(modelText(null, null)).toBe("");
  });
});
