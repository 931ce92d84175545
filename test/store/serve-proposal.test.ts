// StoreRouter.serveProposal, the leader's side of a forwarded write: it proposes the command under the request
// id sent beside it only when the command's bytes name that id; a sender that names another id (or none, as an
// older build does) has the command decoded for its own, and a malformed command without a trusted id is refused.
import assert from 'node:assert/strict';
import { encodeCommand } from '../../store/command.js';
import { StoreRefusal } from '../../store/errors.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { StoreStateMachine } from '../../store/state-machine.js';
import { StoreRouter } from '../../store/store-router.js';
import type { EngineReads } from '../../store/engine-reads.js';
import type { LeaderLink, StoreEngine } from '../../store/host.js';
import type { Proposals } from '../../store/proposals.js';
import type { Waiters } from '../../store/waiters.js';

function leaderRouter(proposed: string[]): StoreRouter {
  const engine = {
    status: () => ({
      id: 1,
      role: 'leader',
      term: 1,
      leaderId: 1,
      roster: { members: [] },
      commitSeq: 0,
      removed: false,
    }),
    failure: null,
    overloaded: () => false,
    submit: () => undefined,
  } as unknown as StoreEngine;
  const proposals = {
    propose: (_bytes: Uint8Array, requestId: string) => {
      proposed.push(requestId);
      return Promise.resolve({ seq: proposed.length, result: { outcome: 'applied', version: 1, existed: false } });
    },
  } as unknown as Proposals;
  return new StoreRouter(
    engine,
    new StoreStateMachine(),
    proposals,
    {} as EngineReads,
    {} as LeaderLink,
    {} as Waiters,
    DEFAULT_STORE_LIMITS,
  );
}

describe('store: serving a forwarded proposal', function () {
  it('proposes under the id sent beside the command, or the command’s own when they differ or none was sent', async function () {
    const proposed: string[] = [];
    const router = leaderRouter(proposed);
    const command = encodeCommand({ op: 'put', key: 'k', value: { n: 1 }, requestId: 'own-id' });
    await router.serveProposal(command, Date.now() + 1_000, 'own-id');
    await router.serveProposal(command, Date.now() + 1_000, 'another-id');
    await router.serveProposal(command, Date.now() + 1_000);
    assert.deepEqual(proposed, ['own-id', 'own-id', 'own-id']);
  });

  it('refuses a malformed command sent without a trusted id as invalid', async function () {
    const router = leaderRouter([]);
    await assert.rejects(
      router.serveProposal(new TextEncoder().encode('{"v":1,"op":"drop-table"}'), Date.now() + 1_000, 'x'),
      (err: unknown) => err instanceof StoreRefusal && err.kind === 'invalid',
    );
  });
});
