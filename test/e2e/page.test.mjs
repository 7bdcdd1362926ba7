// The chat page's browser tests, second half: run beside chat.test.mjs (`npm run test:e2e` runs the
// files two at a time), each file with its own `wrangler dev` and Chromium (harness.mjs).
import "./branches.mjs";
import "./looks.mjs";
import "./queue.mjs";
import "./notify.mjs";
import "./security.mjs";
import "./sandbox.mjs";
import "./connection.mjs";
import "./sidebar.mjs";
import "./markdown.mjs";
import "./changes.mjs";
import "./subagents.mjs";
import "./docs.mjs";
import "./agents.mjs";
import "./settings.mjs";
import "./workspace.mjs";
import "./terminal.mjs";
