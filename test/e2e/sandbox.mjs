// The sandbox panel (issue 22, "The sandbox's life"): the page shows the user's sandbox as the
// gateway reports it and offers Stop and Delete, each confirmed in the panel first (and Cancel
// sends nothing). Found by role, label and text; checked against the API.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  api,
  assertAccessible,
  cidOf,
  openPage,
  send,
  shot,
  signIn,
  tokenOf,
  unique,
  waitForBadge,
} from "./harness.mjs";

const status = async (token) => (await api("/v1/environment", token)).environment?.reported.status.value ?? null;

describe("the sandbox panel", () => {
  it("shows the sandbox's state, and stops and deletes it only once confirmed", async () => {
    const page = await openPage();
    await signIn(page, unique("sandbox"));
    await send(page, "hello");
    await waitForBadge(page, "done");
    const token = await tokenOf(page);

    await page.getByRole("button", { name: "Sandbox" }).click();
    const panel = page.getByRole("region", { name: "Your sandbox" });
    await panel.getByText("running", { exact: true }).waitFor();
    await panel.getByText("30 min", { exact: true }).waitFor();
    await panel.getByText("created,", { exact: false }).waitFor();
    await assertAccessible(page, "sandbox panel");
    await shot(page, "sandbox-panel");

    // Stop, asked for again; Cancel sends nothing.
    await panel.getByRole("button", { name: "Stop sandbox" }).click();
    const confirm = panel.getByRole("alertdialog");
    await confirm.getByText("Stop the sandbox now?", { exact: false }).waitFor();
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await confirm.waitFor({ state: "hidden" });
    assert.equal(await status(token), "running");
    await panel.getByRole("button", { name: "Stop sandbox" }).click();
    await confirm.getByRole("button", { name: "Yes, stop it" }).click();
    await panel.getByText("stopped", { exact: true }).waitFor();
    assert.equal(await status(token), "stopped");
    assert.equal(await panel.getByRole("button", { name: "Stop sandbox" }).isDisabled(), true);

    // Delete, confirmed: the panel says there is none until the next message.
    await panel.getByRole("button", { name: "Delete sandbox" }).click();
    await confirm.getByText("Delete the sandbox?", { exact: false }).waitFor();
    await confirm.getByRole("button", { name: "Yes, delete it" }).click();
    await panel.getByText("none yet: your next message creates one").waitFor();
    assert.equal(await status(token), null);

    // The next message runs in a new sandbox; the panel, opened again, shows it running.
    await panel.getByRole("button", { name: "Close the sandbox panel" }).click();
    await panel.waitFor({ state: "hidden" });
    await send(page, "are you there?");
    await waitForBadge(page, "done");
    assert.equal(await status(token), "running");
    await page.getByRole("button", { name: "Sandbox" }).click();
    await panel.getByText("running", { exact: true }).waitFor();
    await page.context().close();
  });

  it("deletes the account once confirmed: the page signs out, and the old token reads nothing", async () => {
    const page = await openPage();
    await signIn(page, unique("leaver"));
    await send(page, "hello");
    await waitForBadge(page, "done");
    const token = await tokenOf(page);
    const cid = await cidOf(page);

    await page.getByRole("button", { name: "Sandbox" }).click();
    const panel = page.getByRole("region", { name: "Your sandbox" });
    await panel.getByRole("button", { name: "Delete my account" }).click();
    const confirm = panel.getByRole("alertdialog");
    await confirm.getByText("Delete your account?", { exact: false }).waitFor();
    await confirm.getByRole("button", { name: "Cancel" }).click();
    assert.equal((await api("/v1/me", token)).deletion, null);

    await panel.getByRole("button", { name: "Delete my account" }).click();
    await confirm.getByRole("button", { name: "Yes, delete my account" }).click();
    await page.getByText("Your account was deleted.").waitFor();
    await page.getByLabel("Your name").waitFor();
    assert.equal((await api("/v1/me", token)).deletion.state, "deleted");
    assert.equal((await api(`/v1/conversations/${cid}/messages`, token)).error.code, "account_deleted");
    await page.context().close();
  });
});
