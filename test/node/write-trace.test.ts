// The write timeline's stamps (transports/node/write-trace.ts): off, nothing is published; on, one write
// forwarded from a follower leaves every phase bench/write-timeline.ts reads, about that write's seqno, on a
// real three-node mutual-TLS cluster in this process. Without the stamps in the driver, WAL, peer pool, node
// and Store handler, the phase list below comes back short.
import assert from 'node:assert/strict';
import { channel } from 'node:diagnostics_channel';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  WRITE_TRACE_CHANNEL,
  recordWriteTrace,
  stamp,
  tracing,
  type WritePhase,
  type WriteStamp,
} from '../../transports/node/write-trace.js';
import { InProcessCluster } from './in-process-cluster.js';
import { waitFor } from './harness.js';

const EVERY_PHASE: WritePhase[] = [
  'propose.received',
  'append',
  'wal.round',
  'wal.synced',
  'ship.sent',
  'ship.received',
  'ship.acked',
  'persisted.stepped',
  'report.sent',
  'report.received',
  'apply',
  'propose.answered',
];

/** SEQ_FREE: phases whose seqno is not the write's (the handler has none yet; a ship's answer names the frontier at acceptance). */
const SEQ_FREE: ReadonlySet<WritePhase> = new Set(['propose.received', 'ship.acked']);

describe('node: the write timeline stamps', function () {
  this.timeout(60_000);

  it('publishes nothing while nobody subscribes, and every stamp once someone does', function () {
    const seen: WriteStamp[] = [];
    assert.equal(tracing(), false);
    stamp('append', 1);
    const listener = (message: unknown): void => void seen.push(message as WriteStamp);
    channel(WRITE_TRACE_CHANNEL).subscribe(listener);
    try {
      assert.equal(tracing(), true);
      stamp('ship.sent', 7, 'peer:1');
    } finally {
      channel(WRITE_TRACE_CHANNEL).unsubscribe(listener);
    }
    stamp('append', 2);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.phase, 'ship.sent');
    assert.equal(seen[0]!.seq, 7);
    assert.equal(seen[0]!.peer, 'peer:1');
    assert.ok(Number.isSafeInteger(seen[0]!.atUs) && seen[0]!.atUs > 0);
  });

  it('stamps every phase of a forwarded write, about its seqno, into the recorder file', async function () {
    const cluster = new InProcessCluster();
    const dir = await mkdtemp(join(tmpdir(), 'svc-write-trace-'));
    const file = join(dir, 'all.jsonl');
    let stop: (() => void) | null = null;
    try {
      await cluster.start(['n1', 'n2', 'n3'], ['n1', 'n2', 'n3']);
      const leader = await cluster.waitLeader();
      const follower = cluster.followers()[0]!;
      await follower.store.put('warm', { v: 0 });
      stop = recordWriteTrace(file, { name: 'all', grpcAddr: () => leader.grpcAddress });
      await follower.store.put('traced', { v: 1 });
      const seq = leader.stateMachine.appliedSeq;
      // The second follower's report and the answers may trail the put's answer.
      await waitFor(
        () => cluster.followers().every((f) => f.stateMachine.appliedSeq >= seq),
        'every follower to apply the traced write',
      );
      stop();
      stop = null;
      const lines = (await readFile(file, 'utf8')).trim().split('\n');
      assert.deepEqual(JSON.parse(lines[0]!), { node: 'all', grpcAddr: leader.grpcAddress });
      const stamps = lines.slice(1).map((l) => JSON.parse(l) as WriteStamp);
      const about = (phase: WritePhase): WriteStamp[] =>
        stamps.filter((s) => s.phase === phase && (SEQ_FREE.has(phase) || s.seq >= seq));
      // A segment pushed onto a follower's live stream (docs/protocol.md, "Live streams") has no answer: ship.acked
      // shows only for a ShipSegment call, which a live follower is not sent.
      for (const phase of EVERY_PHASE.filter((p) => p !== 'ship.acked'))
        assert.ok(about(phase).length > 0, `no ${phase} stamp about seq ${seq}`);
      assert.equal(about('append').length >= 3, true, 'the leader and both followers append the write');
      assert.ok(about('ship.sent').every((s) => typeof s.peer === 'string' && s.peer !== ''));
      const answered = about('propose.answered');
      assert.equal(answered[0]!.seq, seq);
    } finally {
      stop?.();
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
