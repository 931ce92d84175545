// `svc manifests render|secrets --redis sentinel|external` (cli/manifests/redis-sentinel.ts): the objects against
// the Kubernetes schema and against the URL the API is given, and the pods' own start script run here against
// real redis-server processes (three "pods" on loopback ports, each a server and a Sentinel, exactly the
// containers' commands and environment with the addresses moved to 127.0.0.1): the first start elects pod 0, a
// killed primary fails over, and the killed pod comes back as the new primary's replica, not as a second primary.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { runCertsCli } from '../../cli/certs/certs-command.js';
import { deploymentNames, SECRET_KEYS } from '../../cli/manifests/layout.js';
import { renderManifests, type ManifestOptions } from '../../cli/manifests/render.js';
import { buildSecrets } from '../../cli/manifests/secrets.js';
import {
  REDIS_START_SCRIPT_KEY,
  redisPodHost,
  SENTINEL_PORT,
  SENTINEL_PRIMARY_NAME,
} from '../../cli/manifests/redis-sentinel.js';
import { connectRedis, parseRedisUrl } from '../../api/redis/redis-target.js';
import { freePorts } from '../../cli/free-ports.js';
import { waitFor } from '../api/harness.js';
import { schemaProblems } from './kubernetes-schema.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const quiet = { write: () => true };
const base: ManifestOptions = {
  namespace: 'prod',
  clusterId: '0123456789abcdef',
  replicas: 3,
  founders: 3,
  image: 'registry.example/svc:0.1.0',
};
const names = deploymentNames(base);
const decode = (value: string): string => Buffer.from(value, 'base64').toString('utf8');
const redisObjects = (objects: Json[]): Json[] =>
  objects.filter((object) => object.metadata.labels?.['app.kubernetes.io/component'] === 'redis');
