/** A free loopback port for the CLI Bridge stand-in, kept in `CLI_BRIDGE_STANDIN_PORT`. */
export function standInPort(): Promise<number>;
