// A cluster node with the developer API in a child process (served by test/node/child-harness.ts), driven by
// api-cluster.ts so a test can kill -9 it. argv[2] is the NodeConfig as JSON; argv[3], when present, the
// ApiChildOptions as JSON. Beyond the common ops: `bootstrap-admin`, `bare` (a bare Express handler in this
// same process, for bench/api-cluster.ts to compare against), `album-activity`, `read-index-stats` and `cpu-usage`.
//
// With options.albumWorker the node's API runs no album worker of its own; this process runs one instead
// (startAlbumWorker, the same function, over the node's store and the shared Redis) whose generator is the
// built-in one held back by shotDelayMs per shot, so a test can kill the node while its shots are generating.
import type { AddressInfo } from 'node:net';
import { leaseStats } from '../../api/rate-limit/leased-limiter.js';
import express from 'express';
import { Node } from '../../cli/node/node.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';
import { startAlbumWorker, type AlbumWorker } from '../../api/albums/album-worker.js';
import { ProceduralImageGenerator } from '../../api/images/procedural-generator.js';
import type { AnchorRequest, ImageGenerator, ShotRequest } from '../../api/images/image-generator.js';
import { serveNodeChild } from '../node/child-harness.js';
import type { AlbumActivity, ApiChildOptions } from './api-cluster.js';

/** HeldBackGenerator is the built-in generator with each shot held back, counting the shots under way. */
class HeldBackGenerator implements ImageGenerator {
  readonly name = 'held-back';
  private readonly counts = { shotsInFlight: 0, shotsGenerated: 0, anchorsGenerated: 0 };
  /** shotStartsMs: when each shot under way began (Date.now()), so a test can kill one with time left to run. */
  private readonly shotStartsMs = new Map<number, number>();
  private nextShotId = 0;
  private readonly inner = new ProceduralImageGenerator();

  get activity(): AlbumActivity {
    const youngestStartMs = Math.max(-Infinity, ...this.shotStartsMs.values());
    return {
      ...this.counts,
      youngestShotAgeMs: this.shotStartsMs.size === 0 ? null : Date.now() - youngestStartMs,
    };
  }

  constructor(private readonly shotDelayMs: number) {}

  async generateAnchor(request: AnchorRequest): Promise<Buffer> {
    const png = await this.inner.generateAnchor(request);
    this.counts.anchorsGenerated++;
    return png;
  }

  async generateShot(request: ShotRequest): Promise<Buffer> {
    this.counts.shotsInFlight++;
    const shotId = this.nextShotId++;
    this.shotStartsMs.set(shotId, Date.now());
    try {
      await new Promise((resolve) => setTimeout(resolve, this.shotDelayMs));
      const png = await this.inner.generateShot(request);
      this.counts.shotsGenerated++;
      return png;
    } finally {
      this.counts.shotsInFlight--;
      this.shotStartsMs.delete(shotId);
    }
  }
}

serveNodeChild(async (config) => {
  const options = JSON.parse(process.argv[3] ?? '{}') as ApiChildOptions;
  const knobs = options.albumWorker;
  const node = new Node(knobs && config.api ? { ...config, api: { ...config.api, albumWorker: false } } : config);
  await node.start();
  let worker: AlbumWorker | null = null;
  const generator = new HeldBackGenerator(knobs?.shotDelayMs ?? 0);
  if (knobs) {
    const redisUrl = config.api?.redisUrl;
    if (!redisUrl) throw new Error('options.albumWorker needs api.redisUrl');
    worker = await startAlbumWorker({
      redisUrl,
      store: node.store,
      generator,
      concurrency: knobs.concurrency,
      lockDurationMs: knobs.lockDurationMs,
      stalledIntervalMs: knobs.stalledIntervalMs,
      backoffMs: knobs.backoffMs,
    });
  }
  return {
    node,
    stop: async () => {
      await worker?.close();
    },
    ops: {
      // The CLI's `svc keys create` does this through a store client; here the node's own store does it.
      'bootstrap-admin': (request) => bootstrapAdminKey(node.store, (request.name as string | undefined) ?? 'admin'),
      'album-activity': () => generator.activity,
      'read-index-stats': () => (node.store instanceof ReplicatedStore ? node.store.readIndexStats : null),
      'cpu-usage': () => process.cpuUsage(),
      'rate-lease-stats': () => ({ ...leaseStats }),
      bare: async (request) => {
        const bare = express();
        const payload = request.payload;
        bare.get('/projects', (_req, res) => {
          res.json(payload);
        });
        const server = bare.listen(0, '127.0.0.1');
        await new Promise((resolve) => server.once('listening', resolve));
        return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      },
    },
  };
});
