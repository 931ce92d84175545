// The peer gate's rules one by one, without sockets: roles, cluster ids, sender claims against the
// roster, terms and seqnos with room to increment, JoinCluster's fields.
// Property tests print their seed on failure (fast-check).
import assert from 'node:assert/strict';
import { status as grpcStatus } from '@grpc/grpc-js';
import fc from 'fast-check';
import type { RpcRequest } from '../../engine/rpc.js';
import { VALUE_ROOM_MAX } from '../../engine/values.js';
import { hostPortProblem, httpBaseProblem, joinRequestProblem } from '../../transports/grpc/join-fields.js';
import { PeerGate } from '../../transports/grpc/peer-gate.js';
import { identityUri, parseIdentityUri, type Caller, type CertIdentity } from '../../transports/grpc/peer-identity.js';

const CLUSTER = 'c0ffee';
const ROSTER = new Map([
  ['n1', 1],
  ['n2', 2],
  ['n3', 3],
]);

function gate(clusterId = CLUSTER): PeerGate {
  return new PeerGate({
    clusterId,
    memberIdByName: (name) => ROSTER.get(name) ?? 0,
    memberNameById: (id) => [...ROSTER].find(([, i]) => i === id)?.[0],
  });
}

function tlsCaller(identity: CertIdentity | null, clusterId = CLUSTER): Caller {
  return identity === null
    ? { tls: true, identity: null, problem: 'the certificate names no role', clusterId }
    : { tls: true, identity, problem: null, clusterId };
}

const peer = (name: string, clusterId = CLUSTER): Caller => tlsCaller({ role: 'peer', clusterId, name });
const heartbeat = (fields: Partial<Extract<RpcRequest, { method: 'Heartbeat' }>['body']>): RpcRequest => ({
  method: 'Heartbeat',
  body: {
    shardId: 1,
    regionId: 1,
    entityCount: 0,
    signalThroughputEps: 0,
    diskBytes: 0,
    replicationLag: {},
    lastHeartbeatNs: '0',
    term: 5,
    leaderRegion: 1,
    streamBaseline: 0,
    prevLogTerm: 0,
    prevLogSeq: 0,
    buildVersion: '',
    leaderLastSeq: 0,
    ...fields,
  },
});
const joinRequest = (fields: Partial<Extract<RpcRequest, { method: 'JoinCluster' }>['body']>): RpcRequest => ({
  method: 'JoinCluster',
  body: {
    name: 'n4',
    grpcAddr: 'n4.peers.ns.svc.cluster.local:7000',
    httpAddr: 'http://10.0.0.4:8000',
    capabilities: 1,
    ...fields,
  },
});

