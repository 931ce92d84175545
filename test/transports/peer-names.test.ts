// PeerNames (transports/node/peer-names.ts) looks peer host names up with c-ares against a real UDP name server
// of this test: a name the DNS answers, a name it says does not exist (then the system's resolver: /etc/hosts),
// a DNS that never answers (a bounded failure, no getaddrinfo left behind), and close() cancelling a wait. And a
// grpc-js channel under PEER_NAMES_OPTION resolves its target's name through it (transports/grpc/peer-resolver.ts).
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import * as grpc from '@grpc/grpc-js';
import { createServer } from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Agent, fetch } from 'undici';
import { peerHttp2Dial } from '../../transports/grpc/tls.js';
import { PeerNames } from '../../transports/node/peer-names.js';
import { grpcTarget, PEER_NAMES_OPTION } from '../../transports/grpc/peer-resolver.js';

/** LOOKUP_TIMEOUT_MS is the tests' nameLookupTimeoutMs: short, so that the black hole's failure comes soon. */
const LOOKUP_TIMEOUT_MS = 200;
const DNS_TYPE_A = 1;

/**
 * NameServer answers every query on 127.0.0.1 (a random port): the A record of a name in `records`, no data for
 * other types of such a name, NXDOMAIN for any other name; or nothing at all when `silent`.
 */
class NameServer {
  silent = false;
  queries = 0;

  private constructor(
    private readonly socket: Socket,
    private readonly records: ReadonlyMap<string, string>,
  ) {
    socket.on('message', (query, from) => {
      this.queries++;
      if (this.silent) return;
      const answer = this.answer(query);
      if (answer) socket.send(answer, from.port, from.address);
    });
  }

  static async start(records: Record<string, string>): Promise<NameServer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new NameServer(socket, new Map(Object.entries(records)));
  }

  get address(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  close(): void {
    this.socket.close();
  }

  /** answer is the reply to one query: its header and question, then at most one A record. */
  private answer(query: Buffer): Buffer | null {
    if (query.length < 12) return null;
    const labels: string[] = [];
    let at = 12;
    while (at < query.length && query[at] !== 0) {
      labels.push(query.toString('latin1', at + 1, at + 1 + query[at]!));
      at += 1 + query[at]!;
    }
    const questionEnd = at + 5; // the root label, QTYPE, QCLASS
    if (questionEnd > query.length) return null;
    const type = query.readUInt16BE(at + 1);
    const address = this.records.get(labels.join('.').toLowerCase());
    const header = Buffer.from(query.subarray(0, 12));
    header.writeUInt16BE(address === undefined ? 0x8183 : 0x8180, 2); // a response; NXDOMAIN or no error
    header.writeUInt16BE(address !== undefined && type === DNS_TYPE_A ? 1 : 0, 6); // ANCOUNT
    header.writeUInt16BE(0, 8); // NSCOUNT
    header.writeUInt16BE(0, 10); // ARCOUNT
    const question = query.subarray(12, questionEnd);
    if (address === undefined || type !== DNS_TYPE_A) return Buffer.concat([header, question]);
    const record = Buffer.alloc(16);
    record.writeUInt16BE(0xc00c, 0); // the question's name
    record.writeUInt16BE(DNS_TYPE_A, 2);
    record.writeUInt16BE(1, 4); // IN
    record.writeUInt32BE(60, 6); // TTL
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
    return Buffer.concat([header, question, record]);
  }
}

