// The node's HTTP port under mutual TLS: HTTPS by default with the node's peer certificate (clients trust the
// cluster CA), plain HTTP refused with 400 HTTPS_REQUIRED at once, a silent connection closed; plaintext only
// with httpTls {mode: 'insecure'}, which the node warns about at start. /metrics only on the metrics listener.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { ConfigError } from '../../cli/node/config.js';
import { Node } from '../../cli/node/node.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, type Pki } from './harness.js';

describe('node: HTTPS on the HTTP port', function () {
  this.timeout(60_000);
  let dir: string;
  let pki: Pki;
  let agent: Agent;

  before(async () => {
    dir = await tempDir('http-tls');
    pki = await makePki(dir, ['h1', 'h2']);
    agent = new Agent({ connect: { ca: await readFile(join(pki.dir, 'ca.crt')) } });
  });
  after(async () => {
    await agent.close();
    await removeDir(dir);
  });

  /** startNode starts a one-node cluster under mutual TLS; httpTls undefined means the node's default. */
  async function startNode(name: string, extra: object, lines: Array<Record<string, unknown>> = []): Promise<Node> {
    const [plan] = await planNodes([name]);
    const config = nodeConfig(
      plan!,
      join(dir, name),
      pki.tls(name),
      { bootstrap: [plan!.member] },
      {
        httpTls: undefined,
        logLevel: 'warn',
        logDestination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
        ...extra,
      },
    );
    const node = new Node(config);
    await node.start();
    return node;
  }

  it('serves HTTPS with the peer certificate by default; plain HTTP gets 400 HTTPS_REQUIRED; a silent client is closed', async () => {
    const node = await startNode('h1', {});
    try {
      assert.match(node.httpAddress, /^https:\/\/127\.0\.0\.1:\d+$/);
      const status = await undiciFetch(`${node.httpAddress}/status`, { dispatcher: agent });
      assert.equal(status.status, 200);
      assert.equal(((await status.json()) as { name: string }).name, 'h1');
      const plain = await undiciFetch(`${node.httpAddress.replace('https:', 'http:')}/status`);
      assert.equal(plain.status, 400);
      assert.deepEqual(((await plain.json()) as { code: string }).code, 'HTTPS_REQUIRED');
      const metrics = await undiciFetch(`${node.metricsAddress}/metrics`);
      assert.equal(metrics.status, 200);
      assert.match(await metrics.text(), /^svc_term /m);
      // A client that connects and sends nothing is closed (the headers timeout), not held open for ever.
      const socket = connect(node.httpPort, '127.0.0.1');
      const closed = await new Promise<boolean>((resolve) => {
        socket.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 30_000).unref();
      });
      assert.ok(closed, 'the silent connection was closed');
    } finally {
      await node.stop();
    }
  });

  it('serves plaintext only when httpTls says so by name, and warns at start', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const node = await startNode('h2', { httpTls: { mode: 'insecure' } }, lines);
    try {
      assert.match(node.httpAddress, /^http:\/\//);
      assert.equal((await undiciFetch(`${node.httpAddress}/status`)).status, 200);
      assert.ok(
        lines.some((line) => line.level === 40 && /HTTP port is PLAINTEXT/.test(String(line.msg))),
        JSON.stringify(lines),
      );
    } finally {
      await node.stop();
    }
    assert.throws(
      () => new Node({ ...nodeConfigLike(), httpTls: { mode: 'tls' } as never }),
      (err: unknown) => err instanceof ConfigError && /httpTls.mode must be 'https' or 'insecure'/.test(err.message),
    );
    assert.throws(
      () => new Node({ ...nodeConfigLike(), httpTls: { mode: 'https', certFile: '', keyFile: 'k' } }),
      /httpTls.certFile must name a file/,
    );
  });

  function nodeConfigLike() {
    return {
      name: 'x',
      dataDir: join(dir, 'x'),
      grpcListen: '127.0.0.1:0',
      httpListen: '127.0.0.1:0',
      bootstrap: [{ name: 'x', grpcAddr: '127.0.0.1:1', httpAddr: 'https://127.0.0.1:2' }],
      tls: { mode: 'insecure' as const },
    };
  }
});
