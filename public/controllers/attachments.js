// @ts-check
/**
 * Files attached in the composer (docs/chat-page.md "Attachments"), loaded at the first file attached,
 * pasted or dropped (app.js; it imports no module of the page's bundle: the page's helpers are
 * handed to it). Each file is uploaded at once (POST /v1/conversations/:cid/attachments, multipart,
 * one `file` field: docs/api.md "Attachments") and shown as a chip (its name, its size, a thumbnail
 * of an image drawn from the local file, a Remove button); a refusal (too large, too many, a type or
 * body refused) is said on its chip. The next message sends the uploaded files' ids
 * (`attachments`), and they leave the composer once the turn is accepted. A new conversation takes
 * files too: its first upload starts it (the server brings up the sandbox to write it into).
 */
import { sizeText } from "../lib/workspace.js";
import { adoptStyle } from "../views/workspace-style.js";

/**
 * @typedef {object} Chip
 * @property {string} key
 * @property {File} file
 * @property {"uploading" | "uploaded" | "refused"} state
 * @property {string | null} id        the attachment's id once uploaded
 * @property {HTMLElement} node
 * @property {HTMLElement} stateText
 */

const enc = encodeURIComponent;

/**
 * @param {{
 *   api: import("../lib/api.js").Api,
 *   store: import("../lib/store.js").Store,
 *   ui: { composer: HTMLFormElement, input: HTMLTextAreaElement },
 *   el: typeof import("../views/dom.js").el,
 * }} deps
 */
export function createAttachments({ api, store, ui, el }) {
  adoptStyle();
  const picker = /** @type {HTMLInputElement} */ (document.getElementById("attach-input"));
  picker.addEventListener("change", () => {
    add([...(picker.files ?? [])]);
    picker.value = "";
  });
  const list = el("ul", { class: "attachments", "aria-label": "Attached files", hidden: true });
  const note = el("p", { class: "hint attach-note", role: "status" });
  ui.input.labels?.[0]?.before(note, list);
  /** @type {Chip[]} */
  let chips = [];
  /** The ids the last message sent: they leave the composer once it is accepted. @type {string[]} */
  let sending = [];
  let cid = store.conv.cid;
  let counter = 0;

  function draw() {
    list.replaceChildren(...chips.map((c) => c.node));
    list.hidden = chips.length === 0;
  }

  /** @param {Chip} chip */
  function remove(chip) {
    chips = chips.filter((c) => c !== chip);
    draw();
    ui.input.focus();
  }

  /** A thumbnail of an image, drawn from the local file (no URL: nothing leaves the page). @param {File} file */
  function thumbnail(file) {
    if (!file.type.startsWith("image/")) return null;
    const canvas = el("canvas", { width: 56, height: 56, "aria-hidden": "true" });
    createImageBitmap(file)
      .then((bitmap) => {
        const side = Math.min(bitmap.width, bitmap.height);
        canvas
          .getContext("2d")
          ?.drawImage(bitmap, (bitmap.width - side) / 2, (bitmap.height - side) / 2, side, side, 0, 0, 56, 56);
        bitmap.close();
      })
      .catch(() => canvas.remove());
    return canvas;
  }

  /** @param {File} file @returns {Chip} */
  function chipFor(file) {
    const stateText = el("span", { class: "chip-state", text: "uploading…" });
    const node = el("li", { class: "chip" });
    const chip = {
      key: `a${++counter}`,
      file,
      state: /** @type {Chip["state"]} */ ("uploading"),
      id: null,
      node,
      stateText,
    };
    node.append(
      thumbnail(file) ?? "",
      el("span", { class: "chip-name", title: file.name, text: file.name }),
      el("span", { class: "chip-size", text: sizeText(file.size) }),
      stateText,
      el("button", {
        type: "button",
        class: "icon-button",
        "aria-label": `Remove ${file.name}`,
        text: "✕",
        onclick: () => remove(chip),
      }),
    );
    return chip;
  }

  /** @param {Chip} chip @param {string} conversation */
  async function upload(chip, conversation) {
    const form = new FormData();
    form.append("file", chip.file, chip.file.name);
    try {
      /** @type {import("../lib/wire").Attachment} */
      const answer = (
        await api.request(`/v1/conversations/${enc(conversation)}/attachments`, { method: "POST", body: form })
      ).data;
      chip.state = "uploaded";
      chip.id = answer.id;
      chip.stateText.textContent = "";
      chip.node.title = answer.path;
    } catch (err) {
      chip.state = "refused";
      chip.node.classList.add("refused");
      chip.stateText.textContent = `not attached: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (!chips.some((c) => c.state === "uploading")) note.textContent = "";
  }

  // A message sent while a file is still uploading waits: the box says so, and nothing is sent yet.
  ui.composer.addEventListener(
    "submit",
    (event) => {
      if (!chips.some((c) => c.state === "uploading")) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      note.textContent = "Wait for the files to finish uploading, then send.";
    },
    true,
  );

  store.subscribe(() => {
    if (store.conv.cid === cid) return;
    // Another conversation: the files attached here were uploaded to this one.
    cid = store.conv.cid;
    chips = [];
    sending = [];
    note.textContent = "";
    draw();
  });

  /** Attaches files; none: opens the file chooser. @param {File[]} files */
  function add(files) {
    note.textContent = "";
    if (files.length === 0) return picker.click();
    const added = files.map(chipFor);
    chips = [...chips, ...added];
    draw();
    for (const chip of added) upload(chip, cid);
  }

  return {
    add,
    /** The uploaded files' ids for the message about to be sent. */
    forTurn() {
      sending = chips.flatMap((c) => (c.state === "uploaded" && c.id ? [c.id] : []));
      return sending.length ? { attachments: sending } : {};
    },
    /** The message was accepted: the files it sent leave the composer. @param {string} conversation */
    accepted(conversation) {
      if (conversation !== cid) return;
      chips = chips.filter((c) => !c.id || !sending.includes(c.id));
      sending = [];
      draw();
    },
  };
}

/** @typedef {ReturnType<typeof createAttachments>} Attachments */
