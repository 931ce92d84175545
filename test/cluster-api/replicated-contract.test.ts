// The DocumentStore contract the API's routes rely on (test/api/document-store-contract.ts), run against the
// replicated store of a FOLLOWER in a fresh three-node cluster (in process, mTLS) for each case: its writes
// are forwarded to the leader and its reads take a read index, the harder side of the store.
import { describeDocumentStoreContract } from '../api/document-store-contract.js';
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
