import assert from 'node:assert/strict';
import { openApiDocument, printOpenApi } from '../../api/openapi/document.js';
import { startTestApi } from './harness.js';
import type { TestApi } from './harness.js';

describe('api: service basics', () => {
  let api: TestApi;
  let ready = false;
  before(async () => {
    api = await startTestApi({ config: { isReady: () => ready } });
  });
  after(async () => {
    await api.close();
  });

  it('GET /health answers without a key', async () => {
    const result = await api.call('GET', '/health', { key: null });
    assert.equal(result.status, 200);
    assert.deepEqual(result.json, { status: 'ok' });
  });

  it('GET /ready answers 503 NOT_READY until the readiness callback says ready', async () => {
    const before = await api.call('GET', '/ready', { key: null });
    assert.equal(before.status, 503);
    assert.equal(before.json.code, 'NOT_READY');
    ready = true;
    const after = await api.call('GET', '/ready', { key: null });
    assert.equal(after.status, 200);
  });

  it('echoes a sane X-Request-Id and generates one otherwise, also in error bodies', async () => {
    const echoed = await api.call('GET', '/health', { headers: { 'x-request-id': 'trace-123' } });
    assert.equal(echoed.headers.get('x-request-id'), 'trace-123');
    const odd = await api.call('GET', '/nope', { headers: { 'x-request-id': 'has spaces and <odd>' } });
    const generated = odd.headers.get('x-request-id')!;
    assert.match(generated, /^[0-9a-f-]{36}$/);
    assert.equal(odd.json.requestId, generated);
  });

  it('answers every failure as JSON {code, message, requestId} with a stable code and no HTML', async () => {
    const cases: Array<[string, string, { rawBody?: string; headers?: Record<string, string> }, number, string]> = [
      ['GET', '/no-such-route', {}, 404, 'NOT_FOUND'],
      ['DELETE', '/projects', {}, 405, 'METHOD_NOT_ALLOWED'],
      ['POST', '/projects', { rawBody: '{"name":' }, 400, 'MALFORMED_JSON'],
      ['POST', '/projects', { rawBody: JSON.stringify({ name: 'x' }) }, 400, 'VALIDATION_FAILED'],
      ['POST', '/projects', { rawBody: 'x'.repeat(300_000) }, 413, 'PAYLOAD_TOO_LARGE'],
      [
        'POST',
        '/projects',
        { rawBody: 'name=x', headers: { 'content-type': 'text/plain' } },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      ['GET', '/projects?limit=0', {}, 400, 'VALIDATION_FAILED'],
      ['GET', '/projects?unknown=1', {}, 400, 'VALIDATION_FAILED'],
      ['GET', '/projects/%E0%A4%A', {}, 400, 'VALIDATION_FAILED'],
      ['GET', '/docs/assets/does-not-exist.js', {}, 404, 'NOT_FOUND'],
    ];
    for (const [method, path, options, status, code] of cases) {
      const result = await api.call(method, path, options);
      assert.equal(result.status, status, `${method} ${path}: ${result.text}`);
      assert.match(result.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(result.json.code, code, `${method} ${path}`);
      assert.equal(typeof result.json.message, 'string');
      assert.equal(result.json.requestId, result.headers.get('x-request-id'));
      assert.ok(!result.text.includes('/work/') && !result.text.includes('node_modules'), 'no server paths leak');
    }
  });

  it('gives schema failures details naming the field', async () => {
    const result = await api.call('POST', '/projects', {
      body: { name: 'p', workspace: '/w', command: 'not-an-array' },
    });
    assert.equal(result.json.code, 'VALIDATION_FAILED');
    assert.ok(result.json.details.some((detail: { path: string }) => detail.path === '/body/command'));
  });

  it('serves the OpenAPI 3.1 document, the same one printOpenApi returns without a server', async () => {
    const result = await api.call('GET', '/openapi.json', { key: null });
    assert.equal(result.status, 200);
    assert.deepEqual(result.json, JSON.parse(printOpenApi()));
    assert.equal(result.json.openapi, '3.1.0');
    for (const path of ['/health', '/ready', '/projects', '/work/stats', '/credentials', '/keys']) {
      assert.ok(path in openApiDocument.paths, path);
    }
    assert.match(result.json.info.description, /IP_NOT_ALLOWED/);
  });

  it('serves /docs as HTML from local assets, with no third-party origin', async () => {
    const page = await api.call('GET', '/docs', { key: null });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /text\/html/);
    assert.ok(!/https?:\/\//.test(page.text), 'no absolute URLs, hence no CDN');
    assert.match(page.headers.get('content-security-policy')!, /script-src 'self'/);
    const bundle = await api.call('GET', '/docs/assets/swagger-ui-bundle.js', { key: null });
    assert.equal(bundle.status, 200);
    assert.ok(bundle.text.length > 100_000);
  });
});
