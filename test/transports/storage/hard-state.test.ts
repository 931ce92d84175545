import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HardState } from '../../../engine/types.js';
import { HARD_STATE_FILE, HardStateError, HardStateStore } from '../../../transports/storage/hard-state.js';
import { makeTempDir, removeTempDir } from './helpers.js';

function hardState(term: number): HardState {
  return {
    term,
    votedFor: 2,
    selfId: 1,
    commitSeq: 40,
    halted: '',
    reseed: false,
    removed: false,
    rosterBase: {
      membershipVersion: 3,
      nextMemberId: 4,
      members: [{ id: 1, name: 'a', grpcAddr: 'a:1', httpAddr: 'a:2', role: 0 }],
    },
  };
}

describe('storage/hard-state', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('hs');
  });
  afterEach(async () => {
    await removeTempDir(dir);
  });

  it('reads null for a fresh node', async () => {
    assert.equal(await new HardStateStore(dir).load(), null);
  });

  it('round-trips through the file and leaves no temp file', async () => {
    await new HardStateStore(dir).save(hardState(7));
    assert.deepEqual(await new HardStateStore(dir).load(), hardState(7));
    assert.deepEqual(await readdir(dir), [HARD_STATE_FILE]);
  });

  it('ends at the newest of concurrent saves', async () => {
    const store = new HardStateStore(dir);
    await Promise.all([1, 2, 3, 4, 5].map((term) => store.save(hardState(term))));
    assert.equal((await store.load())?.term, 5);
  });

  it('reports a damaged file clearly instead of starting fresh', async () => {
    await writeFile(join(dir, HARD_STATE_FILE), '{"version":1,"hardState":{"term":');
    await assert.rejects(
      new HardStateStore(dir).load(),
      (err: unknown) => err instanceof HardStateError && /not JSON/.test(err.message),
    );
    await writeFile(
      join(dir, HARD_STATE_FILE),
      JSON.stringify({ version: 1, hardState: { ...hardState(1), term: -1 } }),
    );
    await assert.rejects(new HardStateStore(dir).load(), /term must be a non-negative integer/);
  });

  it('refuses to save a malformed state', async () => {
    await assert.rejects(new HardStateStore(dir).save({ ...hardState(1), votedFor: 1.5 }), HardStateError);
    assert.equal(await new HardStateStore(dir).load(), null);
  });
});
