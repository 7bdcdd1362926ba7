/**
 * What the Worker and a terminal object agree on for a viewer's socket (docs/architecture.md#terminals-srcterminal):
 * the Worker checked the user's token and the terminal, and names the terminal in this header of the
 * upgrade it forwards.
 */
export const SPEC_HEADER = "x-terminal-spec";

/** The subprotocol the viewer offered its token in, which the 101 echoes (absent: the token came in the URL). */
export const PROTOCOL_HEADER = "x-terminal-protocol";