const one = (objects: Json[], kind: string, name: string): Json => {
  const found = objects.filter((object) => object.kind === kind && object.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name}`);
  return found[0];
};

describe('deploy: Redis with Sentinel, or external, in the Kubernetes manifests', function () {
  this.timeout(180_000);
  let dir: string;
  let certs: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-sentinel-manifests-'));
    certs = path.join(dir, 'pki');
    assert.equal(await runCertsCli(['ca', '--out', certs], quiet, quiet), 0);
    for (let ordinal = 0; ordinal < base.replicas; ordinal++) {
      const pod = `${names.statefulSet}-${ordinal}`;
      const args = ['node', '--out', certs, '--name', pod, '--cluster-id', base.clusterId];
      args.push('--peers-service', names.peersService, '--namespace', base.namespace, '--pod', pod);
      assert.equal(await runCertsCli(args, quiet, quiet), 0);
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const secretsOf = (extra: Partial<Parameters<typeof buildSecrets>[0]>) =>
    buildSecrets({
      certsDir: certs,
      namespace: base.namespace,
      replicas: base.replicas,
      apiTls: 'cert-manager',
      ...extra,
    }) as Promise<Json[]>;

  it('sentinel: schema-valid objects, and the URL the API gets names every pod’s sentinel and the primary', async () => {
    const objects = renderManifests({ ...base, redis: 'sentinel', redisReplicas: 5 }) as Json[];
    for (const object of objects)
      assert.deepEqual(schemaProblems(object), [], `${object.kind} ${object.metadata.name}`);
    const set = one(objects, 'StatefulSet', names.redis);
    assert.equal(set.spec.replicas, 5);
    assert.deepEqual(
      set.spec.template.spec.containers.map((container: Json) => container.name),
      ['redis', 'sentinel'],
    );
    const service = one(objects, 'Service', names.redis);
    assert.equal(service.spec.clusterIP, 'None', 'headless: each pod has its own DNS name');
    assert.ok(service.spec.ports.some((port: Json) => port.port === SENTINEL_PORT));
    one(objects, 'PodDisruptionBudget', names.redis);
    // The sentinels' port and the servers' are open to the nodes and to the set's own pods, nothing else.
    const policy = one(objects, 'NetworkPolicy', names.redis);
    assert.deepEqual(
      policy.spec.ingress[0].from.map((from: Json) => from.podSelector.matchLabels['app.kubernetes.io/component']),
      ['node', 'redis'],
    );

    const secrets = await secretsOf({ redis: 'sentinel', redisReplicas: 5 });
    const url = decode(one(secrets, 'Secret', names.apiSecret).data[SECRET_KEYS.redisUrl]);
    const target = parseRedisUrl(url);
    assert.ok(target.kind === 'sentinel');
    assert.equal(target.name, SENTINEL_PRIMARY_NAME);
    assert.deepEqual(
      target.sentinels,
      Array.from({ length: 5 }, (_, ordinal) => ({ host: redisPodHost(names, ordinal), port: SENTINEL_PORT })),
    );
    // The auth Secret holds exactly what the pods mount, and no password appears outside the Secrets.
    const auth = one(secrets, 'Secret', names.redisAuthSecret);
    const mounted = set.spec.template.spec.volumes.find((volume: Json) => volume.secret).secret;
    assert.equal(mounted.secretName, names.redisAuthSecret);
    assert.deepEqual(Object.keys(auth.data).sort(), mounted.items.map((item: Json) => item.key).sort());
    const rendered = JSON.stringify(objects);
    for (const value of Object.values(auth.data) as string[]) assert.ok(!rendered.includes(decode(value)));
    assert.equal(target.password, decode(auth.data[SECRET_KEYS.redisPassword]));
    assert.equal(target.sentinelPassword, decode(auth.data[SECRET_KEYS.redisSentinelPassword]));
  });

  it('external: no Redis object at all, and the secrets take a checked URL of the operator’s Redis', async () => {
    const objects = renderManifests({ ...base, redis: 'external' }) as Json[];
    assert.deepEqual(redisObjects(objects), []);
    assert.throws(() => renderManifests({ ...base, redis: 'external', redisImage: 'redis:7' }), /renders no Redis/);
    assert.throws(() => renderManifests({ ...base, redisReplicas: 3 }), /need redis sentinel/);
    assert.throws(() => renderManifests({ ...base, redis: 'sentinel', redisReplicas: 2 }), /3\.\.9/);

    const url = 'redis+sentinel://:pw@sentinel-a:26379,sentinel-b:26379,sentinel-c:26379/main?sentinelPassword=sp';
    const secrets = await secretsOf({ redis: 'external', redisUrl: url });
    assert.equal(decode(one(secrets, 'Secret', names.apiSecret).data[SECRET_KEYS.redisUrl]), url);
    assert.ok(!secrets.some((secret) => secret.metadata.name === names.redisAuthSecret), 'no Redis auth Secret');
    await assert.rejects(secretsOf({ redis: 'external' }), /needs one/);
    await assert.rejects(secretsOf({ redisUrl: url }), /goes with redis external/);
    await assert.rejects(
      secretsOf({ redis: 'external', redisUrl: 'redis+sentinel://a/main' }),
      /the Redis URL: a sentinel is host:port/,
    );
  });

  it('the pods’ start script: pod 0 starts primary, a killed primary fails over, and comes back as a replica', async () => {
    const objects = renderManifests({ ...base, redis: 'sentinel' }) as Json[];
    const secrets = await secretsOf({ redis: 'sentinel' });
    const configMap = one(objects, 'ConfigMap', names.redisConfigMap).data;
    const podSpec = one(objects, 'StatefulSet', names.redis).spec.template.spec;
    const auth = one(secrets, 'Secret', names.redisAuthSecret).data;
    const password = decode(auth[SECRET_KEYS.redisPassword]);
    const sentinelPassword = decode(auth[SECRET_KEYS.redisSentinelPassword]);

    const run = path.join(dir, 'run');
    const configDir = path.join(run, 'config');
    const authDir = path.join(run, 'auth');
    mkdirSync(configDir, { recursive: true });
    mkdirSync(authDir, { recursive: true });
    for (const [key, text] of Object.entries(configMap)) writeFileSync(path.join(configDir, key), text as string);
    for (const [key, value] of Object.entries(auth))
      writeFileSync(path.join(authDir, key), decode(value as string), { mode: 0o600 });

    const ports = await freePorts(6);
    const redisAddresses = [0, 1, 2].map((ordinal) => `127.0.0.1:${ports[ordinal]}`);
    const sentinelAddresses = [0, 1, 2].map((ordinal) => `127.0.0.1:${ports[3 + ordinal]}`);
    const children: Array<{ what: string; ordinal: number; child: ChildProcess }> = [];
    const start = (ordinal: number, what: 'redis' | 'sentinel'): ChildProcess => {
      const container = podSpec.containers.find((candidate: Json) => candidate.name === what);
      const env: Record<string, string> = {};
      for (const variable of container.env) if (variable.value !== undefined) env[variable.name] = variable.value;
      const podDir = path.join(run, `pod-${ordinal}`);
      mkdirSync(path.join(podDir, 'run'), { recursive: true, mode: 0o700 });
      mkdirSync(path.join(podDir, 'data'), { recursive: true });
      Object.assign(env, {
        PATH: process.env.PATH!,
        POD_NAME: `${names.redis}-${ordinal}`,
        REDIS_SET_ADDRS: redisAddresses.join(' '),
        REDIS_SET_SENTINEL_ADDRS: sentinelAddresses.join(' '),
        REDIS_SET_BIND: '127.0.0.1',
        REDIS_SET_DOWN_AFTER_MS: '1000',
        REDIS_SET_FAILOVER_TIMEOUT_MS: '5000',
        REDIS_SET_RUN_DIR: path.join(podDir, 'run'),
        REDIS_SET_DATA_DIR: path.join(podDir, 'data'),
        REDIS_SET_CONFIG_DIR: configDir,
        REDIS_SET_AUTH_DIR: authDir,
      });
      // The container's own command, with the ConfigMap's mount moved here.
      const [shell, script, argument] = container.command as string[];
      assert.equal(path.basename(script!), REDIS_START_SCRIPT_KEY);
      const child = spawn(shell!, [path.join(configDir, REDIS_START_SCRIPT_KEY), argument!], {
        env,
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.setEncoding('utf8');
      children.push({ what, ordinal, child });
      return child;
    };
    const client = (address: string, secret: string): Redis => {
      const [host, port] = address.split(':');
      const redis = new Redis({
        host,
        port: Number(port),
        password: secret,
        lazyConnect: true,
        retryStrategy: () => null,
      });
      redis.on('error', () => undefined);
      return redis;
    };
    const ask = async (address: string, secret: string, ...command: string[]): Promise<unknown> => {
      const redis = client(address, secret);
      try {
        await redis.connect();
        return await redis.call(command[0]!, ...command.slice(1));
      } catch {
        return null;
      } finally {
        redis.disconnect();
      }
    };
    const primary = async (): Promise<string | null> => {
      for (const sentinel of sentinelAddresses) {
        const answer = (await ask(sentinel, sentinelPassword, 'SENTINEL', 'get-master-addr-by-name', 'primary')) as
          string[] | null;
        if (answer) return `${answer[0]}:${answer[1]}`;
      }
      return null;
    };
    const settled = async (): Promise<boolean> => {
      for (const sentinel of sentinelAddresses) {
        const replicas = (await ask(sentinel, sentinelPassword, 'SENTINEL', 'replicas', 'primary')) as Json[] | null;
        const peers = (await ask(sentinel, sentinelPassword, 'SENTINEL', 'sentinels', 'primary')) as Json[] | null;
        const up = (replicas ?? []).filter(
          (replica: string[]) => !replica[replica.indexOf('flags') + 1]!.includes('down'),
        );
        if (up.length !== 2 || peers?.length !== 2) return false;
      }
      return true;
    };
    const roleOf = async (address: string): Promise<Json> => ask(address, password, 'ROLE');

    try {
      // Every pod at once, as podManagementPolicy Parallel starts them.
      for (const ordinal of [2, 1, 0]) start(ordinal, 'redis');
      for (const ordinal of [0, 1, 2]) start(ordinal, 'sentinel');
      assert.equal(await waitFor(primary, (found) => found !== null, 30_000), redisAddresses[0]);
      await waitFor(settled, Boolean, 60_000);

      // The API's own connection (redis+sentinel://, as the Secret's URL with the hosts moved here) writes.
      const url = `redis+sentinel://:${password}@${sentinelAddresses.join(',')}/${SENTINEL_PRIMARY_NAME}?sentinelPassword=${sentinelPassword}`;
      const api = connectRedis(url, { maxRetriesPerRequest: 20 });
      api.on('error', () => undefined);
      try {
        await api.set('before-failover', 'kept');
        assert.equal(await api.call('WAIT', '2', '5000'), 2, 'both replicas hold it');

        const killed = children.find((entry) => entry.what === 'redis' && entry.ordinal === 0)!.child;
        killed.kill('SIGKILL');
        await once(killed, 'exit');
        const promoted = await waitFor(primary, (found) => found !== null && found !== redisAddresses[0], 60_000);
        assert.ok(redisAddresses.includes(promoted!));

        // The killed pod's container restarts with the same command: it must ask, and follow the new primary.
        const again = start(0, 'redis');
        let said = '';
        again.stderr!.on('data', (text: string) => (said += text));
        const role = await waitFor(
          () => roleOf(redisAddresses[0]!),
          (answer) => Array.isArray(answer) && answer[0] === 'slave',
          30_000,
        );
        assert.equal(`${role[1]}:${role[2]}`, promoted, 'a replica of the promoted server');
        assert.match(said, /starting as replica of/);
        assert.equal(await api.get('before-failover'), 'kept');
        await api.set('after-failover', 'written');
        assert.equal(await api.get('after-failover'), 'written');
      } finally {
        api.disconnect();
      }
    } finally {
      for (const { child } of children) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await once(child, 'exit');
        }
      }
    }
  });
});
