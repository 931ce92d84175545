// A stop that comes in the middle of a node's start ends the start and closes everything the start opened: the
// stop waits for the start's current stage (module loads, storage, listeners, the engine), then closes, and the
// start ends with StoppedDuringStartError. Before, a stop during a stage closed only what that stage had not yet
// assigned, and the stage then opened its listener after the stop (left open: the port still answered).
// The stop comes after a growing number of event-loop turns, so that it lands in each stage in turn.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Node } from '../../cli/node/node.js';
import { StoppedDuringStartError } from '../../cli/node/node.js';
import { nodeConfig, planNodes, removeDir, tempDir } from './harness.js';

/** TURNS are the event-loop turns (setImmediate) after start() at which each case asks for the stop. */
const TURNS = [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144];

/** refuses answers whether nothing listens on 127.0.0.1:port any more. */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('node: a stop during the start', function () {
  this.timeout(60_000);
  let dir: string;

  before(async () => {
    dir = await tempDir('stop-during-start');
  });

  after(async () => {
    if (dir) await removeDir(dir);
  });

  for (const count of TURNS) {
    it(`stopped ${count} event-loop turns into its start: the start ends, every port is closed`, async () => {
      const [plan] = await planNodes(['n1']);
      const node = new Node(
        nodeConfig(plan!, `${dir}/n1-${count}`, { mode: 'insecure' }, { bootstrap: [plan!.member] }),
      );
      const started = node.start().then(
        () => 'started',
        (err: unknown) => err,
      );
      await turns(count);
      await node.stop();
      const outcome = await started;
      assert.ok(
        outcome === 'started' || outcome instanceof StoppedDuringStartError,
        `the start ended with ${String(outcome)}`,
      );
      for (const port of [plan!.grpcPort, plan!.httpPort, plan!.metricsPort])
        assert.ok(await refuses(port), `port ${port} still answers after the stop (start: ${String(outcome)})`);
    });
  }
});
