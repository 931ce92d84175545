// store/snapshot-cut.ts: the state of a filtered snapshot (docs/protocol.md, "Filtered snapshots") holds the
// records of the member's communities — by key prefix, or by the record's tenant as its put wrote it — and
// nothing else, not even the request-id table; a cut holding another community's record is found.
import assert from 'node:assert/strict';
import { cutStoreState, strayRecord } from '../../store/snapshot-cut.js';
import { decodeStoreSnapshot, encodeCapture, type StoreState } from '../../store/state-machine.js';

const stored = {
  v: 1,
  appliedSeq: 40,
  entries: [
    ['orgs/acme/a', 3, { tenant: 'acme', n: 1 }],
    ['orgs/zeta/b', 5, { tenant: 'zeta', n: 2 }],
    ['projects/p1', 7, { tenant: 'zeta', n: 3 }],
    ['projects/p2', 9, { n: 4 }],
    ['secret/s', 11, { n: 5 }],
  ],
  dedup: [['req-zeta', 5, { outcome: 'applied', version: 5, existed: false }]],
};

function decode(text: string): StoreState {
  const decoded = decodeStoreSnapshot(new TextEncoder().encode(text));
  assert.ok(decoded.ok, decoded.ok ? '' : decoded.reason);
  return decoded.state;
}

describe('store: cutting a snapshot to a filtered member', () => {
  it("keeps the records under its prefixes and of its tenants, at the full state's seq and versions", async () => {
    const state = decode(JSON.stringify(stored));
    const filter = { prefixes: ['projects/'], tenants: ['acme'] };
    const cut = cutStoreState(state, filter);
    assert.equal(cut.appliedSeq, 40);
    assert.deepEqual(
      cut.entryRows(0, cut.entryCount).map(([key, version]) => [key, version]),
      [
        ['orgs/acme/a', 3],
        ['projects/p1', 7],
        ['projects/p2', 9],
      ],
    );
    assert.deepEqual(cut.dedup, [], 'the request-id table names other communities: left out');
    const bytes = await encodeCapture(cut, 2, () => Promise.resolve());
    const text = new TextDecoder().decode(bytes);
    for (const other of ['orgs/zeta', 'secret/', 'req-zeta']) assert.equal(text.includes(other), false, other);
    const back = decode(text);
    assert.equal(strayRecord(back, filter), null);
    assert.equal(strayRecord(state, filter), 'orgs/zeta/b', 'the full state holds records outside the filter');
  });
});
