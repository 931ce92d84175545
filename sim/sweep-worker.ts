// A sweep's worker thread (sim/sweep.ts): runs the seeds it is handed, one at a time, and posts
// each outcome back. It holds no state between seeds: every run builds its own world.
import { parentPort } from 'node:worker_threads';
import { runSeed, type WorkerReply, type WorkerRequest } from './sweep.js';

const port = parentPort;
if (!port) throw new Error('sim/sweep-worker.ts runs as a worker thread of a sweep (sim/sweep.ts)');
port.on('message', (request: WorkerRequest) => {
  let reply: WorkerReply;
  try {
    reply = { outcome: runSeed(request.seed, request.overrides) };
  } catch (error) {
    reply = { seed: request.seed, error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
  port.postMessage(reply);
});
