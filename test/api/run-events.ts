// Reading a run's event stream in tests: the whole SSE response (the server ends it after `complete`).
import type { TestApi } from './harness.js';

export interface SseEvent {
  id: string;
  event: string;
  data: unknown;
}

export interface SseRead {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
}

/** readSse reads a whole event stream (the server ends it after `complete`), bounded by timeoutMs. */
export async function readSse(
  api: TestApi,
  streamUrl: string,
  options: { key?: string; lastEventId?: string } = {},
  timeoutMs = 20_000,
): Promise<SseRead> {
  const headers: Record<string, string> = { 'x-api-key': options.key ?? api.adminKey, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(api.baseUrl + streamUrl, { headers, signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  const events: SseEvent[] = [];
  const comments: string[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    if (lines.length === 0) continue;
    if (lines.every((line) => line.startsWith(':'))) {
      comments.push(...lines);
      continue;
    }
    const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? '';
    events.push({ id: field('id'), event: field('event'), data: JSON.parse(field('data')) });
  }
  return { status: response.status, headers: response.headers, events, comments };
}

export const outputText = (events: SseEvent[], stream: string) =>
  events
    .filter((event) => event.event === 'output')
    .map((event) => event.data as { stream: string; text: string })
    .filter((data) => data.stream === stream)
    .map((data) => data.text)
    .join('');
