// `svc openapi` prints the developer API's OpenAPI document and opens no port: it runs with a
// preload that ends the process (exit 99) at any listen() or bind(); a control run shows the
// preload does catch a server.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { printOpenApi } from '../../api/openapi/document.js';
import { runCli } from './helpers.js';

const NO_LISTEN = fileURLToPath(new URL('./no-listen.mjs', import.meta.url));
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/** unresolvedRefs lists every local $ref in doc that does not point at a value inside it. */
function unresolvedRefs(doc: unknown): string[] {
  const missing: string[] = [];
  const resolve = (ref: string): unknown =>
    ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, part) => {
        const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
        return node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined;
      }, doc);
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && (!value.startsWith('#/') || resolve(value) === undefined))
          missing.push(value);
        else walk(value);
      }
    }
  };
  walk(doc);
  return missing;
}

describe('svc openapi', function () {
  this.timeout(60_000);

  it('the no-listen preload ends a process that listens (control)', function () {
    const control = spawnSync(
      process.execPath,
      ['--import', NO_LISTEN, '-e', "require('node:http').createServer().listen(0, '127.0.0.1')"],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(control.status, 99);
    assert.match(control.stderr, /NO-LISTEN: net\.Server\.listen/);
  });

  it('prints the same valid OpenAPI document the code builds, without listening anywhere', async function () {
    const result = await runCli(['openapi'], { nodeArgs: ['--import', NO_LISTEN] });
    assert.equal(result.stderr.includes('NO-LISTEN'), false, result.stderr);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, printOpenApi());
    const doc = JSON.parse(result.stdout) as {
      openapi: string;
      info: { title: string; version: string };
      paths: Record<string, Record<string, { responses?: object }>>;
    };
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.ok(doc.info.title.length > 0 && doc.info.version.length > 0);
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.entries(item).filter(([method]) => HTTP_METHODS.has(method)),
    );
    assert.ok(operations.length > 10, `only ${operations.length} operations`);
    for (const [, operation] of operations)
      assert.ok(operation.responses && Object.keys(operation.responses).length > 0);
    assert.deepEqual(unresolvedRefs(doc), []);
  });
});
