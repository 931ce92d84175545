// Reading members' GET /status documents over their HTTP ports. pollLeaderStatus reads a leader's
// durableLastSeq for the status-poll readiness path, or null when the leader does not answer in time or answers
// nonsense; fetchStatusDocument reads a member's whole document for the /cluster view (cluster-feed.ts). An
// https:// member is checked against `dispatcher`'s CA (the node's: httpTls.caFile, else the cluster CA).
import { fetch, type Dispatcher, type Response } from 'undici';

export async function pollLeaderStatus(
  leaderHttpAddr: string,
  timeoutMs: number,
  bodyBytesMax: number,
  dispatcher?: Dispatcher,
): Promise<number | null> {
  const answer = await fetchStatusDocument(leaderHttpAddr, timeoutMs, bodyBytesMax, dispatcher);
  if (!answer.ok) return null;
  const seq = answer.document.durableLastSeq;
  return Number.isSafeInteger(seq) && (seq as number) >= 0 ? (seq as number) : null;
}

/** StatusAnswer is a member's /status document (an object, as yet unchecked field by field), or why there is none. */
export type StatusAnswer = { ok: true; document: Record<string, unknown> } | { ok: false; error: string };

/**
 * fetchStatusDocument GETs httpAddr's /status within timeoutMs, reading at most bodyBytesMax bytes. A 503 still
 * carries a document (a node not running says so); anything not a JSON object is an error, never a throw.
 */
export async function fetchStatusDocument(
  httpAddr: string,
  timeoutMs: number,
  bodyBytesMax: number,
  dispatcher?: Dispatcher,
): Promise<StatusAnswer> {
  let response: Response;
  try {
    response = await fetch(new URL('/status', httpAddr), {
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
      ...(dispatcher ? { dispatcher } : {}),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return { ok: false, error: `unreachable: ${cause?.code ?? cause?.message ?? (err as Error).name}` };
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel().catch(() => undefined);
    return { ok: false, error: `answered ${response.status}` };
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
      if (bytes > bodyBytesMax) return { ok: false, error: `answered more than ${bodyBytesMax} bytes` };
      chunks.push(value);
    }
  } catch {
    return { ok: false, error: 'the answer broke off' };
  } finally {
    reader.releaseLock();
    await response.body.cancel().catch(() => undefined);
  }
  try {
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return { ok: false, error: 'answered a document that is not a JSON object' };
    return { ok: true, document: body as Record<string, unknown> };
  } catch {
    return { ok: false, error: 'answered something that is not JSON' };
  }
}
