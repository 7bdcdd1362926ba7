/**
 * The workspace panel's and the attachments' rules (public/lib/workspace.js), in Node: sizes and
 * changes in words, a file's highlighting language, what the tree's keys do (the WAI-ARIA tree
 * pattern), what Undo and Redo offer for a turn, and a download read whole within its bound.
 */
import { describe, expect, it } from "vitest";
import {
  changeText,
  DOWNLOAD_MAX_BYTES,
  fileNameOf,
  HIGHLIGHT_MAX_CHARS,
  langOf,
  readBounded,
  restoreOffer,
  sizeText,
  tabKey,
  treeKey,
} from "../../public/lib/workspace.js";

describe("sizes and changes in words", () => {
  it("says a size in B, KB or MB, and unknown when the server did not say", () => {
    expect(sizeText(0)).toBe("0 B");
    expect(sizeText(1023)).toBe("1023 B");
    expect(sizeText(1536)).toBe("1.5 KB");
    expect(sizeText(3 * 1024 * 1024)).toBe("3.0 MB");
    expect(sizeText(null)).toBe("size unknown");
  });

  it("names a change, a rename's earlier path, and a binary's sizes", () => {
    expect(changeText({ path: "a", status: "added", binary: false })).toBe("Added");
    expect(changeText({ path: "b", status: "renamed", from: "a", binary: false })).toBe("Renamed from a");
    expect(changeText({ path: "x.bin", status: "added", binary: true, sizeAfter: 64 })).toBe("Added, binary, 64 B");
    expect(changeText({ path: "x.bin", status: "deleted", binary: true, sizeBefore: 64 })).toBe(
      "Deleted, binary, 64 B",
    );
    expect(changeText({ path: "x.bin", status: "modified", binary: true, sizeBefore: 64 })).toBe(
      "Modified, binary, 64 B → size unknown",
    );
  });
});

describe("a file's highlighting", () => {
  it("goes by its extension, none without one or past the bound", () => {
    expect(langOf("src/app.ts", 10)).toBe("ts");
    expect(langOf("bin/run.mjs", 10)).toBe("js");
    expect(langOf("Makefile", 10)).toBe("");
    expect(langOf(".env", 10)).toBe("");
    expect(langOf("a.ts", HIGHLIGHT_MAX_CHARS + 1)).toBe("");
    expect(langOf("weird.t<s", 10)).toBe("");
  });
});

describe("the tree's keys", () => {
  const at = { index: 2, count: 5, parent: 1, dir: false, expanded: false };
  it("walks the items shown with the arrows, Home and End, within the list", () => {
    expect(treeKey("ArrowDown", at)).toEqual({ focus: 3 });
    expect(treeKey("ArrowDown", { ...at, index: 4 })).toEqual({ focus: 4 });
    expect(treeKey("ArrowUp", at)).toEqual({ focus: 1 });
    expect(treeKey("ArrowUp", { ...at, index: 0 })).toEqual({ focus: 0 });
    expect(treeKey("Home", at)).toEqual({ focus: 0 });
    expect(treeKey("End", at)).toEqual({ focus: 4 });
  });

  it("Right opens a closed folder, then goes to its first item; Left closes an open one, else goes to its folder", () => {
    expect(treeKey("ArrowRight", { ...at, dir: true })).toEqual({ expand: true });
    expect(treeKey("ArrowRight", { ...at, dir: true, expanded: true })).toEqual({ focus: 3 });
    expect(treeKey("ArrowRight", at)).toBeNull();
    expect(treeKey("ArrowLeft", { ...at, dir: true, expanded: true })).toEqual({ collapse: true });
    expect(treeKey("ArrowLeft", at)).toEqual({ focus: 1 });
    expect(treeKey("ArrowLeft", { ...at, parent: -1 })).toBeNull();
    expect(treeKey("Enter", at)).toEqual({ open: true });
    expect(treeKey("a", at)).toBeNull();
  });
});

