// The Store client pool's own defaults (transports/store-rpc/limits.ts: transports does not import store/)
// are the store's defaults (store/limits.ts), so a pool made without options behaves as a node's does.
import assert from 'node:assert/strict';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { DEFAULT_PROPOSE_BATCH_COUNT_MAX, DEFAULT_STREAM_IDLE_MS } from '../../transports/store-rpc/limits.js';

describe('transports/store-rpc limits', () => {
  it('default to the store limits of the same names', () => {
    assert.equal(DEFAULT_PROPOSE_BATCH_COUNT_MAX, DEFAULT_STORE_LIMITS.proposeBatchCountMax);
    assert.equal(DEFAULT_STREAM_IDLE_MS, DEFAULT_STORE_LIMITS.streamIdleMs);
  });
});