describe('transports: PeerNames, peer host names looked up with c-ares', function () {
  this.timeout(20_000);
  let server: NameServer;
  const open: PeerNames[] = [];

  const names = (): PeerNames => {
    const peerNames = new PeerNames(LOOKUP_TIMEOUT_MS, [server.address]);
    open.push(peerNames);
    return peerNames;
  };

  beforeEach(async () => {
    server = await NameServer.start({ 'n2.peers.test': '127.0.0.2' });
  });

  afterEach(() => {
    for (const peerNames of open.splice(0)) peerNames.close();
    server.close();
  });

  it('answers an IP address as it is, asking no name server', async () => {
    assert.deepEqual(await names().addresses('127.0.0.9'), [{ address: '127.0.0.9', family: 4 }]);
    assert.deepEqual(await names().addresses('::1'), [{ address: '::1', family: 6 }]);
    assert.equal(server.queries, 0);
  });

  it("answers a name with the DNS's address, for net.connect's lookup too", async () => {
    const peerNames = names();
    assert.deepEqual(await peerNames.addresses('n2.peers.test'), [{ address: '127.0.0.2', family: 4 }]);
    const one = await new Promise<[string, number | undefined]>((resolve, reject) =>
      peerNames.lookup('n2.peers.test', {}, (err, address, family) =>
        err ? reject(err) : resolve([address as string, family]),
      ),
    );
    assert.deepEqual(one, ['127.0.0.2', 4]);
    const all = await new Promise<unknown>((resolve, reject) =>
      peerNames.lookup('n2.peers.test', { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
    );
    assert.deepEqual(all, [{ address: '127.0.0.2', family: 4 }]);
  });

  it('a name the DNS says does not exist goes to the system resolver once (localhost from /etc/hosts)', async () => {
    const found = await names().addresses('localhost', 4);
    assert.deepEqual(found, [{ address: '127.0.0.1', family: 4 }]);
    assert.ok(server.queries >= 1, 'the DNS was asked first');
    await assert.rejects(names().addresses('no-such-peer.invalid'), { code: 'ENOTFOUND' });
  });

  it('a DNS that never answers fails the lookup within its bound, without the system resolver', async () => {
    server.silent = true;
    const startedAt = performance.now();
    await assert.rejects(names().addresses('n3.peers.test'), { code: 'ETIMEOUT' });
    // c-ares tries NAME_LOOKUP_TRIES times, doubling its timeout: a few LOOKUP_TIMEOUT_MS, never getaddrinfo's 10 s.
    assert.ok(performance.now() - startedAt < 10_000, 'the lookup failed within its bound');
    assert.deepEqual(
      process.getActiveResourcesInfo().filter((type) => type === 'GetAddrInfoReqWrap'),
      [],
    );
  });

  it('close() cancels a lookup waiting on the DNS, and fails the lookups asked for after it', async () => {
    server.silent = true;
    const peerNames = new PeerNames(60_000, [server.address]);
    const waiting = peerNames.addresses('n3.peers.test');
    const asked = server.queries;
    await new Promise<void>((resolve, reject) => {
      const poll = setInterval(() => {
        if (server.queries > asked) resolve();
      }, 10);
      waiting.catch(reject).finally(() => clearInterval(poll));
      setTimeout(() => clearInterval(poll), 5_000).unref();
    });
    peerNames.close();
    await assert.rejects(waiting, { code: 'ECANCELLED' });
    await assert.rejects(peerNames.addresses('n2.peers.test'), { code: 'ECANCELLED' });
  });

  it("the lean client's dial and the status poll's undici Agent connect through its lookup", async () => {
    const peerNames = names();
    const h2 = http2.createServer((_req, res) => res.end('h2'));
    const h1 = createServer((_req, res) => res.end('h1'));
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.2', resolve));
    await new Promise<void>((resolve) => h1.listen(0, '127.0.0.2', resolve));
    const agent = new Agent({ connect: { lookup: peerNames.lookup } });
    const session = peerHttp2Dial(
      { mode: 'insecure' },
      undefined,
      peerNames.lookup,
    )(`n2.peers.test:${(h2.address() as AddressInfo).port}`);
    try {
      const viaHttp2 = await new Promise<string>((resolve, reject) => {
        const stream = session.request({ ':path': '/' });
        let body = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => (body += chunk));
        stream.on('end', () => resolve(body));
        stream.on('error', reject);
        stream.end();
      });
      assert.equal(viaHttp2, 'h2');
      const response = await fetch(`http://n2.peers.test:${(h1.address() as AddressInfo).port}/`, {
        dispatcher: agent,
      });
      assert.equal(await response.text(), 'h1');
      assert.ok(server.queries >= 2, 'both asked the name server');
    } finally {
      session.destroy();
      await agent.close();
      h1.close();
      h2.close();
    }
  });

  it("a grpc-js channel under PEER_NAMES_OPTION connects to the address PeerNames gives for its target's name", async () => {
    const grpcServer = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      grpcServer.bindAsync('127.0.0.2:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
    const options = { [PEER_NAMES_OPTION]: names() };
    assert.equal(grpcTarget(`n2.peers.test:${port}`, {}), `n2.peers.test:${port}`, 'no option: the address itself');
    const target = grpcTarget(`n2.peers.test:${port}`, options);
    assert.equal(target, `svc-peer:n2.peers.test:${port}`);
    const ready = (client: grpc.Client, waitMs: number): Promise<Error | undefined> =>
      new Promise((resolve) => client.waitForReady(Date.now() + waitMs, (err) => resolve(err)));
    const client = new grpc.Client(target, grpc.credentials.createInsecure(), options);
    const unknown = new grpc.Client(
      grpcTarget(`no-such-peer.invalid:${port}`, options),
      grpc.credentials.createInsecure(),
      options,
    );
    try {
      assert.equal(await ready(client, 5_000), undefined, 'connected through the name server');
      assert.ok(await ready(unknown, 1_000), 'a name nobody knows does not connect');
    } finally {
      client.close();
      unknown.close();
      grpcServer.forceShutdown();
    }
  });
});