describe('peer gate: roles and cluster ids', function () {
  it('takes a peer certificate of this cluster on WalShipping, and an admin one on Admin, and nothing else', function () {
    const g = gate();
    const admin = tlsCaller({ role: 'admin', clusterId: CLUSTER, name: 'ops' });
    assert.equal(g.callerRefusal(peer('n1'), 'peer', 'WalShipping'), null);
    assert.equal(g.callerRefusal(admin, 'admin', 'Admin'), null);
    assert.deepEqual(pick(g.callerRefusal(admin, 'peer', 'WalShipping')), {
      code: grpcStatus.PERMISSION_DENIED,
      reason: 'wrong-role',
    });
    assert.deepEqual(pick(g.callerRefusal(peer('n1'), 'admin', 'Admin')), {
      code: grpcStatus.PERMISSION_DENIED,
      reason: 'wrong-role',
    });
    assert.deepEqual(pick(g.callerRefusal(tlsCaller(null), 'peer', 'WalShipping')), {
      code: grpcStatus.PERMISSION_DENIED,
      reason: 'no-role',
    });
  });

  it('refuses a certificate or a metadata cluster id of another cluster, and a peer call without one', function () {
    const g = gate();
    assert.equal(pick(g.callerRefusal(peer('n1', 'other'), 'peer', 'WalShipping'))?.reason, 'cluster-mismatch');
    assert.equal(
      pick(g.callerRefusal(tlsCaller({ role: 'peer', clusterId: CLUSTER, name: 'n1' }, 'other'), 'peer', 'WalShipping'))
        ?.reason,
      'cluster-mismatch',
    );
    assert.equal(
      pick(g.callerRefusal(tlsCaller({ role: 'peer', clusterId: CLUSTER, name: 'n1' }, ''), 'peer', 'WalShipping'))
        ?.reason,
      'cluster-missing',
    );
    assert.equal(
      pick(g.callerRefusal(tlsCaller({ role: 'admin', clusterId: 'other', name: 'ops' }, ''), 'admin', 'Admin'))
        ?.reason,
      'cluster-mismatch',
    );
    // An admin certificate names its cluster: the metadata may be left out.
    assert.equal(
      g.callerRefusal(tlsCaller({ role: 'admin', clusterId: CLUSTER, name: 'ops' }, ''), 'admin', 'Admin'),
      null,
    );
    // Plaintext: no certificate; the metadata is still compared when this node has an id.
    const plain = (clusterId: string): Caller => ({ tls: false, identity: null, problem: null, clusterId });
    assert.equal(g.callerRefusal(plain(CLUSTER), 'peer', 'WalShipping'), null);
    assert.equal(pick(g.callerRefusal(plain('other'), 'peer', 'WalShipping'))?.reason, 'cluster-mismatch');
    assert.equal(pick(g.callerRefusal(plain(''), 'peer', 'WalShipping'))?.reason, 'cluster-missing');
    assert.equal(
      gate('').callerRefusal(plain(''), 'peer', 'WalShipping'),
      null,
      'a node with no cluster id compares nothing',
    );
    // A node serving mutual TLS takes no call without a verified certificate, whatever it claims.
    const strict = new PeerGate({
      clusterId: CLUSTER,
      requireCertificate: true,
      memberIdByName: () => 0,
      memberNameById: () => undefined,
    });
    assert.equal(pick(strict.callerRefusal(plain(CLUSTER), 'peer', 'WalShipping'))?.reason, 'no-role');
    assert.equal(pick(strict.callerRefusal(plain(CLUSTER), 'admin', 'Admin'))?.reason, 'no-role');
  });

  it('writes and reads identity URIs, and reads no other', function () {
    fc.assert(
      fc.property(
        fc.constantFrom<'peer' | 'admin'>('peer', 'admin'),
        fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}[a-z0-9]$/),
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/),
        (role, clusterId, name) =>
          assert.deepEqual(parseIdentityUri(identityUri({ role, clusterId, name })), { role, clusterId, name }),
      ),
    );
    for (const uri of [
      'spiffe://svc/c1/root/x',
      'spiffe://other/c1/peer/x',
      'spiffe://svc/C1/peer/x',
      'spiffe://svc/c1/peer/x/y',
      'spiffe://svc/c1/peer/',
      'https://svc/c1/peer/x',
    ]) {
      assert.equal(parseIdentityUri(uri), null, uri);
    }
    assert.throws(() => identityUri({ role: 'peer', clusterId: 'Bad', name: 'x' }));
  });
});

