// One Server-Sent Events loop for every event stream of the API (run events, a user's album events): events
// are entries of a Redis stream, whose entry ids are the SSE event ids, so Last-Event-ID resumes exactly after
// the last event a client saw. The loop writes what follows the resume point, then sleeps until a wake-up
// (a notification that the stream grew) or the keep-alive interval, and reads again either way: a lost
// wake-up costs latency, never an event. Headers are the proxy-safe set (no caching, no proxy buffering).
import type { Request, Response } from 'express';
import { ApiError } from '../errors.js';
import { sseReadCountMax, sseStreamDurationMsMax } from '../limits.js';

/** StreamEntry is one Redis stream entry as XRANGE returns it: id and flat field/value list. */
export type StreamEntry = [id: string, fields: string[]];

const streamIdPattern = /^\d{1,20}-\d{1,20}$/;

export const sseResponseHeaders: Readonly<Record<string, string>> = Object.freeze({
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache',
  // nginx and friends otherwise buffer the response and deliver events late.
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
});

/**
 * lastEventIdOf reads the Last-Event-ID header: null when absent or empty, '0' for "from the beginning", else
 * a stream id; anything else is refused with VALIDATION_FAILED (it is not an id this API ever sent).
 */
export function lastEventIdOf(req: Request): string | null {
  const header = req.headers['last-event-id'];
  if (typeof header !== 'string' || header.length === 0) return null;
  if (header !== '0' && !streamIdPattern.test(header)) {
    throw new ApiError('VALIDATION_FAILED', 'Last-Event-ID is not an event id of this stream', [
      { path: '/headers/last-event-id', message: 'expected <ms>-<seq>' },
    ]);
  }
  return header;
}

export interface EventStreamResponseOptions {
  /** startAfter is the stream id the first read starts after ('0-0': from the beginning). */
  startAfter: string;
  keepAliveMs: number;
  /** listen calls wake whenever the stream may have grown, until the returned function is called. */
  listen(wake: () => void): Promise<() => void>;
  /** read returns up to sseReadCountMax entries strictly after afterId, in order. */
  read(afterId: string): Promise<StreamEntry[]>;
  /** finalEvent, when given, is the event after which nothing follows: the response ends after writing it. */
  finalEvent?: string;
  /**
   * isFinished is asked when the first read finds nothing: true means the client resumed at or after the final
   * event, so the response ends at once instead of waiting for events that will never come.
   */
  isFinished?(): Promise<boolean>;
  /**
   * onQuiet, when given, is called after each keep-alive interval that brought no event: it may append what the
   * stream is missing (a run's `complete` lost with a failed-over Redis primary), which the next read finds.
   */
  onQuiet?(): Promise<void>;
  /** open holds every open response of the route, so that close() can end them; the loop adds and removes its own. */
  open: Set<Response>;
}

/** eventStreamResponse answers req with the stream until the client leaves, the final event, or sseStreamDurationMsMax. */
export async function eventStreamResponse(
  req: Request,
  res: Response,
  options: EventStreamResponseOptions,
): Promise<void> {
  let closed = false;
  let signalled: boolean;
  let wake: (() => void) | null = null;
  const stopListening = await options.listen(() => {
    signalled = true;
    wake?.();
  });
  req.on('close', () => {
    closed = true;
    wake?.();
  });
  options.open.add(res);
  res.writeHead(200, sseResponseHeaders);
  res.write(': stream open\n\n');
  const deadline = Date.now() + sseStreamDurationMsMax;
  let lastId = options.startAfter;
  let firstRead = true;
  try {
    while (!closed && Date.now() < deadline) {
      signalled = false;
      const entries = await options.read(lastId);
      let final = false;
      for (const [id, fields] of entries) {
        const event = fields[fields.indexOf('event') + 1] ?? 'message';
        const data = fields[fields.indexOf('data') + 1] ?? '{}';
        res.write(`id: ${id}\nevent: ${event}\ndata: ${data}\n\n`);
        lastId = id;
        if (event === options.finalEvent) final = true;
      }
      if (final) break;
      if (firstRead && entries.length === 0 && options.isFinished && (await options.isFinished())) break;
      firstRead = false;
      if (entries.length === sseReadCountMax || signalled || closed) continue;
      const timedOut = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(true), options.keepAliveMs);
        wake = () => {
          clearTimeout(timer);
          resolve(false);
        };
      });
      wake = null;
      if (timedOut && !closed) {
        res.write(': keep-alive\n\n');
        await options.onQuiet?.();
      }
    }
  } catch {
    // Redis failed under the stream: end it; the client resumes with Last-Event-ID.
  } finally {
    options.open.delete(res);
    stopListening();
    res.end();
  }
}
