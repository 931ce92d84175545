// pollLeaderStatus reads a leader's GET /status for the status-poll readiness path: its
// durableLastSeq, or null when the leader does not answer in time or answers nonsense. An https:// leader is
// checked against `dispatcher`'s CA (the node's: httpTls.caFile, else the cluster CA).
import { fetch, type Dispatcher, type Response } from 'undici';

export async function pollLeaderStatus(
  leaderHttpAddr: string,
  timeoutMs: number,
  bodyBytesMax: number,
  dispatcher?: Dispatcher,
): Promise<number | null> {
  let response: Response;
  try {
    response = await fetch(new URL('/status', leaderHttpAddr), {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
      ...(dispatcher ? { dispatcher } : {}),
    });
  } catch {
    return null;
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    return null;
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body.getReader();
  try {
    // Bounded by bodyBytesMax: a status document is small.
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      if (bytes > bodyBytesMax) return null;
      chunks.push(value);
    }
  } catch {
    return null;
  } finally {
    reader.releaseLock();
    await response.body.cancel().catch(() => undefined);
  }
  try {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { durableLastSeq?: unknown };
    const seq = body.durableLastSeq;
    return Number.isSafeInteger(seq) && (seq as number) >= 0 ? (seq as number) : null;
  } catch {
    return null;
  }
}
