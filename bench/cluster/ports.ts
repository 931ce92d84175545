// The loopback ports a benchmark cluster listens on come from the CLI's planner (one helper for all).
export { freePorts } from '../../cli/free-ports.js';

/** waitUntil polls condition every intervalMs until it holds or timeoutMs passes; a thrown error ends the wait. */
export async function waitUntil(
  condition: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
