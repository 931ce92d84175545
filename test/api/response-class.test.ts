// ApiServerResponse (api/response-class.ts) against node's own ServerResponse: the same handler, doing a random
// sequence of header operations (constant lists added, headers of the same names or others set, appended, removed,
// read, listed; writeHead with headers of its own; Express's res.json), runs on a server of each class, and the
// answers must carry the same headers with the same values, and every read of a header must see the same value.
// The block is also required to be taken (the head holds it in one piece) when nothing made it fall back.
import assert from 'node:assert/strict';
import { createServer, request, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import express from 'express';
import {
  answersWithHeaderBlocks,
  ApiServerResponse,
  HeaderBlock,
  setConstantHeaders,
  type ConstantHeaders,
} from '../../api/response-class.js';
import { securityHeaders } from '../../transports/node/http-server.js';

const helmetHeaders = securityHeaders(true);
const apiHeaders: ConstantHeaders = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
];
const limitHeaders: ConstantHeaders = [
  ['RateLimit-Limit', '50'],
  ['RateLimit-Policy', '50;w=1'],
];
const lists = [helmetHeaders, apiHeaders, limitHeaders];
/** names the operations pick from: some in the lists (in other cases too), some not. */
const names = [
  'Content-Security-Policy',
  'content-security-policy',
  'CACHE-CONTROL',
  'X-Frame-Options',
  'RateLimit-Limit',
  'X-Request-Id',
  'X-Other',
];

type Operation =
  | { op: 'constant'; list: number }
  | { op: 'set'; name: string; value: string }
  | { op: 'append'; name: string; value: string }
  | { op: 'remove'; name: string }
  | { op: 'get'; name: string }
  | { op: 'has'; name: string }
  | { op: 'list' };
type Ending = { op: 'end' } | { op: 'writeHead'; headers: Record<string, string> } | { op: 'json' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  fc.record({ op: fc.constant('constant' as const), list: fc.integer({ min: 0, max: lists.length - 1 }) }),
  fc.record({
    op: fc.constant('set' as const),
    name: fc.constantFrom(...names),
    value: fc.stringMatching(/^[a-z0-9;=]{1,8}$/),
  }),
  fc.record({
    op: fc.constant('append' as const),
    name: fc.constantFrom(...names),
    value: fc.stringMatching(/^[a-z0-9]{1,8}$/),
  }),
  fc.record({ op: fc.constant('remove' as const), name: fc.constantFrom(...names) }),
  fc.record({ op: fc.constant('get' as const), name: fc.constantFrom(...names) }),
  fc.record({ op: fc.constant('has' as const), name: fc.constantFrom(...names) }),
  fc.record({ op: fc.constant('list' as const) }),
);
const ending: fc.Arbitrary<Ending> = fc.oneof(
  fc.constant({ op: 'end' as const }),
  fc.constant({ op: 'json' as const }),
  fc.record({
    op: fc.constant('writeHead' as const),
    headers: fc.dictionary(fc.constantFrom(...names), fc.stringMatching(/^[a-z0-9]{1,8}$/), {
      maxKeys: 2,
    }),
  }),
);

interface Script {
  operations: Operation[];
  ending: Ending;
}

/** run does the script's operations on res; what it read goes into the answer's body (for end and json). */
function run(script: Script, res: ServerResponse): void {
  const reads: unknown[] = [];
  for (const step of script.operations) {
    if (step.op === 'constant') setConstantHeaders(res, lists[step.list]!);
    else if (step.op === 'set') res.setHeader(step.name, step.value);
    else if (step.op === 'append') res.appendHeader(step.name, step.value);
    else if (step.op === 'remove') res.removeHeader(step.name);
    else if (step.op === 'get') reads.push(res.getHeader(step.name) ?? null);
    else if (step.op === 'has') reads.push(res.hasHeader(step.name));
    else reads.push(Object.entries(res.getHeaders()).sort(), res.getHeaderNames().sort());
  }
  const body = JSON.stringify(reads);
  if (script.ending.op === 'writeHead') res.writeHead(200, script.ending.headers).end(body);
  else if (script.ending.op === 'json') (res as unknown as express.Response).json(reads);
  else res.end(body);
}

let script: Script = { operations: [], ending: { op: 'end' } };

