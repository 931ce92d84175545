// NodeConfig is checked once, up front, and a bad one is refused naming the problem.
import assert from 'node:assert/strict';
import { ConfigError, resolveNodeConfig, type NodeConfig } from '../../cli/node/config.js';
import { Node } from '../../cli/node/node.js';

const good: NodeConfig = {
  name: 'n1',
  dataDir: '/tmp/n1',
  grpcListen: '127.0.0.1:7000',
  httpListen: '127.0.0.1:8080',
  bootstrap: [{ name: 'n1', grpcAddr: '127.0.0.1:7000', httpAddr: 'http://127.0.0.1:8080' }],
  tls: { mode: 'insecure' },
};

describe('node: config', function () {
  it('accepts a founder and a joiner, filling the node limits', function () {
    const founder = resolveNodeConfig(good);
    assert.equal(founder.limits.tickMs, 100);
    assert.deepEqual(founder.grpcListenAt, { host: '127.0.0.1', port: 7000 });
    const joiner = resolveNodeConfig({ ...good, bootstrap: undefined, seeds: ['n2.peers:7000'], tickMs: 50 });
    assert.equal(joiner.limits.tickMs, 50);
    // One stateful-set template for every pod: a pod the founders' list leaves out joins through its seeds.
    const scaledUp = resolveNodeConfig({ ...good, name: 'n9', seeds: ['n1.peers:7000'] });
    assert.deepEqual(scaledUp.bootstrap, [], 'a node left out of the founders founds nothing');
    assert.deepEqual(scaledUp.seeds, ['n1.peers:7000']);
    const founderWithSeeds = resolveNodeConfig({ ...good, seeds: ['n2.peers:7000'] });
    assert.deepEqual(founderWithSeeds.bootstrap, good.bootstrap, 'a founder keeps the founding roster beside seeds');
  });

  it('refuses each kind of mistake with a ConfigError that names it', function () {
    const cases: Array<[Partial<NodeConfig> & Record<string, unknown>, RegExp]> = [
      [{ name: '-bad' }, /name "-bad"/],
      [{ dataDir: '' }, /dataDir/],
      [{ grpcListen: 'localhost' }, /grpcListen "localhost" is not host:port/],
      [{ httpListen: '127.0.0.1:70000' }, /port above 65535/],
      [{ grpcListen: '0.0.0.0:7000' }, /grpcAdvertise is required/],
      [{ httpAdvertise: '127.0.0.1:8080' }, /httpAdvertise .* is not scheme:\/\/host:port/],
      [{ bootstrap: [] }, /give bootstrap .* or seeds/],
      [
        { bootstrap: [{ name: 'n2', grpcAddr: 'a:1', httpAddr: 'http://a:2' }] },
        /does not list this node \(n1\) and no seeds/,
      ],
      [{ bootstrap: [good.bootstrap![0]!, good.bootstrap![0]!] }, /lists n1 twice/],
      [{ seeds: ['nope'] }, /seeds\[0\]/],
      [{ tls: { mode: 'mtls', caFile: '', certFile: 'c', keyFile: 'k' } }, /tls.caFile/],
      [{ tls: { mode: 'plain' } as unknown as NodeConfig['tls'] }, /tls.mode/],
      [{ tickMs: 0 }, /tickMs must be a positive integer/],
      [{ logLevel: 'loud' as unknown as NodeConfig['logLevel'] }, /logLevel/],
      // Addresses peers are told (JoinCluster, rosters) are held to the form the peer gate checks.
      [{ httpAdvertise: 'http://n1.example' }, /httpAdvertise "http:\/\/n1.example": it is not host:port/],
      [{ grpcAdvertise: 'a..b:7000' }, /grpcAdvertise "a..b:7000": its host is not a DNS name/],
      [
        { bootstrap: [{ ...good.bootstrap![0]!, grpcAddr: '127.0.0.1:0' }] },
        /bootstrap\[0\].grpcAddr "127.0.0.1:0": its port is not 1-65535/,
      ],
      [{ clusterId: 'Not_A_Label' }, /clusterId "Not_A_Label" must be a DNS label/],
      // The flight recorder's settings (cli/node/recording.ts).
      [{ recording: 'off' as never }, /recording must be an object/],
      [{ recording: { enabled: 'no' as never } }, /recording.enabled must be true or false/],
      [{ recording: { payloads: 'clear' as never } }, /recording.payloads must be one of hashed, full/],
      [{ recording: { limits: { recordingBytesMax: 8_192 } } }, /at least twice recordingSegmentBytesMax/],
      // Which client sends and which server serves the unary peer calls (transports/grpc/lean-*.ts).
      [{ grpc: { leanUnaryClient: 'no' as never } }, /grpc.leanUnaryClient must be true or false/],
      [{ grpc: { leanUnaryServer: 0 as never } }, /grpc.leanUnaryServer must be true or false/],
    ];
    for (const [change, message] of cases) {
      assert.throws(
        () => resolveNodeConfig({ ...good, ...change } as NodeConfig),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
        JSON.stringify(change),
      );
    }
  });

  it('the Node constructor refuses a bad config and bad limits before touching anything', function () {
    assert.throws(() => new Node({ ...good, storeLimits: { writeTimeoutMs: -1 } }), ConfigError);
    assert.throws(() => new Node({ ...good, grpcLimits: { unaryDeadlineMs: 0 } }), ConfigError);
    // A proposal's outcome is read back by request id: the store must remember as many as the engine queues.
    assert.throws(
      () => new Node({ ...good, engineLimits: { proposalQueueCountMax: 10_001 } }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /proposalQueueCountMax 10001 is above the store's DEDUP_ENTRY_COUNT_MAX \(10000\)/.test(err.message),
    );
    assert.doesNotThrow(() => new Node({ ...good, engineLimits: { proposalQueueCountMax: 10_000 } }));
  });

  it('a Node whose certificate files are missing fails to start with a clear error and releases its ports', async function () {
    const node = new Node({
      ...good,
      dataDir: `/tmp/svc-node-missing-${process.pid}`,
      grpcListen: '127.0.0.1:0',
      httpListen: '127.0.0.1:0',
      logLevel: 'silent',
      tls: {
        mode: 'mtls',
        caFile: '/nonexistent/ca.crt',
        certFile: '/nonexistent/n1.crt',
        keyFile: '/nonexistent/n1.key',
      },
    });
    await assert.rejects(
      node.start(),
      (err: unknown) => err instanceof ConfigError && /cannot read tls.caFile \/nonexistent\/ca.crt/.test(err.message),
    );
    await node.stop();
  });
});
