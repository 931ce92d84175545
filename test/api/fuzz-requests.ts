// Random HTTP requests for the API fuzz properties (one API process in test/api, a cluster in test/cluster-api):
// paths (route templates with odd ids, and junk), methods, keys, content types, headers and bodies (JSON, junk,
// huge). rawRequest sends exactly what it is given and reads the whole answer, except an event stream, which it
// closes once the status is known.
import http from 'node:http';
import https from 'node:https';
import fc from 'fast-check';

/** RAW_REQUEST_TIMEOUT_MS bounds one fuzz request. */
export const RAW_REQUEST_TIMEOUT_MS = 15_000;

export interface RawResponse {
  status: number;
  contentType: string;
  body: string;
}

export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
  /** ca is trusted for an https:// baseUrl (a cluster's own CA). */
  ca?: Buffer,
): Promise<RawResponse | null> {
  const url = new URL(baseUrl);
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    let request: http.ClientRequest;
    try {
      // An explicit Content-Length keeps the framing valid: Node sends OPTIONS/DELETE bodies unframed otherwise.
      const framing = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
      request = (secure ? https.request : http.request)({
        ...(secure && ca ? { ca } : {}),
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: { ...headers, ...framing },
        timeout: RAW_REQUEST_TIMEOUT_MS,
      });
    } catch {
      resolve(null); // the client itself refused to send it (illegal characters): nothing to test
      return;
    }
    request.on('response', (response) => {
      const contentType = String(response.headers['content-type'] ?? '');
      if (contentType.startsWith('text/event-stream')) {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, contentType, body: '' });
        return;
      }
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, contentType, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    request.on('timeout', () =>
      request.destroy(new Error(`no answer to ${method} ${path} within ${RAW_REQUEST_TIMEOUT_MS} ms`)),
    );
    request.on('error', reject);
    request.end(body);
  });
}

const segment = fc.oneof(
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc.constantFrom(
    '..',
    '%',
    '%00',
    '%E0%A4%A',
    '%2F',
    'prj_000000000aaaaaaaaaaaaaaaa',
    'run_000000000aaaaaaaaaaaaaaaa',
    '😀',
    '',
    '0',
    '-1',
  ),
);

/** requestPathArbitrary makes paths from the route templates (each {id} an odd segment) and from junk. */
export function requestPathArbitrary(templates: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc
      .tuple(fc.constantFrom(...templates), segment, fc.option(fc.string({ maxLength: 30 }).map(encodeURIComponent)))
      .map(([template, id, query]) => template.replaceAll('{id}', id) + (query === null ? '' : `?${query}`)),
    fc.array(segment, { maxLength: 5 }).map((segments) => `/${segments.join('/')}`),
    fc
      .tuple(
        fc.constantFrom('/projects', '/credentials', '/keys', '/albums'),
        fc.dictionary(fc.constantFrom('limit', 'cursor', 'category', 'x'), fc.string({ maxLength: 12 }), {
          maxKeys: 3,
        }),
      )
      .map(([path, query]) => `${path}?${new URLSearchParams(query).toString()}`),
  );
}

export const methodArbitrary = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD');

export const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
  maxLength: 60,
});

export const contentTypeArbitrary = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/merge-patch+json',
  'multipart/form-data',
  '',
);

export const extraHeadersArbitrary = fc.record(
  {
    'x-request-id': printable,
    'x-forwarded-for': fc.oneof(fc.ipV4(), fc.ipV6(), printable),
    'last-event-id': printable,
  },
  { requiredKeys: [] },
);

export const bodyArbitrary = fc.oneof(
  fc.constant(undefined),
  fc.json({ maxDepth: 4 }),
  fc.string({ maxLength: 200 }),
  fc
    .record(
      {
        name: fc.oneof(fc.string({ maxLength: 200 }), fc.integer()),
        workspace: fc.oneof(fc.string({ maxLength: 40 }), fc.constant('/tmp/w')),
        command: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }), fc.string()),
        category: fc.constantFrom('gitea', 'cloudflare', 'woodpecker', 'aws', ''),
        value: fc.string({ maxLength: 40 }),
        prompt: fc.string({ maxLength: 40 }),
        allowed_ips: fc.oneof(fc.constant(null), fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), printable), { maxLength: 3 })),
        expires_at: fc.oneof(
          fc.constant(null),
          fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
          printable,
        ),
        role: fc.constantFrom('admin', 'developer', 'root'),
      },
      { requiredKeys: [] },
    )
    .map((record) => JSON.stringify(record)),
  fc.integer({ min: 0, max: 400_000 }).map((size) => `{"name":"${'x'.repeat(size)}"}`),
  fc.constantFrom('{', '{"a":', '[1,2', 'null', '"just a string"', '\u0000', '{"__proto__":{"polluted":1}}', '{}{}'),
);
