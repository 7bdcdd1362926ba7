/**
 * The user's agent settings (docs/api.md#bring-your-own-key, #mcp-servers, #standing-instructions):
 * model credentials, MCP servers and standing instructions. A key or an auth header's value is
 * taken here and never answered again, by any route.
 */
import { z } from "zod";

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL = /[\u0000-\u001f\u007f]/;
/** Control characters but tab and line breaks (instructions are text of several lines). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** A setting's name: what a turn names it by. */
export const SettingName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1–64 characters of A-Z a-z 0-9 . _ -")
  .describe("Its name, chosen by the user");

/** A secret value: bounded, no control characters (it travels in a header or a JSON field upstream). */
const SecretValue = z
  .string()
  .min(1, "must not be empty")
  .max(4096, "must be at most 4096 characters")
  .refine((v) => !CONTROL.test(v), "must not contain control characters");

/**
 * An endpoint a key is sent to (agent-provider-tangle, named model credentials): http or https,
 * without credentials, query or fragment.
 */
export const ModelEndpoint = z
  .string()
  .max(2048)
  .refine((raw) => {
    try {
      const url = new URL(raw);
      return (url.protocol === "https:" || url.protocol === "http:") && !url.username && !url.password;
    } catch {
      return false;
    }
  }, "must be an http(s) URL without user:password@")
  .refine((raw) => !raw.includes("?") && !raw.includes("#"), "must not have a query or a fragment");

export const PutCredentialBody = z
  .strictObject({
    provider: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "must be a provider name such as anthropic, openai or zai")
      .describe("The model provider the key is for (the Sandbox's backend.model.provider)"),
    key: SecretValue.describe("The key: stored sealed, never answered again"),
    baseUrl: ModelEndpoint.optional().describe(
      "The endpoint the key is sent to (http or https, no userinfo, query or fragment)",
    ),
  })
  .meta({ id: "PutCredential" });
export type PutCredentialBody = z.infer<typeof PutCredentialBody>;

export const CredentialView = z
  .strictObject({
    name: SettingName,
    provider: z.string(),
    baseUrl: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string().describe("when its key was last set (a rotation moves it)"),
  })
  .meta({ id: "Credential" });
export type CredentialView = z.infer<typeof CredentialView>;

export const CredentialList = z.strictObject({ credentials: z.array(CredentialView) }).meta({ id: "CredentialList" });

export const PutCredentialAnswer = CredentialView.extend({
  created: z.boolean().describe("true: a new credential; false: its key (and provider, endpoint) replaced"),
}).meta({ id: "PutCredentialAnswer" });

/** An HTTP header name (RFC 9110 token). */
const HeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, "must be an HTTP header name");

export const PutMcpServerBody = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .describe("The server's URL: https (http only to a loopback address in local development)"),
    auth: z
      .strictObject({ header: HeaderName, value: SecretValue.describe("Stored sealed, never answered again") })
      .nullable()
      .optional()
      .describe(
        "A header the agent sends the server (e.g. Authorization); omitted: the stored one kept (a server's auth is never answered, so a change of its URL or its enabled state need not send it again); null: removed",
      ),
    enabled: z.boolean().optional().describe("false: kept, but a turn naming it is refused (default true)"),
  })
  .meta({ id: "PutMcpServer" });
export type PutMcpServerBody = z.infer<typeof PutMcpServerBody>;

export const McpServerView = z
  .strictObject({
    name: SettingName,
    url: z.string(),
    authHeader: z.string().nullable().describe("the auth header's name (its value is never answered)"),
    enabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: "McpServer" });
export type McpServerView = z.infer<typeof McpServerView>;

export const McpServerList = z.strictObject({ mcpServers: z.array(McpServerView) }).meta({ id: "McpServerList" });
export const PutMcpServerAnswer = McpServerView.extend({ created: z.boolean() }).meta({ id: "PutMcpServerAnswer" });

/** Standing instructions: appended to the agent's system prompt of every turn. */
export const InstructionsText = z
  .string()
  .max(16_384, "must be at most 16384 characters")
  .refine((v) => !CONTROL_BUT_LINES.test(v), "must not contain control characters");

export const PutInstructionsBody = z
  .strictObject({ text: InstructionsText.describe("The user's standing instructions; empty removes them") })
  .meta({ id: "PutInstructions" });

export const InstructionsView = z
  .strictObject({ text: z.string(), updatedAt: z.string().nullable() })
  .meta({ id: "Instructions" });
export type InstructionsView = z.infer<typeof InstructionsView>;

/** What a turn's dispatch is given of the user's settings: the key and the servers' auth in clear, inside the gateway only (never a response). */
export interface TurnSecrets {
  credential?: { name: string; provider: string; key: string; baseUrl?: string };
  mcpServers?: Array<{ name: string; url: string; headers?: Record<string, string> }>;
  instructions?: string;
}
