// The proto must say what the spec's tables say, to the field number: package,
// service, the eight methods with their streaming flags and message types, and
// every message's fields (name, number, type, repeated, map, oneof).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WalShippingService } from '../../proto/gen/svc/replication/v1/replication.js';
import {
  compareContracts,
  contractFromDescriptors,
  parseSpec,
  type FileDescriptorSetJson,
  type WireContract,
} from './wire-contract.js';

const repoRoot = path.resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const specPath = path.join(repoRoot, 'docs/spec/replication-grpc.md');
const protoFile = 'svc/replication/v1/replication.proto';

function compiledDescriptors(): FileDescriptorSetJson {
  const buf = path.join(repoRoot, 'node_modules/.bin/buf');
  const json = execFileSync(buf, ['build', 'proto', '-o', '-#format=json'], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(json) as FileDescriptorSetJson;
}

describe('proto conformance with the spec tables', function () {
  this.timeout(60_000);
  let spec: WireContract;
  let proto: WireContract;

  before(function () {
    assert.ok(existsSync(specPath), `spec not found at ${specPath} (the spec lives in docs/spec/)`);
    spec = parseSpec(readFileSync(specPath, 'utf8'));
    proto = contractFromDescriptors(compiledDescriptors(), protoFile);
  });

  it('reads the whole contract out of the spec', function () {
    assert.equal(spec.packageName, 'svc.replication.v1');
    assert.equal(spec.serviceName, 'WalShipping');
    assert.deepEqual(
      spec.methods.map((m) => m.name),
      [
        'ShipSegment',
        'StreamSegments',
        'FetchSnapshot',
        'Heartbeat',
        'ReportApplied',
        'RequestVote',
        'TimeoutNow',
        'JoinCluster',
      ],
    );
    assert.equal(Object.keys(spec.messages).length, 20, `messages read: ${Object.keys(spec.messages).join(', ')}`);
    assert.equal(spec.messages.AppliedReportAck?.length, 1, 'the prose-only AppliedReportAck is read');
    assert.equal(spec.messages.HeartbeatRequest?.length, 14);
    assert.equal(spec.messages.JoinResponse?.length, 9);
  });

  it('the compiled proto matches the spec exactly', function () {
    assert.deepEqual(compareContracts(spec, proto), []);
  });

  it('the generated grpc-js service has the spec paths and streaming flags', function () {
    const generated = Object.values(WalShippingService).map((m) => ({
      path: m.path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
    }));
    const expected = spec.methods.map((m) => ({
      path: `/${spec.packageName}.${spec.serviceName}/${m.name}`,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
    }));
    assert.deepEqual(generated, expected);
  });

  it('a changed spec table is caught too', function () {
    const markdown = readFileSync(specPath, 'utf8');
    const edited = markdown
      .replace('| seqno | 3 | uint64 |', '| seqno | 4 | uint64 |')
      .replace(
        '| SnapshotHeader | files | 5 | repeated SnapshotFileEntry |',
        '| SnapshotHeader | files | 5 | SnapshotFileEntry |',
      );
    assert.notEqual(edited, markdown);
    const differences = compareContracts(parseSpec(edited), proto);
    assert.equal(differences.length, 2, differences.join('\n'));
    assert.match(differences[0]!, /SnapshotHeader\.files/);
    assert.match(differences[1]!, /WalSegmentId\.seqno/);
  });

  describe('the comparison catches every kind of drift', function () {
    const mutations: [string, (c: WireContract) => void, RegExp][] = [
      [
        'a field number',
        (c) => {
          c.messages.ShipSegmentRequest!.find((f) => f.name === 'term')!.number = 16;
        },
        /ShipSegmentRequest\.term/,
      ],
      [
        'a field type',
        (c) => {
          c.messages.VoteRequest!.find((f) => f.name === 'term')!.type = 'uint32';
        },
        /VoteRequest\.term/,
      ],
      [
        'a field name',
        (c) => {
          c.messages.MemberInfo!.find((f) => f.name === 'grpc_addr')!.name = 'grpc_address';
        },
        /MemberInfo\.grpc_addr/,
      ],
      [
        'a missing field',
        (c) => {
          c.messages.HeartbeatRequest!.pop();
        },
        /HeartbeatRequest\.leader_last_seq: in the spec/,
      ],
      [
        'an extra field',
        (c) => {
          c.messages.HeartbeatResponse!.push({ name: 'extra', number: 6, type: 'bool', repeated: false, oneof: '' });
        },
        /HeartbeatResponse\.extra: in the proto/,
      ],
      [
        'repeated dropped',
        (c) => {
          c.messages.JoinResponse!.find((f) => f.name === 'members')!.repeated = false;
        },
        /JoinResponse\.members/,
      ],
      [
        'the map type',
        (c) => {
          c.messages.HeartbeatRequest!.find((f) => f.name === 'replication_lag')!.type = 'map<uint32, uint32>';
        },
        /replication_lag/,
      ],
      [
        'the oneof',
        (c) => {
          c.messages.SnapshotChunk!.find((f) => f.name === 'file')!.oneof = '';
        },
        /SnapshotChunk\.file/,
      ],
      [
        'a streaming flag',
        (c) => {
          c.methods.find((m) => m.name === 'FetchSnapshot')!.responseStream = false;
        },
        /method FetchSnapshot/,
      ],
      [
        'a method type',
        (c) => {
          c.methods.find((m) => m.name === 'Heartbeat')!.responseType = 'VoteResponse';
        },
        /method Heartbeat/,
      ],
      [
        'a missing message',
        (c) => {
          delete c.messages.TimeoutNowResponse;
        },
        /message TimeoutNowResponse: in the spec/,
      ],
      [
        'the package',
        (c) => {
          c.packageName = 'svc.replication.v2';
        },
        /package/,
      ],
    ];
    for (const [what, mutate, expected] of mutations) {
      it(`reports ${what}`, function () {
        const drifted = structuredClone(proto);
        mutate(drifted);
        const differences = compareContracts(spec, drifted);
        assert.ok(differences.length > 0, 'the drift went unnoticed');
        assert.ok(
          differences.every((d) => expected.test(d)),
          differences.join('\n'),
        );
      });
    }
  });
});
