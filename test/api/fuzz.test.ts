// Property: whatever arrives (random paths, methods, headers, bodies, huge or malformed JSON), the API answers
// with a status below 500 and, for anything but HEAD, a JSON body. Runs are bounded; fast-check prints the
// seed on failure.
import assert from 'node:assert/strict';
import http from 'node:http';
import fc from 'fast-check';
import { useApiOnRedis } from './harness.js';

interface RawResponse {
  status: number;
  contentType: string;
  body: string;
}

function rawRequest(baseUrl: string, method: string, path: string, headers: Record<string, string>,
  body: string | undefined): Promise<RawResponse | null> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    let request: http.ClientRequest;
    try {
      // An explicit Content-Length keeps the framing valid: Node sends OPTIONS/DELETE bodies unframed otherwise.
      const framing = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
      request = http.request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, ...framing },
        timeout: 10_000 });
    } catch {
      resolve(null); // the client itself refused to send it (illegal characters): nothing to test
      return;
    }
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({
        status: response.statusCode ?? 0, contentType: String(response.headers['content-type'] ?? ''),
        body: Buffer.concat(chunks).toString('utf8'),
      }));
    });
    request.on('timeout', () => request.destroy(new Error(`no answer to ${method} ${path}`)));
    request.on('error', reject);
    request.end(body);
  });
}

const knownPaths = ['/health', '/ready', '/docs', '/openapi.json', '/keys', '/users', '/credentials', '/projects',
  '/work/stats', '/keys/{id}', '/keys/{id}/revoke', '/keys/{id}/rotate', '/credentials/{id}', '/projects/{id}',
  '/projects/{id}/commands', '/runs/{id}', '/runs/{id}/cancel'];

const segment = fc.oneof(
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.constantFrom('..', '%', '%00', '%E0%A4%A', '%2F', 'prj_000000000aaaaaaaaaaaaaaaa', '😀', ''),
);

const pathArbitrary = fc.oneof(
  fc.tuple(fc.constantFrom(...knownPaths), segment, fc.option(fc.string({ maxLength: 30 }).map(encodeURIComponent)))
    .map(([template, id, query]) => template.replace('{id}', id) + (query === null ? '' : `?${query}`)),
  fc.array(segment, { maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
  fc.tuple(fc.constantFrom('/projects', '/credentials', '/keys'),
    fc.dictionary(fc.constantFrom('limit', 'cursor', 'category', 'x'), fc.string({ maxLength: 12 }), { maxKeys: 3 }))
    .map(([path, query]) => `${path}?${new URLSearchParams(query).toString()}`),
);

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)), maxLength: 60 });

const bodyArbitrary = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 4 }),
  fc.string({ maxLength: 200 }),
  fc.record({
    name: fc.oneof(fc.string({ maxLength: 200 }), fc.integer()),
    workspace: fc.oneof(fc.string({ maxLength: 40 }), fc.constant('/tmp/w')),
    command: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }), fc.string()),
    category: fc.constantFrom('gitea', 'cloudflare', 'woodpecker', 'aws', ''),
    value: fc.string({ maxLength: 40 }),
    allowed_ips: fc.oneof(fc.constant(null), fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), printable), { maxLength: 3 })),
    expires_at: fc.oneof(fc.constant(null), fc.date({ noInvalidDate: true }).map((date) => date.toISOString()), printable),
    role: fc.constantFrom('admin', 'developer', 'root'),
  }, { requiredKeys: [] }).map((record) => JSON.stringify(record)),
  fc.integer({ min: 0, max: 400_000 }).map((size) => `{"name":"${'x'.repeat(size)}"}`),
  fc.constantFrom('{', '{"a":', '[1,2', 'null', '"just a string"', '\u0000', '{"__proto__":{"polluted":1}}', '{}{}'),
);

describe('api: fuzzing never yields a 5xx', function () {
  this.timeout(90_000);
  const setup = useApiOnRedis();

  it('answers random requests with a 4xx/2xx JSON error or result', async () => {
    await fc.assert(fc.asyncProperty(
      fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'),
      pathArbitrary,
      fc.oneof(fc.constant('admin'), fc.constant(null), printable),
      fc.constantFrom('application/json', 'application/json; charset=utf-16', 'text/plain',
        'application/x-www-form-urlencoded', 'application/merge-patch+json', 'multipart/form-data', ''),
      fc.record({ 'x-request-id': printable, 'x-forwarded-for': fc.oneof(fc.ipV4(), fc.ipV6(), printable) },
        { requiredKeys: [] }),
      bodyArbitrary,
      async (method, path, key, contentType, extraHeaders, body) => {
        const headers: Record<string, string> = { ...extraHeaders };
        if (key !== null) headers['x-api-key'] = key === 'admin' ? setup.api.adminKey : key;
        if (contentType) headers['content-type'] = contentType;
        const response = await rawRequest(setup.api.baseUrl, method, path, headers, method === 'GET' || method === 'HEAD' ? undefined : body);
        if (response === null) return;
        assert.ok(response.status < 500, `${method} ${path} → ${response.status} ${response.body.slice(0, 300)}`);
        if (method === 'HEAD' || response.status === 204) return;
        if (path.startsWith('/docs') && response.status === 200) return;
        assert.match(response.contentType, /application\/json/, `${method} ${path} → ${response.contentType}`);
        const parsed = JSON.parse(response.body) as { code?: string };
        if (response.status >= 400) assert.equal(typeof parsed.code, 'string');
      },
    ), { numRuns: Number(process.env.API_FUZZ_RUNS ?? 300) });
  });

  it('survives deeply nested and enormous JSON', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    for (const body of [deep, `{"name":${deep}}`, JSON.stringify({ name: 'x', workspace: '/w', command: Array(5000).fill('a') })]) {
      const response = await rawRequest(setup.api.baseUrl, 'POST', '/projects',
        { 'x-api-key': setup.api.adminKey, 'content-type': 'application/json' }, body);
      assert.ok(response !== null && response.status >= 400 && response.status < 500, String(response?.status));
    }
  });
});
