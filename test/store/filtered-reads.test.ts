// A filtered member's reads (docs/protocol.md, "Filtered members"): it serves its communities only — keys
// under its prefixes, records of its tenants — linearizably (each read still takes the leader's read index and
// waits for the local apply), and refuses the rest with OutsideCommunitiesError (API JSON code
// OUTSIDE_COMMUNITIES); the store's community reader gives the overlay filter each command's key and tenant.
import assert from 'node:assert/strict';
import { encodeCommand, storeCommunityOf } from '../../store/command.js';
import { OutsideCommunitiesError } from '../../store/errors.js';
import type { StoreHost } from '../../store/host.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import type { StoreStateMachine } from '../../store/state-machine.js';
import type { MemberFilter } from '../../engine/types.js';
import { toApiError } from '../../api/errors.js';

function filteredHost(overlay: MemberFilter | 'refilling' | null): { host: StoreHost; readIndexCalls: () => number } {
  let calls = 0;
  const values = new Map([
    ['acme/doc', { value: { n: 1 }, version: 3 }],
    ['runs/r1', { value: { tenant: 'acme', n: 2 }, version: 4 }],
  ]);
  const stateMachine = {
    get: (key: string) => values.get(key) ?? null,
    list: (prefix: string) => ({
      entries: [...values].filter(([key]) => key.startsWith(prefix)).map(([key, entry]) => ({ key, ...entry })),
      nextAfter: null,
    }),
    watch: () => () => {},
  } as unknown as StoreStateMachine;
  const host: StoreHost = {
    stateMachine,
    commit: () => Promise.reject(new Error('no writes here')),
    readIndex: () => {
      calls++;
      return Promise.resolve(9);
    },
    waitApplied: () => Promise.resolve(),
    overlay: () => overlay,
  };
  return { host, readIndexCalls: () => calls };
}

describe('store: reads at a filtered member', () => {
  const filter = { prefixes: ['acme/'], tenants: ['acme'] };

  it('serves keys under its prefixes and records of its tenants, through the read index', async () => {
    const { host, readIndexCalls } = filteredHost(filter);
    const store = new ReplicatedStore(host);
    assert.deepEqual((await store.get('acme/doc'))?.value, { n: 1 });
    assert.equal(await store.get('acme/missing'), null, 'an absent key of its community is simply absent');
    assert.deepEqual((await store.get('runs/r1'))?.value, { tenant: 'acme', n: 2 }, 'a record of its tenant');
    assert.deepEqual(
      (await store.list('acme/')).entries.map((e) => e.key),
      ['acme/doc'],
    );
    assert.equal(readIndexCalls(), 4, 'every read took a read index (linearizable)');
  });

  it('refuses keys and prefixes outside its communities with OUTSIDE_COMMUNITIES', async () => {
    const store = new ReplicatedStore(filteredHost(filter).host);
    await assert.rejects(store.get('users/u1'), OutsideCommunitiesError);
    await assert.rejects(
      store.list('runs/'),
      OutsideCommunitiesError,
      'a tenant is no prefix: a list would be partial',
    );
    assert.throws(() => store.watch('users/', () => {}), OutsideCommunitiesError);
    const error = await store.get('users/u1').catch((e: unknown) => e);
    const api = toApiError(error);
    assert.equal(api.code, 'OUTSIDE_COMMUNITIES');
    assert.equal(api.status, 421);
  });

  it('refuses every read while it refills after a filter change, and an unfiltered node serves all', async () => {
    await assert.rejects(new ReplicatedStore(filteredHost('refilling').host).get('acme/doc'), OutsideCommunitiesError);
    assert.deepEqual(await new ReplicatedStore(filteredHost(null).host).get('users/x'), null);
  });

  it('the community reader reads the key and the record tenant; a delete names no tenant', () => {
    const put = encodeCommand({ op: 'put', key: 'runs/r1', value: { tenant: 'acme' }, requestId: 'r1' });
    assert.deepEqual(storeCommunityOf(put), { key: 'runs/r1', tenant: 'acme' });
    const plain = encodeCommand({ op: 'put', key: 'users/u', value: { name: 'x' }, requestId: 'r2' });
    assert.deepEqual(storeCommunityOf(plain), { key: 'users/u', tenant: '' });
    assert.deepEqual(storeCommunityOf(encodeCommand({ op: 'delete', key: 'runs/r1', requestId: 'r3' })), {
      key: 'runs/r1',
      tenant: null,
    });
    assert.equal(storeCommunityOf(new TextEncoder().encode('not json')), null);
  });
});
