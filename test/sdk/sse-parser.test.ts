import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SseParser, SvcStreamError } from '../../sdk/src/index.js';
import type { SseEvent } from '../../sdk/src/index.js';

/** parseAll feeds the chunks in order and returns every event. */
function parseAll(chunks: string[], parser = new SseParser()): SseEvent[] {
  return [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.end()];
}

/** cutAt splits text at the given offsets (sorted, deduplicated, inside the text). */
function cutAt(text: string, offsets: number[]): string[] {
  const cuts = [...new Set(offsets.map((offset) => offset % (text.length + 1)))].sort((a, b) => a - b);
  const chunks: string[] = [];
  let from = 0;
  for (const cut of cuts) {
    chunks.push(text.slice(from, cut));
    from = cut;
  }
  chunks.push(text.slice(from));
  return chunks;
}

describe('sdk: SSE parser', () => {
  it('reads ids, event names, multi-line data and comments as the server writes them', () => {
    const events = parseAll([
      ': stream open\n\n',
      'id: 1-0\nevent: queued\ndata: {"runId":"r"}\n\n',
      ': keep-alive\n\n',
      'id: 1-1\nevent: output\ndata: line one\ndata: line two\n\n',
    ]);
    assert.deepEqual(events, [
      { id: '1-0', event: 'queued', data: '{"runId":"r"}', retryMs: null },
      { id: '1-1', event: 'output', data: 'line one\nline two', retryMs: null },
    ]);
  });

  it('follows the spec on defaults, spaces, id persistence, retry and unknown fields', () => {
    const events = parseAll([
      '\uFEFFdata:no space\n\n',
      'data:  two spaces\nid: 7\nretry: 1500\nretry: soon\nbogus: x\n\n',
      'data\n\n',
      'event: named\n\n',
      'id: a\0b\ndata: nul id ignored\n\n',
      'data: unfinished',
    ]);
    assert.deepEqual(events, [
      { id: '', event: 'message', data: 'no space', retryMs: null },
      { id: '7', event: 'message', data: ' two spaces', retryMs: 1500 },
      { id: '7', event: 'message', data: '', retryMs: 1500 },
      { id: '7', event: 'message', data: 'nul id ignored', retryMs: 1500 },
    ]);
  });

  it('parses the same events however the text is cut into chunks and whichever line ending is used', () => {
    const field = fc.string({ unit: fc.constantFrom('a', 'b', ' ', ':', '{', '"', 'é', '😀'), maxLength: 12 });
    const event = fc.record({
      id: fc.stringMatching(/^[0-9]{1,4}-[0-9]{1,2}$/),
      event: fc.constantFrom('queued', 'output', 'complete'),
      dataLines: fc.array(field, { minLength: 1, maxLength: 3 }),
      commentBefore: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 8 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat(), { maxLength: 20 }),
        (events, newline, offsets) => {
          const text = events
            .map((item) =>
              [
                ...(item.commentBefore ? [': keep-alive', ''] : []),
                `id: ${item.id}`,
                `event: ${item.event}`,
                ...item.dataLines.map((line) => `data: ${line}`),
                '',
                '',
              ].join(newline),
            )
            .join('');
          const expected = events.map((item) => ({
            id: item.id,
            event: item.event,
            data: item.dataLines.join('\n'),
            retryMs: null,
          }));
          assert.deepEqual(parseAll(cutAt(text, offsets)), expected);
          assert.deepEqual(parseAll([...text]), expected, 'one character per chunk');
        },
      ),
    );
  });

  it('refuses a line or event data over its bound instead of growing without limit', () => {
    const parser = new SseParser({ lineLengthMax: 64, eventDataLengthMax: 100 });
    assert.deepEqual(parser.push(`data: ${'x'.repeat(50)}\n\n`).length, 1);
    assert.throws(
      () => parser.push('data: ' + 'y'.repeat(70)),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'EVENT_TOO_LARGE',
    );
    const dataParser = new SseParser({ lineLengthMax: 64, eventDataLengthMax: 100 });
    assert.throws(
      () => dataParser.push(`data: ${'z'.repeat(40)}\n`.repeat(3)),
      (error: unknown) => error instanceof SvcStreamError && error.code === 'EVENT_TOO_LARGE',
    );
  });
});
