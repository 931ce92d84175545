// Run records past their retention are deleted (api/runs/run-sweep.ts): only finished runs older than the
// retention, never queued or running ones, never a record that changed since it was read; across pages. The
// sweeper runs on one process at a time (a Redis lock), against a real redis-server.
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { storeKeys } from '../../api/records.js';
import type { RunRecord, RunStatus } from '../../api/runs/run-records.js';
import { startRunSweeper, sweepRunRecords } from '../../api/runs/run-sweep.js';
import type { DocumentStore, JsonObject, ListOptions } from '../../store/document-store.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import { startTestRedis, waitFor, type TestRedis } from './harness.js';

const dayMs = 24 * 60 * 60 * 1000;
const nowMs = Date.parse('2026-11-22T12:00:00.000Z');

function runRecord(id: string, status: RunStatus, finishedAt: string | null): RunRecord {
  return {
    id,
    project_id: 'prj_000000000aaaaaaaaaaaaaaaa',
    user_id: 'usr_000000000aaaaaaaaaaaaaaaa',
    status,
    created_at: '2026-11-01T00:00:00.000Z',
    started_at: null,
    finished_at: finishedAt,
    exit_code: null,
    duration_ms: null,
    cancel_requested: false,
    prompt: null,
  };
}

const ago = (ms: number): string => new Date(nowMs - ms).toISOString();

async function seed(store: DocumentStore): Promise<void> {
  const runs: RunRecord[] = [
    runRecord('run_old_succeeded', 'succeeded', ago(2 * dayMs)),
    runRecord('run_old_failed', 'failed', ago(dayMs + 1)),
    runRecord('run_old_cancelled', 'cancelled', ago(3 * dayMs)),
    runRecord('run_old_timed_out', 'timed_out', ago(5 * dayMs)),
    runRecord('run_recent_succeeded', 'succeeded', ago(dayMs - 60_000)),
    runRecord('run_old_running', 'running', ago(4 * dayMs)),
    runRecord('run_queued', 'queued', null),
    runRecord('run_final_without_end', 'failed', null),
    runRecord('run_bad_date', 'failed', 'not a date'),
  ];
  for (const run of runs) await store.put(storeKeys.run(run.id), run);
  await store.put('projects/prj_000000000aaaaaaaaaaaaaaaa', { id: 'prj_000000000aaaaaaaaaaaaaaaa' });
}

const remaining = async (store: DocumentStore): Promise<string[]> =>
  (await store.list(storeKeys.runs)).entries.map((entry) => entry.key.slice(storeKeys.runs.length));

describe('api: run records past their retention are swept', function () {
  this.timeout(30_000);

  it('deletes the finished runs older than the retention, page by page, and nothing else', async () => {
    const store = new MemoryDocumentStore();
    await seed(store);
    const outcome = await sweepRunRecords(store, nowMs, dayMs, 2);
    assert.deepEqual(outcome, { examined: 9, deleted: 4 });
    assert.deepEqual(await remaining(store), [
      'run_bad_date',
      'run_final_without_end',
      'run_old_running',
      'run_queued',
      'run_recent_succeeded',
    ]);
    assert.ok(await store.get('projects/prj_000000000aaaaaaaaaaaaaaaa'), 'other records are not touched');
    assert.deepEqual(await sweepRunRecords(store, nowMs, dayMs, 2), { examined: 5, deleted: 0 });
  });

  it('leaves a record that changed after it was read (compare-and-set) for the next sweep', async () => {
    const store = new MemoryDocumentStore();
    await seed(store);
    // A store whose listing is followed by a write to one expired record, as a late cancel would be.
    const racing: DocumentStore = Object.create(store) as DocumentStore;
    racing.list = async <T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions) => {
      const page = await store.list<T>(prefix, options);
      const victim = page.entries.find((entry) => entry.key === storeKeys.run('run_old_failed'));
      if (victim) await store.put(victim.key, { ...victim.value, cancel_requested: true });
      return page;
    };
    const outcome = await sweepRunRecords(racing, nowMs, dayMs, 100);
    assert.equal(outcome.deleted, 3);
    assert.ok((await remaining(store)).includes('run_old_failed'), 'the changed record stays');
    assert.equal((await sweepRunRecords(store, nowMs, dayMs)).deleted, 1, 'the next sweep takes it');
  });

  describe('the sweeper, with a real redis-server', () => {
    let redis: TestRedis;
    const clients: Redis[] = [];
    before(async () => {
      redis = await startTestRedis();
    });
    after(async () => {
      for (const client of clients) client.disconnect();
      await redis?.stop();
    });

    it('sweeps on one of several processes per interval, and stops', async () => {
      const store = new MemoryDocumentStore();
      const sweepsAtMs: number[] = [];
      // Two "processes" sharing one store and one Redis; every sweep's first list is timed.
      const counting = (): DocumentStore => {
        const view: DocumentStore = Object.create(store) as DocumentStore;
        view.list = <T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions) => {
          if (options?.after === undefined) sweepsAtMs.push(Date.now());
          return store.list<T>(prefix, options);
        };
        return view;
      };
      await store.put(
        storeKeys.run('run_long_ago'),
        runRecord('run_long_ago', 'succeeded', new Date(Date.now() - 2 * dayMs).toISOString()),
      );
      await store.put(storeKeys.run('run_just_now'), runRecord('run_just_now', 'succeeded', new Date().toISOString()));
      const errors: unknown[] = [];
      const intervalMs = 400;
      const sweepers = [0, 1].map(() => {
        const client = new Redis(redis.url);
        clients.push(client);
        return startRunSweeper(client, counting(), (error) => errors.push(error), intervalMs);
      });
      await waitFor(
        () => remaining(store),
        (keys) => keys.length === 1,
        10_000,
      );
      await waitFor(
        async () => sweepsAtMs.length,
        (count) => count >= 3,
        10_000,
      );
      for (const sweeper of sweepers) sweeper.stop();
      // Both processes' timers fire every interval; without the lock both would sweep, a few ms apart. With it,
      // a lock is taken only once the last one expired (one interval), less the event loops' delays.
      const gapsMs = sweepsAtMs.slice(1).map((atMs, i) => atMs - sweepsAtMs[i]!);
      assert.ok(
        gapsMs.every((gapMs) => gapMs >= intervalMs / 4),
        `one sweep per interval: gaps ${gapsMs.join(', ')} ms`,
      );
      const sweepCount = sweepsAtMs.length;
      await new Promise((resolve) => setTimeout(resolve, 3 * intervalMs));
      assert.equal(sweepsAtMs.length, sweepCount, 'stopped sweepers sweep no more');
      assert.deepEqual(await remaining(store), ['run_just_now']);
      assert.deepEqual(errors, []);
    });
  });
});
