// The node's `api` section: checked with the rest of the config (ConfigError naming the field), a bad key file
// stops the start, a node without Redis still serves records (queue endpoints 503 QUEUE_UNAVAILABLE), a node
// without REDIS_URL runs a redis-server of its own under its data directory and stops it (its worker denying
// networked runs the roster's members and that Redis), and a node without the section keeps 404 for every path
// but its own. Before its API is mounted a starting node already answers on its HTTP port: an API path gets 503
// NOT_READY with Retry-After (neither a refused connection nor a held one), which the SDK waits out and retries.
// A stop while the API's workers wait for an unreachable Redis ends the start (before, it waited on for good).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { Node, StoppedDuringStartError } from '../../cli/node/node.js';
import { ConfigError, resolveNodeConfig, type NodeConfig } from '../../cli/node/config.js';
import { API_REDIS_DIR } from '../../cli/node/node-api.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';
import {
  makePki,
  nodeConfig,
  planNodes,
  removeDir,
  tempDir,
  waitFor,
  type Pki,
  type PlannedNode,
} from '../node/harness.js';
import { SvcApiError, SvcClient } from '../../sdk/src/index.js';
import { startTestRedis } from '../api/harness.js';

/** STOPPED_START_BOUND_MS bounds the wait for a stopped start to end (generous: it ends as the stop returns). */
const STOPPED_START_BOUND_MS = 15_000;

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** processesNaming lists the pids whose command line names `text` (Linux /proc). */
function processesNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('cluster-api: the node config api section', function () {
  this.timeout(60_000);
  let dir: string;
  let pki: Pki;
  let plan: PlannedNode;
  const single = async (name: string, extra: Partial<NodeConfig>): Promise<NodeConfig> => {
    [plan] = await planNodes([name]);
    // A node starts only with its own peer certificate (the name in it is the node's).
    return nodeConfig(plan!, join(dir, name), pki.tls(name), { bootstrap: [plan!.member] }, { tickMs: 30, ...extra });
  };
  const readyNode = async (config: NodeConfig): Promise<Node> => {
    const node = new Node(config);
    await node.start();
    await waitFor(async () => (await fetch(`${node.httpAddress}/ready`)).status === 200, 'the node ready');
    return node;
  };
  before(async () => {
    dir = await tempDir('node-api-config');
    pki = await makePki(dir, [
      'cfg',
      'nokey',
      'badkey',
      'noredis',
      'localredis',
      'noapi',
      'early',
      'earlyfail',
      'agentwait',
      'albumwait',
    ]);
  });
  after(async () => {
    await removeDir(dir);
  });

  it('refuses a malformed api section by name', async () => {
    const base = await single('cfg', {});
    const refused = (api: unknown, pattern: RegExp) =>
      assert.throws(
        () => resolveNodeConfig({ ...base, api } as NodeConfig),
        (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
      );
    refused([], /api must be an object/);
    refused({ redisUrl: 'http://x' }, /api\.redisUrl/);
    refused({ rateLimitPerSecond: 0 }, /api\.rateLimitPerSecond/);
    refused({ rateLimitPerSecond: 1.5 }, /api\.rateLimitPerSecond/);
    refused({ secretKeyFile: '' }, /api\.secretKeyFile/);
    refused({ localRedis: 'no' }, /api\.localRedis/);
    refused({ trustedProxies: ['10.0.0.1', ''] }, /api\.trustedProxies/);
    assert.doesNotThrow(() => resolveNodeConfig({ ...base, api: {} }));
  });

  it('will not start with a missing or malformed credential key file, and says which', async () => {
    const missing = new Node(
      await single('nokey', { api: { localRedis: false, secretKeyFile: join(dir, 'absent.key') } }),
    );
    await assert.rejects(
      missing.start(),
      (error: unknown) => error instanceof ConfigError && /api\.secretKeyFile .*absent\.key/.test(error.message),
    );
    const badFile = join(dir, 'bad.key');
    writeFileSync(badFile, 'not a key');
    const malformed = new Node(await single('badkey', { api: { localRedis: false, secretKeyFile: badFile } }));
    await assert.rejects(
      malformed.start(),
      (error: unknown) =>
        error instanceof ConfigError && /32 bytes/.test(error.message) && !/not a key/.test(error.message),
    );
  });

  it('without any Redis serves records and answers queue endpoints 503 QUEUE_UNAVAILABLE', async () => {
    const node = await readyNode(await single('noredis', { api: { localRedis: false } }));
    try {
      assert.equal(node.apiRedisUrl, null);
      const admin = await bootstrapAdminKey(node.store, 'admin');
      const client = new SvcClient({ baseUrl: node.httpAddress, apiKey: admin.key, env: {} });
      const project = await client.createProject({ body: { name: 'p', workspace: '/tmp', command: ['true'] } });
      assert.deepEqual(
        (await client.listProjects()).items.map((item) => item.id),
        [project.id],
      );
      const refused = await client.getWorkStats().then(
        () => null,
        (error: unknown) => error,
      );
      assert.ok(
        refused instanceof SvcApiError && refused.status === 503 && refused.code === 'QUEUE_UNAVAILABLE',
        String(refused),
      );
      const noKey = await client.listCredentials().then(
        () => null,
        (error: unknown) => error,
      );
      assert.ok(
        noKey instanceof SvcApiError && noKey.code === 'CREDENTIALS_UNAVAILABLE',
        'no key file, no credentials',
      );
    } finally {
      await node.stop();
    }
    assert.equal(
      await fetch(`http://127.0.0.1:${plan.httpPort}/projects`).catch(() => null),
      null,
      'stopped: nothing listens',
    );
  });

  it('without REDIS_URL runs a redis-server of its own under its data directory, and stops it', async () => {
    const saved = process.env.REDIS_URL;
    delete process.env.REDIS_URL;
    try {
      const config = await single('localredis', { api: {} });
      const node = await readyNode(config);
      let port = 0;
      try {
        assert.match(node.apiRedisUrl ?? '', /^redis:\/\/:[0-9a-f]{64}@127\.0\.0\.1:\d+$/, 'with a generated password');
        port = Number(new URL(node.apiRedisUrl!).port);
        assert.ok(existsSync(join(config.dataDir, API_REDIS_DIR)), 'its files live under the data directory');
        const admin = await bootstrapAdminKey(node.store, 'admin');
        const client = new SvcClient({ baseUrl: node.httpAddress, apiKey: admin.key, env: {} });
        const stats = await client.getWorkStats();
        assert.equal(stats.queues[0]!.workers, 1, "this node's own worker");
        // The node's worker denies networked runs the members of its roster (here itself) and its Redis.
        if (process.getuid?.() === 0) {
          const workspace = mkdtempSync(join(tmpdir(), 'svc-node-run-'));
          try {
            const project = await client.createProject({
              body: { name: 'net', workspace, command: ['true'], network: true },
            });
            const accepted = await client.runCommand({ path: { id: project.id }, body: { prompt: 'x' } });
            let sandbox: { egress?: { deniedServices: string[] } } | undefined;
            const complete = await client.streamRun(accepted.streamUrl, (event) => {
              if (event.event === 'started') sandbox = event.data.sandbox as typeof sandbox;
            });
            assert.equal(complete.status, 'succeeded');
            for (const denied of [plan.grpcPort, plan.httpPort, port])
              assert.ok(sandbox?.egress?.deniedServices.includes(`127.0.0.1/32:${denied}`), JSON.stringify(sandbox));
          } finally {
            rmSync(workspace, { recursive: true, force: true });
          }
        }
      } finally {
        await node.stop();
      }
      assert.equal(await portOpen(port), false, 'stop() stopped the redis-server');
    } finally {
      if (saved !== undefined) process.env.REDIS_URL = saved;
    }
  });

  it('answers API paths 503 NOT_READY with Retry-After before its API is mounted, and the SDK retries to success', async () => {
    // The window a real start has while the API's modules load and its app is built, held open by the test.
    let reached = (): void => undefined;
    const atHold = new Promise<void>((resolve) => (reached = resolve));
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const node = new Node(
      await single('early', {
        api: { localRedis: false },
        apiMountHold: () => {
          reached();
          return held;
        },
      }),
    );
    const starting = node.start();
    try {
      await atHold;
      // The port listens and answers at once; the node's own paths say it is starting or ready.
      const early = await fetch(`${node.httpAddress}/projects`);
      assert.equal(early.status, 503);
      assert.equal(early.headers.get('retry-after'), '1');
      assert.equal(((await early.json()) as { code: string }).code, 'NOT_READY');
      assert.ok([200, 503].includes((await fetch(`${node.httpAddress}/health`)).status));
      // The store runs before the API: an admin key is written through it while the API is still held.
      const admin = await bootstrapAdminKey(node.store, 'admin');
      // The SDK's first attempt is answered 503; the hold is released then, and its retry (after Retry-After) succeeds.
      const answers: string[] = [];
      const watching: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        answers.push(`${response.status} ${response.headers.get('retry-after') ?? '-'}`);
        if (response.status === 503) release();
        return response;
      };
      const client = new SvcClient({ baseUrl: node.httpAddress, apiKey: admin.key, env: {}, fetch: watching });
      const listed = await client.listProjects();
      assert.deepEqual(listed.items, []);
      assert.deepEqual(answers, ['503 1', '200 -']);
      await starting;
    } finally {
      release();
      await starting.catch(() => undefined);
      await node.stop();
    }
  });

  it('stops the redis-server it started early when its start fails before the API', async () => {
    const saved = process.env.REDIS_URL;
    delete process.env.REDIS_URL;
    try {
      const config = await single('earlyfail', { api: { secretKeyFile: join(dir, 'absent.key') } });
      await assert.rejects(new Node(config).start(), ConfigError);
      // Its redis-server names its config file (under the data directory) in its process title.
      assert.deepEqual(processesNaming(join(config.dataDir, API_REDIS_DIR)), [], 'no redis-server left running');
    } finally {
      if (saved !== undefined) process.env.REDIS_URL = saved;
    }
  });

  // Each worker waits for Redis in its own way: the agent-run worker on its cancel channel's SUBSCRIBE, the album
  // worker on BullMQ's connection (the agent-run worker off, so the album worker's start is the one waiting).
  for (const { name, waiting, api } of [
    { name: 'agentwait', waiting: 'the agent-run worker', api: {} },
    { name: 'albumwait', waiting: 'the album worker', api: { runWorker: false } },
  ]) {
    it(`a stop while ${waiting} waits for an unreachable Redis ends the start at once`, async () => {
      // A real redis-server with its password, stopped: the URL names a loopback port where nothing answers now.
      const redis = await startTestRedis();
      await redis.stop();
      const node = new Node(await single(name, { api: { localRedis: false, redisUrl: redis.url, ...api } }));
      const started = node.start().then(
        () => 'started',
        (error: unknown) => error,
      );
      try {
        // The app answers before its workers start; they wait for Redis (connection retries without end).
        await waitFor(
          async () => (await fetch(`${node.httpAddress}/openapi.json`).catch(() => null))?.status === 200,
          'the API answering',
          30_000,
        );
        await node.stop();
        // Before, the start went on waiting for Redis after the stop (its clients retrying until the process exited).
        let bound: NodeJS.Timeout | undefined;
        const outcome = await Promise.race([
          started,
          new Promise((resolve) => (bound = setTimeout(() => resolve('still starting'), STOPPED_START_BOUND_MS))),
        ]);
        clearTimeout(bound);
        assert.ok(outcome instanceof StoppedDuringStartError, `the start ended with ${String(outcome)}`);
      } finally {
        await node.stop();
      }
    });
  }

  it('without an api section answers 404 beyond its own four paths', async () => {
    const node = await readyNode(await single('noapi', {}));
    try {
      const response = await fetch(`${node.httpAddress}/projects`);
      assert.equal(response.status, 404);
      assert.deepEqual(await response.json(), { status: 'error', reason: 'no route /projects' });
    } finally {
      await node.stop();
    }
  });
});
