// The per-process key cache (api/auth/key-cache.ts) on a real three-node cluster (in process, mTLS): an API
// over a follower's replicated store caches a key once it authenticated it, yet a revocation acknowledged
// through another node is refused there at once, and a follower that cannot take a read barrier (cut off from
// the leader) answers 503 STORE_UNAVAILABLE rather than authenticating from its cache. Likewise the kept JSON of
// GET /projects (api/page-cache.ts): an API over the follower with response validation off (so that it keeps
// pages) answers the bytes the leader's API makes and validates afresh, and lists a project created through the
// leader at once though it had the listing kept.
import assert from 'node:assert/strict';
import { StoreUnavailableError } from '../../store/errors.js';
import type { ReplicatedStore } from '../../store/replicated-store.js';
import { InProcessCluster } from '../node/in-process-cluster.js';
import { startTestApi, type TestApi } from '../api/harness.js';

interface HostWithReadIndex {
  readIndex: (deadlineAt: number) => Promise<number>;
}

const hostOf = (store: ReplicatedStore): HostWithReadIndex => (store as unknown as { host: HostWithReadIndex }).host;

describe('cluster-api: the key cache behind the read barrier', function () {
  this.timeout(60_000);
  const cluster = new InProcessCluster();
  let onFollower: TestApi;
  let onLeader: TestApi;
  let followerStore: ReplicatedStore;

  before(async () => {
    await cluster.start(['a', 'b', 'c'], ['a', 'b', 'c']);
    const leader = await cluster.waitLeader();
    followerStore = cluster.followers()[0]!.store as ReplicatedStore;
    onFollower = await startTestApi({ store: followerStore });
    onLeader = await startTestApi({ store: leader.store });
  });
  after(async () => {
    await onFollower?.close();
    await onLeader?.close();
    await cluster.stop();
  });

  async function newKey(): Promise<{ key: string; id: string }> {
    const created = await onLeader.call('POST', '/keys', { body: { name: 'cached', role: 'admin' } });
    assert.equal(created.status, 201, created.text);
    const json = created.json as { key: string; record: { id: string } };
    return { key: json.key, id: json.record.id };
  }

  it('refuses a key revoked through the leader at once on the follower that had it cached', async () => {
    const { key, id } = await newKey();
    // Several answers on the follower: the first fills its cache, the rest are served from it.
    for (let round = 0; round < 3; round++)
      assert.equal((await onFollower.call('GET', '/projects', { key })).status, 200);
    const revoked = await onLeader.call('POST', `/keys/${id}/revoke`, {});
    assert.equal(revoked.status, 200, revoked.text);
    // No waiting: the revocation was acknowledged, so the follower's next read barrier covers it.
    const refused = await onFollower.call('GET', '/projects', { key });
    assert.equal(refused.status, 401);
    assert.equal((refused.json as { code: string }).code, 'KEY_REVOKED');
  });

  it('a follower cut off from the leader never authenticates from its cache (503), and refuses the revoked key once back', async () => {
    const { key, id } = await newKey();
    assert.equal((await onFollower.call('GET', '/projects', { key })).status, 200, 'cached on the follower');
    const host = hostOf(followerStore);
    const readIndex = host.readIndex;
    // The follower can no longer ask the leader for a read index, as when it is partitioned away.
    host.readIndex = () => Promise.reject(new StoreUnavailableError('read index timed out: cut off (test)'));
    try {
      assert.equal((await onLeader.call('POST', `/keys/${id}/revoke`, {})).status, 200);
      const answer = await onFollower.call('GET', '/projects', { key });
      assert.equal(answer.status, 503, `a cut-off follower answered ${answer.status}: ${answer.text}`);
      assert.equal((answer.json as { code: string }).code, 'STORE_UNAVAILABLE');
    } finally {
      host.readIndex = readIndex;
    }
    const refused = await onFollower.call('GET', '/projects', { key });
    assert.equal((refused.json as { code: string }).code, 'KEY_REVOKED');
  });

  it('a key created through the leader works on the follower at once, and a rotated key stops working there', async () => {
    const { key, id } = await newKey();
    assert.equal((await onFollower.call('GET', '/projects', { key })).status, 200);
    const rotated = await onLeader.call('POST', `/keys/${id}/rotate`, {});
    assert.ok(rotated.status === 200 || rotated.status === 201, rotated.text);
    const fresh = (rotated.json as { key: string }).key;
    assert.notEqual(fresh, key);
    const old = await onFollower.call('GET', '/projects', { key });
    assert.equal(old.status, 401, `the rotated-away key answered ${old.status}`);
    assert.equal((await onFollower.call('GET', '/projects', { key: fresh })).status, 200);
  });
  it('answers a kept page with the bytes of a fresh, validated page, and lists a new project at once', async () => {
    const keeping = await startTestApi({ store: followerStore, config: { validateResponses: false } });
    try {
      const createProject = async (name: string): Promise<void> => {
        const created = await onLeader.call('POST', '/projects', {
          body: { name, workspace: '/tmp', command: ['./agent.sh'] },
        });
        assert.equal(created.status, 201, created.text);
      };
      for (const name of ['one', 'two', 'three']) await createProject(name);
      for (const query of ['', '?limit=2']) {
        const fresh = await onLeader.call('GET', `/projects${query}`);
        assert.equal(fresh.status, 200, fresh.text);
        // The first answer on the follower lists and keeps the page, the next ones are the kept text.
        for (let round = 0; round < 3; round++) {
          const answer = await keeping.call('GET', `/projects${query}`);
          assert.equal(answer.status, 200, answer.text);
          assert.equal(answer.text, fresh.text);
          assert.equal(answer.headers.get('content-type'), fresh.headers.get('content-type'));
          assert.equal(answer.headers.get('content-length'), fresh.headers.get('content-length'));
        }
      }
      // Acknowledged through the leader: the follower's next request takes a read barrier that covers it.
      await createProject('four');
      const listed = await keeping.call('GET', '/projects');
      assert.deepEqual(
        (listed.json as { items: Array<{ name: string }> }).items.map((project) => project.name).sort(),
        ['four', 'one', 'three', 'two'],
      );
      assert.equal(listed.text, (await onLeader.call('GET', '/projects')).text);
    } finally {
      await keeping.close();
    }
  });
});
