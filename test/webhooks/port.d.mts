/** Loopback ports for the webhook tests: the receiver's, and one nothing listens on. */
export function webhookPorts(): Promise<{ receiver: number; down: number }>;