describe("peer gate: the sender a message names is the certificate's holder", function () {
  it("lets a member send as itself, and refuses a member claiming another member's id in any sender field", function () {
    const g = gate();
    assert.deepEqual(g.walShipping(heartbeat({ leaderRegion: 1, regionId: 1, shardId: 1 }), peer('n1')), {
      pass: true,
    });
    for (const fields of [
      { leaderRegion: 2 },
      { regionId: 2 },
      { shardId: 2 },
      { leaderRegion: 99, regionId: 99, shardId: 99 },
    ]) {
      const verdict = g.walShipping(heartbeat({ leaderRegion: 1, regionId: 1, shardId: 1, ...fields }), peer('n1'));
      assert.equal(verdict.pass, false, JSON.stringify(fields));
      assert.equal(!verdict.pass && verdict.refusal.reason, 'claim-mismatch');
    }
    const claims: RpcRequest[] = [
      {
        method: 'RequestVote',
        body: { term: 5, candidateRegion: 2, lastLogTerm: 1, lastLogSeq: 1, prevote: false, transfer: false },
      },
      { method: 'TimeoutNow', body: { term: 5, leaderRegion: 2 } },
      {
        method: 'ReportApplied',
        body: { reporterShard: 2, sourceShard: 1, appliedSeqno: 1, reporterTerm: 5, capabilities: 1 },
      },
      {
        method: 'ShipSegment',
        body: {
          id: { regionId: 2, shardId: 2, seqno: 1 },
          payload: new Uint8Array(),
          eventCount: 0,
          leaderLastSeq: 0,
          streamBaseline: 0,
          term: 5,
          leaderRegion: 2,
        },
      },
    ];
    for (const request of claims) {
      const verdict = g.walShipping(request, peer('n3'));
      assert.equal(!verdict.pass && verdict.refusal.details.includes('the certificate is n3'), true, request.method);
      assert.equal(g.walShipping(request, peer('n2')).pass, true, `${request.method} from n2 itself`);
    }
  });

  it('lets a certificate whose name is not in the roster claim only ids no member holds (the engine decides about non-members)', function () {
    const g = gate();
    assert.equal(
      g.walShipping(heartbeat({ leaderRegion: 99, regionId: 99, shardId: 99 }), peer('intruder')).pass,
      true,
    );
    const verdict = g.walShipping(heartbeat({ leaderRegion: 1, regionId: 1, shardId: 1 }), peer('intruder'));
    assert.equal(
      !verdict.pass && verdict.refusal.details,
      "Heartbeat leader_region 1 is member n1, but the certificate is intruder's",
    );
  });

  it("serves StreamSegments and FetchSnapshot to members only, and takes a JoinCluster only in the certificate's name", function () {
    const g = gate();
    const stream: RpcRequest = { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 1, term: 5 } };
    const snapshot: RpcRequest = { method: 'FetchSnapshot', body: { shardId: 1, fromSeqno: 1, term: 5 } };
    for (const request of [stream, snapshot]) {
      assert.equal(g.walShipping(request, peer('n2')).pass, true);
      const verdict = g.walShipping(request, peer('intruder'));
      assert.equal(!verdict.pass && verdict.refusal.reason, 'not-member', request.method);
    }
    assert.equal(g.walShipping(joinRequest({ name: 'n4' }), peer('n4')).pass, true);
    const impostor = g.walShipping(joinRequest({ name: 'n4' }), peer('n5'));
    assert.equal(!impostor.pass && impostor.refusal.code, grpcStatus.PERMISSION_DENIED);
  });

  it('checks no claims on a plaintext connection (there is no certificate to match)', function () {
    const plain: Caller = { tls: false, identity: null, problem: null, clusterId: CLUSTER };
    assert.equal(gate().walShipping(heartbeat({ leaderRegion: 2 }), plain).pass, true);
  });
});

describe('peer gate: terms and seqnos with room to increment', function () {
  it('refuses INVALID_ARGUMENT, naming the field, a term or seqno above MAX_SAFE_INTEGER - 1 in any message, and takes the bound itself', function () {
    assert.equal(VALUE_ROOM_MAX, 2 ** 53 - 2);
    const max = Number.MAX_SAFE_INTEGER;
    const cases: Array<[RpcRequest, string]> = [
      [heartbeat({ term: max }), 'term'],
      [heartbeat({ prevLogTerm: max }), 'prevLogTerm'],
      [heartbeat({ prevLogSeq: max }), 'prevLogSeq'],
      [heartbeat({ leaderLastSeq: max }), 'leaderLastSeq'],
      [heartbeat({ streamBaseline: max }), 'streamBaseline'],
      [
        {
          method: 'RequestVote',
          body: { term: 5, candidateRegion: 2, lastLogTerm: max, lastLogSeq: 1, prevote: true, transfer: false },
        },
        'lastLogTerm',
      ],
      [{ method: 'TimeoutNow', body: { term: max, leaderRegion: 2 } }, 'term'],
      [
        {
          method: 'ReportApplied',
          body: { reporterShard: 2, sourceShard: 1, appliedSeqno: max, reporterTerm: 5, capabilities: 1 },
        },
        'appliedSeqno',
      ],
      [{ method: 'StreamSegments', body: { shardId: 1, fromSeqno: max, term: 5 } }, 'fromSeqno'],
      [{ method: 'FetchSnapshot', body: { shardId: 1, fromSeqno: 1, term: max } }, 'term'],
    ];
    for (const [request, field] of cases) {
      const verdict = gate().walShipping(request, peer('n2'));
      assert.equal(!verdict.pass && verdict.refusal.code, grpcStatus.INVALID_ARGUMENT, `${request.method} ${field}`);
      assert.equal(!verdict.pass && verdict.refusal.reason, 'bad-value');
      assert.equal(
        !verdict.pass && verdict.refusal.details,
        `${request.method}: ${field} = ${max} is beyond ${VALUE_ROOM_MAX} (no room to increment)`,
      );
    }
    assert.equal(
      gate().walShipping(
        heartbeat({ leaderRegion: 2, regionId: 2, shardId: 2, term: VALUE_ROOM_MAX, prevLogSeq: VALUE_ROOM_MAX }),
        peer('n2'),
      ).pass,
      true,
    );
  });
});

