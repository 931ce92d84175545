// The SDK against an HTTPS server whose certificate comes from a private CA (as a cluster's nodes serve): with the
// `dispatcher` option (an undici Agent trusting that CA) calls and event streams work; without it the certificate
// is refused and the call fails as CONNECTION_FAILED, never as a success.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Agent } from 'undici';
import { createApiCert, createClusterCa } from '../../cli/certs/certs.js';
import { SvcClient, SvcConnectionError } from '../../sdk/src/index.js';
import { removeDir, tempDir } from '../cli/helpers.js';

describe('sdk: HTTPS with a private CA (the dispatcher option)', function () {
  this.timeout(60_000);
  let dir: string;
  let server: Server;
  let baseUrl: string;
  let agent: Agent;

  before(async () => {
    dir = await tempDir('sdk-https');
    await createClusterCa({ dir });
    const pair = await createApiCert({ dir, name: 'api', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] });
    server = createServer({ cert: await readFile(pair.certPath), key: await readFile(pair.keyPath) }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', sawKey: req.headers['x-api-key'] === 'k1' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    agent = new Agent({ connect: { ca: await readFile(join(dir, 'ca.crt')) } });
  });

  after(async () => {
    await agent?.close();
    server?.close();
    if (dir) await removeDir(dir);
  });

  it('calls through the dispatcher that trusts the CA', async () => {
    const client = new SvcClient({ baseUrl, apiKey: 'k1', env: {}, dispatcher: agent });
    assert.deepEqual(await client.getHealth(), { status: 'ok', sawKey: false } as unknown);
  });

  it('without it the certificate is refused: CONNECTION_FAILED', async () => {
    const client = new SvcClient({ baseUrl, env: {} });
    await assert.rejects(
      client.getHealth(),
      (error: unknown) => error instanceof SvcConnectionError && error.code === 'CONNECTION_FAILED',
    );
  });
});
