// The node image (deploy/Containerfile), built with podman and run the way the StatefulSet runs it: the rendered
// arguments for pod svc-0, the Secrets as read-only files, a read-only root file system, no capabilities, uid
// 10001, its Redis on the host reached through slirp4netns. It must answer `svc --help`, reach /ready as a one-node cluster and stop cleanly on SIGTERM
// within the pod's termination grace. Minutes of work: it runs under `make image-test` (SVC_IMAGE_TEST=1), not in
// the default test run. The default run checks the Containerfile's files and entrypoint (below, always).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { runCertsCli } from '../../cli/certs/certs-command.js';
import { MOUNTS, SECRET_KEYS } from '../../cli/manifests/layout.js';
import { NODE_UID, renderManifests, TERMINATION_GRACE_SECONDS } from '../../cli/manifests/render.js';
import { buildSecrets } from '../../cli/manifests/secrets.js';
import { freePorts } from '../../cli/free-ports.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../..');
const containerfile = readFileSync(path.join(repo, 'deploy/Containerfile'), 'utf8');
const quiet = { write: () => true };

describe('deploy: the node image', function () {
  this.timeout(900_000);

  it('the Containerfile copies files that exist and runs bin/svc.js, whose first argument the StatefulSet gives', () => {
    const copies = [...containerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    assert.ok(copies.length >= 8);
    for (const source of copies)
      if (source !== 'node_modules') assert.ok(existsSync(path.join(repo, source)), `${source} exists`);
    // Every folder the CLI imports from at run time is in the image (make image copies these from git).
    const makefile = readFileSync(path.join(repo, 'Makefile'), 'utf8');
    const sources = /^IMAGE_SOURCES = (.+)$/m.exec(makefile)![1]!.split(/\s+/);
    for (const source of copies) if (source !== 'node_modules') assert.ok(sources.includes(source), source);
    const entrypoint = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(containerfile)![1]!);
    assert.deepEqual(entrypoint, ['node', '/app/bin/svc.js']);
    assert.match(containerfile, new RegExp(`^USER ${NODE_UID}:${NODE_UID}$`, 'm'));
    const set = renderManifests({ namespace: 'x', clusterId: 'c1', replicas: 3, image: 'i' })
      .filter((object) => object.kind === 'StatefulSet')
      .map((object) => object as Json)
      .find((object) => object.metadata.name === 'svc');
    assert.equal(set.spec.template.spec.containers[0].args[0], 'node');
    assert.equal(set.spec.template.spec.securityContext.runAsUser, NODE_UID);
  });

  describe('built and run with podman (make image-test)', function () {
    let dir: string;
    const image = 'localhost/svc:image-test';
    const name = `svc-image-test-${process.pid}`;
    // This sandbox's podman: crun refuses hybrid cgroups, and the default rlimits exceed the host's.
    const podman = ['--runtime', 'runc'];
    const limits = ['--ulimit', 'nofile=20000:20000', '--ulimit', 'nproc=4096:4096'];
    let redis: ChildProcess | undefined;

    before(async function () {
      if (process.env.SVC_IMAGE_TEST !== '1') return this.skip();
      const which = await run('sh', ['-c', 'command -v podman && command -v runc']).catch(() => null);
      if (!which) return this.skip();
      dir = mkdtempSync(path.join(os.tmpdir(), 'svc-image-'));
      const started = Date.now();
      await run('make', ['image-context'], { cwd: repo, maxBuffer: 64 * 1024 * 1024 });
      const base = (await run(path.join(repo, 'deploy/local-node-base.sh'), [], { cwd: repo })).stdout.trim();
      await run(
        'podman',
        [
          ...podman,
          'build',
          '-f',
          'deploy/Containerfile',
          '--build-arg',
          `NODE_IMAGE=${base}`,
          '-t',
          image,
          '.image-context',
        ],
        { cwd: repo, maxBuffer: 64 * 1024 * 1024 },
      );
      process.stderr.write(`      (image built in ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
    });

    after(async () => {
      redis?.kill('SIGKILL');
      if (dir === undefined) return;
      await run('podman', [...podman, 'rm', '-f', name]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers svc --help with a read-only root, no capabilities and no network', async () => {
      const { stdout } = await run('podman', [
        ...podman,
        'run',
        '--rm',
        ...limits,
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--cap-drop',
        'ALL',
        '--network',
        'none',
        image,
        '--help',
      ]);
      assert.match(stdout, /usage: svc <command>/);
      assert.match(stdout, /manifests render\|secrets/);
    });

    it('runs the rendered svc-0 as a one-node cluster to /ready, and stops cleanly on SIGTERM', async () => {
      const options = { namespace: 'prod', clusterId: '0123456789abcdef', replicas: 1, image };
      const pki = path.join(dir, 'pki');
      assert.equal(await runCertsCli(['ca', '--out', pki], quiet, quiet), 0);
      const nodeArgs = ['node', '--out', pki, '--name', 'svc-0', '--cluster-id', options.clusterId];
      nodeArgs.push('--peers-service', 'svc-peers', '--namespace', 'prod', '--pod', 'svc-0');
      assert.equal(await runCertsCli(nodeArgs, quiet, quiet), 0);
      const secrets = (await buildSecrets({ certsDir: pki, namespace: 'prod', replicas: 1 })) as Json[];
      const volumes: Record<string, string> = {};
      // Each Secret as the kubelet would project it: one file per key, readable by the pod's group.
      for (const [volume, secret] of [
        ['tls', secrets[0]],
        ['api', secrets[1]],
      ] as const) {
        const at = path.join(dir, volume);
        mkdirSync(at);
        for (const [key, value] of Object.entries(secret.data as Record<string, string>))
          if (volume === 'tls' || key === SECRET_KEYS.apiSecretKey)
            writeFileSync(path.join(at, key), Buffer.from(value, 'base64'), { mode: 0o440 });
        volumes[volume] = at;
      }
      const data = path.join(dir, 'data');
      mkdirSync(data);
      for (const at of [volumes.tls!, volumes.api!, data]) {
        chownSync(at, NODE_UID, NODE_UID);
        for (const file of at === data ? [] : Object.keys(secrets[at === volumes.tls ? 0 : 1].data))
          if (existsSync(path.join(at, file))) chownSync(path.join(at, file), 0, NODE_UID);
      }
      const set = renderManifests(options).find(
        (object) => object.kind === 'StatefulSet' && object.metadata?.name === 'svc',
      ) as Json;
      const container = set.spec.template.spec.containers[0];
      const args = (container.args as string[]).map((arg) => arg.replaceAll('$(POD_NAME)', 'svc-0'));
      // The Secret's Redis, stood in for by a redis-server on this host's loopback with the Secret's password,
      // reached from the container through slirp4netns (10.0.2.2 is the host's loopback there).
      const password = Buffer.from(secrets[2].data[SECRET_KEYS.redisPassword], 'base64').toString();
      const [redisPort] = await freePorts(1);
      writeFileSync(path.join(dir, 'redis.conf'), `requirepass ${password}\n`, { mode: 0o600 });
      redis = spawn(
        'redis-server',
        [path.join(dir, 'redis.conf'), '--port', String(redisPort), '--bind', '127.0.0.1', '--dir', dir],
        { stdio: 'ignore' },
      );
      const redisUrl = `redis://:${password}@10.0.2.2:${redisPort}`;
      const env = (container.env as Json[]).flatMap((v) =>
        v.name === 'POD_NAME'
          ? ['-e', 'POD_NAME=svc-0']
          : v.name === 'REDIS_URL'
            ? ['-e', `REDIS_URL=${redisUrl}`]
            : ['-e', `${v.name}=${v.value}`],
      );
      await run('podman', [
        ...podman,
        'run',
        '-d',
        '--name',
        name,
        ...limits,
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--cap-drop',
        'ALL',
        '--security-opt',
        'no-new-privileges',
        '--network',
        'slirp4netns:allow_host_loopback=true',
        '--user',
        `${NODE_UID}:${NODE_UID}`,
        '-v',
        `${data}:${MOUNTS.data}`,
        '-v',
        `${volumes.tls}:${MOUNTS.tls}:ro`,
        '-v',
        `${volumes.api}:${MOUNTS.apiSecret}:ro`,
        ...env,
        image,
        ...args,
      ]);
      const probe = `fetch('http://127.0.0.1:8080${container.readinessProbe.httpGet.path}').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(2))`;
      let ready = false;
      const deadline = Date.now() + 120_000;
      while (!ready && Date.now() < deadline) {
        ready = await run('podman', [...podman, 'exec', name, 'node', '-e', probe]).then(
          () => true,
          async () => {
            await new Promise((resolve) => setTimeout(resolve, 1000));
            return false;
          },
        );
        const { stdout: state } = await run('podman', [...podman, 'inspect', name, '--format', '{{.State.Running}}']);
        if (!ready && state.trim() !== 'true') break;
      }
      const logs = async () => {
        const { stdout, stderr } = await run('podman', [...podman, 'logs', name], { maxBuffer: 16 * 1024 * 1024 });
        return stdout + stderr;
      };
      assert.ok(ready, `svc-0 never answered /ready 200:\n${(await logs()).slice(-3000)}`);
      await run('podman', [...podman, 'stop', '-t', String(TERMINATION_GRACE_SECONDS), name]);
      const { stdout: exit } = await run('podman', [...podman, 'inspect', name, '--format', '{{.State.ExitCode}}']);
      const text = await logs();
      assert.equal(exit.trim(), '0', text.slice(-3000));
      assert.match(text, /svc node svc-0: stopped/);
      assert.ok(!text.includes(password), 'the Redis password is in no log line');
      assert.ok(existsSync(path.join(data, 'cluster-id')), 'the node wrote its data volume');
    });
  });
});
