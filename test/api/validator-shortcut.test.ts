// The request-validation shortcut of api/openapi/validator.ts (skipInputlessRequests) against the library's own
// validation: two servers run the keyed app's validator chain, one with the shortcut and one without, and every
// request (any documented operation, with or without a query string or body, random headers) must get the same
// answer from both. If the shortcut skipped a request the library would refuse, the answers would differ.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import fc from 'fast-check';
import express, { type NextFunction, type Request, type Response } from 'express';
import { validatorOptions } from '../../api/app.js';
import { inSequence } from '../../api/keyed-chain.js';
import { openApiDocument } from '../../api/openapi/document.js';
import { needsInput, openApiValidatorChain, type Operation } from '../../api/openapi/validator.js';

const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;
type Paths = Record<string, Record<string, unknown> & { parameters?: [] }>;
const paths = openApiDocument.paths as unknown as Paths;
const operations = Object.entries(paths).flatMap(([path, item]) =>
  methods
    .filter((method) => item[method] !== undefined)
    .map((method) => ({ path, method, operation: item[method] as Operation, item })),
);

/** skipped counts the requests whose validation the shortcut skipped. */
let skipped = 0;

async function serve(skipInputlessRequests: boolean): Promise<{ url: string; server: Server }> {
  const app = express();
  app.use(
    inSequence([
      express.json({ strict: true, type: ['application/json', 'application/*+json'] }),
      ...openApiValidatorChain(validatorOptions(false), {
        skipInputlessRequests,
        onSkip: () => {
          skipped++;
        },
      }),
      (req: Request, res: Response) => {
        res.json({ query: req.query, params: req.params });
      },
    ]),
  );
  app.use(
    (
      err: { status?: number; message?: string; errors?: unknown },
      _req: Request,
      res: Response,
      _next: NextFunction,
    ) => {
      res.status(err.status ?? 500).json({ message: err.message, errors: err.errors });
    },
  );
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const idArbitrary = fc.oneof(
  fc.constantFrom('prj_0000000000aaaaaaaaaaaaaaaa', 'x', '0', '%2F', 'a%20b'),
  fc.string({ maxLength: 10 }).map(encodeURIComponent),
);
const headerArbitrary = fc.dictionary(
  fc.constantFrom('accept', 'x-api-key', 'last-event-id', 'cookie', 'x-request-id', 'if-none-match', 'x-custom'),
  fc.string({ maxLength: 80 }).map((s) => s.replace(/[^\x20-\x7e]/g, 'x')),
  { maxKeys: 4 },
);

describe('api: the validator shortcut for requests without input', function () {
  this.timeout(120_000);
  let withShortcut: { url: string; server: Server };
  let without: { url: string; server: Server };
  before(async () => {
    withShortcut = await serve(true);
    without = await serve(false);
  });
  after(() => {
    withShortcut?.server.close();
    without?.server.close();
  });

  it('applies to the list operations (no body, optional query parameters only) and to nothing with other input', () => {
    const skippable = operations
      .filter((o) => !needsInput(o.operation, o.item))
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    assert.ok(skippable.includes('GET /projects'), `GET /projects is skippable: ${skippable.join(', ')}`);
    assert.ok(!skippable.includes('GET /projects/{id}'), 'a path parameter rules it out');
    assert.ok(!skippable.includes('POST /projects'), 'a body rules it out');
    assert.ok(!needsInput({ parameters: [{ in: 'query', required: false }] }, {}));
    assert.ok(needsInput({ parameters: [{ in: 'query', required: true }] }, {}), 'a required query parameter');
    assert.ok(needsInput({ parameters: [{ in: 'header' }] }, {}), 'a header parameter');
    assert.ok(needsInput({}, { parameters: [{ in: 'path', required: true }] }), 'a path item parameter');
    assert.ok(needsInput({ parameters: [{ $ref: '#/components/parameters/x' }] }, {}), 'a $ref');
    assert.ok(needsInput({}, undefined), 'an unknown path item');
  });

  it('skips validation of GET /projects without a query, and validates it with one', async () => {
    const before = skipped;
    assert.equal((await fetch(`${withShortcut.url}/projects`)).status, 200);
    assert.equal(skipped, before + 1, 'skipped');
    assert.equal((await fetch(`${withShortcut.url}/projects?limit=0`)).status, 400);
    assert.equal((await fetch(`${withShortcut.url}/projects/prj_000000000aaaaaaaaaaaaaaaa`)).status, 200);
    assert.equal(skipped, before + 1, 'a query string or a path parameter is validated');
    assert.equal((await fetch(`${without.url}/projects`)).status, 200);
    assert.equal(skipped, before + 1, 'the server without the shortcut validated it');
  });

  it('answers every request as the library does (fast-check; the seed is printed on failure)', async () => {
    const before = skipped;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...operations),
        idArbitrary,
        fc.constantFrom('', '?', '?limit=2', '?limit=0', '?bogus=1', '?category=gitea'),
        fc.option(fc.constantFrom('{}', '{"name":"x"}', 'not json', '[]'), { nil: undefined }),
        headerArbitrary,
        async (o, id, query, body, headers) => {
          const url = `${o.path.replace(/\{[^}]+\}/g, id)}${query}`;
          const init: RequestInit = {
            method: o.method.toUpperCase(),
            headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
            ...(body !== undefined && o.method !== 'get' ? { body } : {}),
          };
          const [a, b] = await Promise.all([fetch(withShortcut.url + url, init), fetch(without.url + url, init)]);
          const [textA, textB] = await Promise.all([a.text(), b.text()]);
          assert.equal(a.status, b.status, `${init.method} ${url}: ${textA} vs ${textB}`);
          assert.equal(textA, textB, `${init.method} ${url}`);
        },
      ),
      { numRuns: 300 },
    );
    assert.ok(skipped - before >= 10, `the shortcut was taken (${skipped - before} times)`);
  });
});
