// The cached route lookup of api/openapi/validator.ts against express-openapi-validator's own metadata
// middleware: for the same request both set the same req.openapi and req.params, or throw the same error.
// If the cache matched differently, validation would silently change; this property would catch it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { NextFunction, Request, Response } from 'express';
import { applyOpenApiMetadata } from 'express-openapi-validator/dist/middlewares/openapi.metadata.js';
import { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context.js';
import { OpenApiSpecLoader } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import { openApiDocument } from '../../api/openapi/document.js';
import { cachedMetadataMiddleware } from '../../api/openapi/validator.js';

type Outcome = { openapi: unknown; params: unknown } | { error: string; status: unknown };

function run(
  middleware: (req: Request, res: Response, next: NextFunction) => unknown,
  method: string,
  url: string,
): Outcome {
  const path = url.split('?')[0]!;
  const req = {
    method,
    url,
    originalUrl: url,
    path,
    baseUrl: '',
    params: {},
    app: { enabled: () => false },
  } as unknown as Request & { openapi?: unknown };
  try {
    middleware(req, {} as Response, () => undefined);
    return { openapi: req.openapi ?? null, params: req.params };
  } catch (error) {
    const failure = error as { name?: string; status?: unknown; message?: string };
    return { error: `${failure.name}: ${failure.message}`, status: failure.status };
  }
}

const documentedPaths = Object.keys(openApiDocument.paths);

const segment = fc.oneof(
  fc.constantFrom(
    'prj_0000000000aaaaaaaaaaaaaaaa',
    'x',
    '0',
    '',
    '%',
    '%E0%A4%A',
    '%2F',
    'a%20b',
    '😀',
    'shots',
    'anchor',
  ),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);

const urlArbitrary = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...documentedPaths),
      fc.array(segment, { minLength: 3, maxLength: 3 }),
      fc.boolean(),
      fc.boolean(),
    )
    .map(([template, ids, slash, query]) => {
      let index = 0;
      const filled = template.replace(/\{[^}]+\}/g, () => ids[index++ % ids.length]!);
      return `${filled}${slash ? '/' : ''}${query ? '?limit=1' : ''}`;
    }),
  fc.array(segment, { maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
  fc.constantFrom('/PROJECTS', '/projects/', '//projects', '/docs', '/docs/x', '/health', '/'),
);

describe('api: the cached OpenAPI route lookup', function () {
  this.timeout(60_000);
  let library: ReturnType<typeof applyOpenApiMetadata>;
  let cached: ReturnType<typeof cachedMetadataMiddleware>;
  before(async () => {
    const spec = await new OpenApiSpecLoader({
      apiDoc: structuredClone(openApiDocument) as never,
      validateApiSpec: false,
      $refParser: { mode: 'bundle' },
    }).load();
    const context = new OpenApiContext(spec, /^\/docs(\/|$)/);
    library = applyOpenApiMetadata(context, null as never);
    cached = cachedMetadataMiddleware(context, null);
  });

  it('matches every documented route with its parameters, as the library does', () => {
    for (const template of documentedPaths) {
      const url = template.replace(/\{[^}]+\}/g, 'prj_0000000000aaaaaaaaaaaaaaaa');
      for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
        const outcome = run(cached, method, url);
        assert.deepEqual(outcome, run(library, method, url), `${method} ${url}`);
        if ('openapi' in outcome && outcome.openapi !== null) {
          assert.equal(
            (outcome.openapi as { openApiRoute: string }).openApiRoute,
            template,
            `${method} ${url} matched its own route`,
          );
        }
      }
    }
  });

  it('gives the same outcome as the library for random requests', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
        urlArbitrary,
        (method, url) => {
          assert.deepEqual(run(cached, method, url), run(library, method, url), `${method} ${url}`);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("gives the library's outcome again for a path it has cached (the parameterless-route cache)", () => {
    // Each request twice, the second from lookupRoute's cache when the first matched a route without parameters.
    fc.assert(
      fc.property(fc.constantFrom('GET', 'POST', 'DELETE'), urlArbitrary, (method, url) => {
        const expected = run(library, method, url);
        assert.deepEqual(run(cached, method, url), expected, `${method} ${url}`);
        assert.deepEqual(run(cached, method, url), expected, `${method} ${url}, again`);
      }),
      { numRuns: 1_000 },
    );
    for (const url of ['/projects', '/PROJECTS', '/projects/', '/work/stats', '/album-templates', '/nowhere']) {
      assert.deepEqual(run(cached, 'GET', url), run(library, 'GET', url), url);
    }
  });
});
