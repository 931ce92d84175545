// Property: whatever arrives (random paths, methods, headers, bodies, huge or malformed JSON), the API answers
// with a status below 500 and, for anything but HEAD, a JSON body. Runs are bounded; fast-check prints the
// seed on failure.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  bodyArbitrary,
  contentTypeArbitrary,
  extraHeadersArbitrary,
  methodArbitrary,
  printable,
  rawRequest,
  requestPathArbitrary,
} from './fuzz-requests.js';
import { useApiOnRedis } from './harness.js';

/** knownPaths are the routes one API process serves (no store node, no event streams). */
const knownPaths = [
  '/health',
  '/ready',
  '/docs',
  '/openapi.json',
  '/keys',
  '/users',
  '/credentials',
  '/projects',
  '/work/stats',
  '/keys/{id}',
  '/keys/{id}/revoke',
  '/keys/{id}/rotate',
  '/credentials/{id}',
  '/projects/{id}',
  '/projects/{id}/commands',
  '/runs/{id}',
  '/runs/{id}/cancel',
];

const pathArbitrary = requestPathArbitrary(knownPaths);

describe('api: fuzzing never yields a 5xx', function () {
  this.timeout(90_000);
  const setup = useApiOnRedis();

  it('answers random requests with a 4xx/2xx JSON error or result', async () => {
    await fc.assert(
      fc.asyncProperty(
        methodArbitrary,
        pathArbitrary,
        fc.oneof(fc.constant('admin'), fc.constant(null), printable),
        contentTypeArbitrary,
        extraHeadersArbitrary,
        bodyArbitrary,
        async (method, path, key, contentType, extraHeaders, body) => {
          const headers: Record<string, string> = { ...extraHeaders };
          if (key !== null) headers['x-api-key'] = key === 'admin' ? setup.api.adminKey : key;
          if (contentType) headers['content-type'] = contentType;
          const response = await rawRequest(
            setup.api.baseUrl,
            method,
            path,
            headers,
            method === 'GET' || method === 'HEAD' ? undefined : body,
          );
          if (response === null) return;
          assert.ok(response.status < 500, `${method} ${path} → ${response.status} ${response.body.slice(0, 300)}`);
          if (method === 'HEAD' || response.status === 204) return;
          if (path.startsWith('/docs') && response.status === 200) return;
          assert.match(response.contentType, /application\/json/, `${method} ${path} → ${response.contentType}`);
          const parsed = JSON.parse(response.body) as { code?: string };
          if (response.status >= 400) assert.equal(typeof parsed.code, 'string');
        },
      ),
      { numRuns: Number(process.env.API_FUZZ_RUNS ?? 300) },
    );
  });

  it('survives deeply nested and enormous JSON', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const body of [
      deep,
      `{"name":${deep}}`,
      JSON.stringify({ name: 'x', workspace: '/w', command: Array(5000).fill('a') }),
    ]) {
      const response = await rawRequest(
        setup.api.baseUrl,
        'POST',
        '/projects',
        { 'x-api-key': setup.api.adminKey, 'content-type': 'application/json' },
        body,
      );
      assert.ok(response !== null && response.status >= 400 && response.status < 500, String(response?.status));
    }
  });
});
