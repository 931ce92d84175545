// The DocumentStore contract the API's routes rely on (test/api/document-store-contract.ts), run against the
// replicated store of a FOLLOWER in a fresh three-node cluster (in process, mTLS) for each case: its writes
// are forwarded to the leader and its reads take a read index, the harder side of the store.
import assert from 'node:assert/strict';
import { describeDocumentStoreContract } from './document-store-contract.js';
import { InProcessCluster } from '../node/in-process-cluster.js';

describe('cluster-api: the replicated store keeps the API store contract', function () {
  this.timeout(60_000);
  describeDocumentStoreContract('ReplicatedStore (a follower of three nodes)', async () => {
    const cluster = new InProcessCluster();
    try {
      await cluster.start(['a', 'b', 'c'], ['a', 'b', 'c']);
      await cluster.waitLeader();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return { store: cluster.followers()[0]!.store, close: () => cluster.stop() };
  });
});

describe('cluster-api: read sessions of the replicated store', function () {
  this.timeout(60_000);
  const cluster = new InProcessCluster();
  before(async () => {
    await cluster.start(['a', 'b', 'c'], ['a', 'b', 'c']);
    await cluster.waitLeader();
  });
  after(async () => {
    await cluster.stop();
  });

  it("share one read index per session, yet see every write acknowledged before it began and the session's own", async () => {
    const [follower, other] = cluster.followers();
    const store = follower!.store;
    // Count the read-index calls the store makes (on a follower, each is a ReadIndex RPC to the leader).
    const host = (store as unknown as { host: { readIndex: (deadlineAt: number) => Promise<number> } }).host;
    const readIndex = host.readIndex.bind(host);
    let calls = 0;
    host.readIndex = (deadlineAt) => {
      calls++;
      return readIndex(deadlineAt);
    };
    try {
      await cluster.leader()!.store.put('session/a', { n: 1 });
      await other!.store.put('session/b', { n: 2 });
      const session = store.readSession!();
      calls = 0;
      assert.deepEqual((await session.get('session/a'))?.value, { n: 1 });
      assert.deepEqual((await session.get('session/b'))?.value, { n: 2 });
      assert.deepEqual(
        (await session.list('session/')).entries.map((entry) => entry.key),
        ['session/a', 'session/b'],
      );
      assert.equal(calls, 1, 'three reads, one read index');
      await session.put('session/c', { n: 3 });
      assert.deepEqual((await session.get('session/c'))?.value, { n: 3 }, 'its own write, at once');
      assert.equal(calls, 1);
      await store.get('session/a');
      assert.equal(calls, 2, 'reads outside the session take their own');
    } finally {
      host.readIndex = readIndex;
    }
  });
});