describe("Undo and Redo", () => {
  const created = { status: "created" };
  it("are offered only for a created checkpoint, saying why not otherwise", () => {
    expect(restoreOffer({ checkpoint: created, last: null, busy: false })).toEqual({
      undo: true,
      redo: false,
      note: "",
    });
    for (const status of ["unknown", "failed", "unavailable", "released", "none"]) {
      const offer = restoreOffer({ checkpoint: { status }, last: null, busy: false });
      expect(offer.undo || offer.redo, status).toBe(false);
      expect(offer.note, status).toMatch(/^This turn cannot be undone: /);
    }
    expect(
      restoreOffer({ checkpoint: { status: "failed", message: "the snapshot failed" }, last: null, busy: false }).note,
    ).toBe("This turn cannot be undone: the snapshot failed.");
    expect(restoreOffer({ checkpoint: null, last: null, busy: false }).undo).toBe(false);
  });

  it("after an undo offer Redo, after a redo Undo again; neither while a turn runs", () => {
    expect(restoreOffer({ checkpoint: created, last: "undo", busy: false })).toMatchObject({ undo: false, redo: true });
    expect(restoreOffer({ checkpoint: created, last: "redo", busy: false })).toMatchObject({ undo: true, redo: false });
    expect(restoreOffer({ checkpoint: created, last: "undo", busy: true })).toMatchObject({ undo: false, redo: false });
  });
});

describe("a download", () => {
  const streamOf = (chunks: Uint8Array[], fail = false) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        if (fail) controller.error(new Error("cut off"));
        else controller.close();
      },
    });

  it("is read whole, with its type", async () => {
    const blob = await readBounded(
      new Response(streamOf([new Uint8Array([1, 2]), new Uint8Array([3])]), { headers: { "content-type": "x/y" } }),
    );
    expect(blob.size).toBe(3);
    expect(blob.type).toBe("x/y");
  });

  it("fails past its bound, stated or streamed, and when its stream errors: never a short file", async () => {
    await expect(
      readBounded(new Response("abc", { headers: { "content-length": String(DOWNLOAD_MAX_BYTES + 1) } })),
    ).rejects.toThrow(/larger than 256\.0 MB/);
    await expect(readBounded(new Response(streamOf([new Uint8Array(3), new Uint8Array(3)])), 5)).rejects.toThrow(
      /larger than 5 B/,
    );
    await expect(readBounded(new Response(streamOf([new Uint8Array(3)], true)))).rejects.toThrow(/cut off/);
  });

  it("is named as its content-disposition says", () => {
    const named = (header: string) => new Response("", { headers: { "content-disposition": header } });
    expect(fileNameOf(named(`attachment; filename="a_b.txt"; filename*=UTF-8''a%C3%A9b.txt`), "x")).toBe("aéb.txt");
    expect(fileNameOf(named(`attachment; filename="notes.txt"`), "x")).toBe("notes.txt");
    expect(fileNameOf(new Response(""), "download")).toBe("download");
  });
});

describe("the panel's tabs", () => {
  it("move with the arrows (round), Home and End; other keys do nothing", () => {
    expect(tabKey("ArrowRight", 0, 2)).toBe(1);
    expect(tabKey("ArrowRight", 1, 2)).toBe(0);
    expect(tabKey("ArrowLeft", 0, 2)).toBe(1);
    expect(tabKey("Home", 1, 2)).toBe(0);
    expect(tabKey("End", 0, 2)).toBe(1);
    expect(tabKey("ArrowRight", 0, 1)).toBe(0);
    expect(tabKey("Enter", 0, 2)).toBeNull();
    expect(tabKey("ArrowDown", 0, 2)).toBeNull();
    // Not on a tab shown (the focus elsewhere): nothing.
    expect(tabKey("ArrowRight", -1, 2)).toBeNull();
  });
});
