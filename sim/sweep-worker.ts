// A sweep's worker thread (sim/sweep.ts): takes seeds from the sweep's shared counter and runs them, one at a
// time, posting each outcome back, until every seed is claimed. It holds no state between seeds: every run
// builds its own world.
import { parentPort, workerData } from 'node:worker_threads';
import { runSeed, takeSeed, type WorkerJob, type WorkerReply } from './sweep.js';

const port = parentPort;
if (!port) throw new Error('sim/sweep-worker.ts runs as a worker thread of a sweep (sim/sweep.ts)');
const job = workerData as WorkerJob;
const post = (reply: WorkerReply): void => port.postMessage(reply);
for (let position = takeSeed(job); position >= 0; position = takeSeed(job)) {
  try {
    post({ position, outcome: runSeed(job.seeds[position]!, job.overrides) });
  } catch (error) {
    post({ position, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    break;
  }
}
post({ done: true });
