// SseParser turns the text of an event stream, in chunks cut anywhere, into events, following the WHATWG
// "event stream interpretation": lines end in CRLF, LF or CR; `:` starts a comment; `field: value` with one
// optional space; a blank line dispatches; the last event id persists across events. Lines and event data
// are bounded so a broken or hostile server cannot grow memory without limit.
import { SvcStreamError } from './errors.js';
import { sseEventDataLengthMax, sseLineLengthMax } from './limits.js';

export interface SseEvent {
  /** id is the last event id seen so far in the stream ('' before any). */
  id: string;
  /** event is the event type; 'message' when the event had no `event:` line. */
  event: string;
  data: string;
  /** retryMs is the last `retry:` value seen, else null. */
  retryMs: number | null;
}

export interface SseLimits {
  lineLengthMax: number;
  eventDataLengthMax: number;
}

export class SseParser {
  private buffer = '';
  private atStart = true;
  private dataLines: string[] = [];
  private dataLength = 0;
  private eventType = '';
  private lastEventId = '';
  private retryMs: number | null = null;
  private readonly limits: SseLimits;

  constructor(limits: Partial<SseLimits> = {}) {
    this.limits = { lineLengthMax: sseLineLengthMax, eventDataLengthMax: sseEventDataLengthMax, ...limits };
  }

  /** push feeds one chunk and returns the events it completed, in order. */
  push(chunk: string): SseEvent[] {
    this.buffer += chunk;
    if (this.atStart && this.buffer.length > 0) {
      if (this.buffer.charCodeAt(0) === 0xfeff) this.buffer = this.buffer.slice(1);
      this.atStart = this.buffer.length === 0;
    }
    const events: SseEvent[] = [];
    let start = 0;
    // The next CR and LF are searched again only once passed, so a chunk of many lines is scanned once.
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = this.buffer.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = this.buffer.indexOf('\r', start);
      const end = cr === -1 ? lf : lf === -1 ? cr : Math.min(cr, lf);
      if (end === -1) break;
      // A CR at the very end may be the first half of a CRLF cut by the chunking: wait for the next chunk.
      if (end === cr && end === this.buffer.length - 1) break;
      const line = this.buffer.slice(start, end);
      start = end + (end === cr && this.buffer[end + 1] === '\n' ? 2 : 1);
      this.checkLineLength(line.length);
      const event = this.processLine(line);
      if (event) events.push(event);
    }
    this.buffer = this.buffer.slice(start);
    this.checkLineLength(this.buffer.length);
    return events;
  }

  /** end reports the end of the stream and returns what a final CR completes; an event without its blank
   * line is discarded, as the spec says. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.buffer.endsWith('\r')) {
      // The CR held back in case an LF followed ends a line after all.
      const event = this.processLine(this.buffer.slice(0, -1));
      if (event) events.push(event);
    }
    this.buffer = '';
    this.dataLines = [];
    this.dataLength = 0;
    this.eventType = '';
    return events;
  }

  private processLine(line: string): SseEvent | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.dataLength += value.length + 1;
        if (this.dataLength > this.limits.eventDataLengthMax) {
          throw new SvcStreamError(
            'EVENT_TOO_LARGE',
            `an event's data is over ${this.limits.eventDataLengthMax} characters`,
          );
        }
        this.dataLines.push(value);
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^[0-9]+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // Unknown fields are ignored, as the spec says.
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const hasData = this.dataLines.length > 0;
    const event: SseEvent = {
      id: this.lastEventId,
      event: this.eventType || 'message',
      data: this.dataLines.join('\n'),
      retryMs: this.retryMs,
    };
    this.dataLines = [];
    this.dataLength = 0;
    this.eventType = '';
    return hasData ? event : null;
  }

  private checkLineLength(length: number): void {
    if (length > this.limits.lineLengthMax) {
      throw new SvcStreamError(
        'EVENT_TOO_LARGE',
        `an event stream line is over ${this.limits.lineLengthMax} characters`,
      );
    }
  }
}