describe('peer gate: JoinCluster names and addresses', function () {
  it('answers a malformed join with accepted=false and a refusal_reason naming the field', function () {
    const verdict = gate().walShipping(
      joinRequest({ name: 'intruder', grpcAddr: 'not a host:port' }),
      peer('intruder'),
    );
    assert.equal(verdict.pass, false);
    assert.equal(!verdict.pass && verdict.refusal.reason, 'bad-join');
    const response = !verdict.pass ? verdict.response : undefined;
    assert.equal(response?.method, 'JoinCluster');
    assert.equal(response?.method === 'JoinCluster' && response.body.accepted, false);
    assert.match(
      response?.method === 'JoinCluster' ? response.body.refusalReason : '',
      /^invalid: grpc_addr "not a host:port": /,
    );
  });

  it('takes host:port with a DNS name, an IPv4 or a bracketed IPv6 address, and scheme://host:port', function () {
    for (const good of [
      'n4:7000',
      'n4.peers.ns.svc.cluster.local:7000',
      '10.0.0.4:1',
      '[::1]:65535',
      '[fe80::1]:7000',
      'LOCALHOST:80',
    ])
      assert.equal(hostPortProblem(good), null, good);
    for (const bad of [
      'not a host:port',
      'n4',
      ':7000',
      'n4:0',
      'n4:65536',
      'n4:70000',
      'n4:-1',
      'n4:x',
      'a..b:1',
      '-a:1',
      '999.1.1.1:1',
      '1.2.3:1',
      'n4:7000/x',
      'user@n4:7000',
      `${'a'.repeat(64)}:1`,
      `${'a.'.repeat(150)}a:1`,
      'n 4:1',
      'n4:1\n',
    ]) {
      assert.notEqual(hostPortProblem(bad), null, JSON.stringify(bad));
    }
    for (const good of ['http://n4:8000', 'https://10.0.0.4:443', 'http://[::1]:8080'])
      assert.equal(httpBaseProblem(good), null, good);
    for (const bad of [
      'n4:8000',
      'ftp://n4:21',
      'http://n4',
      'http://n4:8000/',
      'http://n4:8000/status',
      'HTTP://n4:1',
      'http://:1',
    ]) {
      assert.notEqual(httpBaseProblem(bad), null, JSON.stringify(bad));
    }
    assert.match(
      joinRequestProblem({ name: '', grpcAddr: 'a:1', httpAddr: 'http://a:1', capabilities: 1 }) ?? '',
      /^name/,
    );
    assert.match(
      joinRequestProblem({ name: 'a/b', grpcAddr: 'a:1', httpAddr: 'http://a:1', capabilities: 1 }) ?? '',
      /^name/,
    );
    assert.match(
      joinRequestProblem({ name: 'a', grpcAddr: 'a:1', httpAddr: 'a:1', capabilities: 1 }) ?? '',
      /^http_addr/,
    );
    // Property: whatever the text, a problem is a string or null, never a throw.
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const problem = joinRequestProblem({ name: text, grpcAddr: text, httpAddr: text, capabilities: 0 });
        assert.ok(problem === null || typeof problem === 'string');
      }),
    );
  });
});

function pick(refusal: { code: number; reason: string } | null): { code: number; reason: string } | null {
  return refusal === null ? null : { code: refusal.code, reason: refusal.reason };
}