async function serve(responseClass: typeof ServerResponse, viaExpress: boolean, blocks = false): Promise<Server> {
  const app = express();
  if (blocks) answersWithHeaderBlocks(app);
  app.use((_req, res) => run(script, res));
  const handler = viaExpress ? app : (_req: IncomingMessage, res: ServerResponse) => run(script, res);
  const server = createServer({ ServerResponse: responseClass }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

interface Answer {
  /** headers are name (lower-cased) and value pairs, sorted, Date left out. */
  headers: string[];
  rawHead: string;
  body: string;
}

function ask(server: Server): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', path: '/' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const headers: string[] = [];
        for (let at = 0; at < res.rawHeaders.length; at += 2) {
          const name = res.rawHeaders[at]!.toLowerCase();
          if (name !== 'date') headers.push(`${name}: ${res.rawHeaders[at + 1]}`);
        }
        resolve({ headers: headers.sort(), rawHead: res.rawHeaders.join('\n'), body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ApiServerResponse: constant headers as one block', function () {
  const servers: Server[] = [];
  let plain: Server;
  let blocked: Server;
  let plainExpress: Server;
  let blockedExpress: Server;
  let plainUnderBlocks: Server;

  before(async () => {
    plain = await serve(ServerResponse, false);
    blocked = await serve(ApiServerResponse, false);
    plainExpress = await serve(ServerResponse, true);
    blockedExpress = await serve(ApiServerResponse, true, true);
    // A server made with node's own class (a test's supertest) under an app whose responses have the blocks.
    plainUnderBlocks = await serve(ServerResponse, true, true);
    servers.push(plain, blocked, plainExpress, blockedExpress, plainUnderBlocks);
  });
  after(() => {
    for (const server of servers) server.close();
  });

  it('answers with the same headers and reads as node’s ServerResponse, whatever is done to the headers', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { maxLength: 12 }), ending, async (operations, end) => {
        script = { operations, ending: end };
        const viaExpress = end.op === 'json';
        const expected = await ask(viaExpress ? plainExpress : plain);
        const actual = await ask(viaExpress ? blockedExpress : blocked);
        assert.deepEqual(actual.headers, expected.headers);
        assert.equal(actual.body, expected.body);
        if (viaExpress) {
          const underBlocks = await ask(plainUnderBlocks);
          assert.deepEqual(underBlocks.headers, expected.headers);
          assert.equal(underBlocks.body, expected.body);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('writes the constant lists in one piece when nothing else touches their names', async () => {
    script = {
      operations: [
        { op: 'constant', list: 0 },
        { op: 'set', name: 'X-Request-Id', value: 'r1' },
        { op: 'constant', list: 1 },
        { op: 'constant', list: 2 },
        { op: 'get', name: 'cache-control' },
      ],
      ending: { op: 'json' },
    };
    const expected = await ask(plainExpress);
    const actual = await ask(blockedExpress);
    assert.deepEqual(actual.headers, expected.headers);
    assert.equal(actual.body, JSON.stringify(['no-store']));
    assert.deepEqual((await ask(plainUnderBlocks)).headers, expected.headers);
    // One X-Content-Type-Options though helmet's list and the API's both hold it, as setHeader would leave it.
    assert.equal(actual.headers.filter((line) => line.startsWith('x-content-type-options:')).length, 1);
    // The block: the lists' headers first, in order, then the ones set one by one.
    const block = new HeaderBlock([...helmetHeaders, ...apiHeaders, ...limitHeaders]);
    const blockNames = block.text
      .split('\r\n')
      .filter((line) => line !== '')
      .map((line) => line.slice(0, line.indexOf(':')));
    assert.deepEqual(
      actual.rawHead
        .split('\n')
        .filter((_, at) => at % 2 === 0)
        .slice(0, blockNames.length),
      blockNames,
    );
  });

  it('replaces a header set one by one with a constant list’s of the same name, the list made after it was set', async () => {
    const freshList: ConstantHeaders = [['X-Made-Later', 'constant']];
    const server = createServer({ ServerResponse: ApiServerResponse }, (_req, res) => {
      res.setHeader('x-made-later', 'one by one');
      setConstantHeaders(res, freshList);
      res.end(String(res.getHeader('X-MADE-LATER')));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await ask(server);
      assert.deepEqual(
        answer.headers.filter((line) => line.startsWith('x-made-later')),
        ['x-made-later: constant'],
      );
      assert.equal(answer.body, 'constant');
    } finally {
      server.close();
    }
  });

  it('refuses a block holding a header node:http frames the answer with, or a value it would refuse', () => {
    assert.throws(() => new HeaderBlock([['Content-Length', '3']]), /node:http's to write/);
    assert.throws(() => new HeaderBlock([['Connection', 'close']]), /node:http's to write/);
    assert.throws(() => new HeaderBlock([['X-A', 'one\r\nX-B: two']]), /invalid value/);
    assert.throws(() => new HeaderBlock([['X A', 'one']]), /invalid header name/);
  });
});
