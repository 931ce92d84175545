// The node image (deploy/Containerfile), built with podman and run the way the StatefulSet runs it: the rendered
// arguments for pod svc-0, the Secrets as read-only files, a read-only root file system, no capabilities, uid
// 10001, its Redis on the host reached through slirp4netns. It must answer `svc --help`, reach /ready as a one-node cluster and stop cleanly on SIGTERM
// within the pod's termination grace; a founder of three, killed with -9 (the container's PID 1), restarts on its
// volume to /health, and the nodes report the package's version. Minutes of work: it runs under `make image-test` (SVC_IMAGE_TEST=1), not in
// the default test run. The default run checks the Containerfile's files and entrypoint (below, always).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { runCertsCli } from '../../cli/certs/certs-command.js';
import { apiDnsNames, deploymentNames, GRPC_PORT, HTTP_PORT, MOUNTS, SECRET_KEYS } from '../../cli/manifests/layout.js';
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

  it('the Containerfile copies the built app (scripts/build.mjs) and runs bin/svc.js, whose first argument the StatefulSet gives', () => {
    const copies = [...containerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(/\s+/));
    // The context (make image-context) is the build's output and node_modules: its top-level entries are the
    // folders tsc compiles (tsconfig.build.json), the files copied beside them (scripts/build.mjs's assets) and
    // the bundle (its outdir), which bin/svc.js runs.
    const top = (entry: string) => entry.split('/')[0]!;
    const compiled = (JSON.parse(readFileSync(path.join(repo, 'tsconfig.build.json'), 'utf8')) as Json).include;
    const buildScript = readFileSync(path.join(repo, 'scripts/build.mjs'), 'utf8');
    const assets = [.../^const assets = \[([^\]]+)\];$/m.exec(buildScript)![1]!.matchAll(/'([^']+)'/g)].map(
      (m) => m[1]!,
    );
    const bundleDir = /^\s*outdir: join\(out, '([^']+)'\),$/m.exec(buildScript)![1]!;
    assert.deepEqual(
      [...new Set(copies)].sort(),
      [...new Set(['node_modules', ...compiled.map(top), ...assets.map(top), top(bundleDir)])].sort(),
      'the image copies every top-level entry of the build, and nothing else',
    );
    const entrypoint = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(containerfile)![1]!);
    assert.deepEqual(entrypoint, ['node', '/app/bin/svc.js']);
    assert.match(containerfile, new RegExp(`^USER ${NODE_UID}:${NODE_UID}$`, 'm'));
    const set = renderManifests({ namespace: 'x', clusterId: 'c1', replicas: 3, founders: 3, image: 'i' })
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
    const network = `svc-image-test-${process.pid}`;
    const clusterId = '0123456789abcdef';
    const names: string[] = [];
    let networkMade = false;
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
      for (const containerName of names)
        await run('podman', [...podman, 'rm', '-f', containerName]).catch(() => undefined);
      if (networkMade) await run('podman', ['network', 'rm', '-f', network]).catch(() => undefined);
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

    it('holds compiled JavaScript and production dependencies only: no tsx, TypeScript or dev dependency', async () => {
      const script = [
        "const fs = require('node:fs'), path = require('node:path');",
        "const walk = (d) => fs.readdirSync(d).flatMap((n) => { const e = path.join(d, n); return n === 'node_modules' ? [] : fs.statSync(e).isDirectory() ? walk(e) : [e]; });",
        "const modules = fs.readdirSync('/app/node_modules').flatMap((n) => n.startsWith('@') ? fs.readdirSync('/app/node_modules/' + n).map((m) => n + '/' + m) : [n]);",
        "console.log(JSON.stringify({ modules, bundle: fs.existsSync('/app/bundle/svc.mjs'), typescript: walk('/app').filter((f) => /\\.[cm]?ts$/.test(f)) }));",
      ].join('\n');
      const { stdout } = await run('podman', [
        ...podman,
        'run',
        '--rm',
        ...limits,
        '--network',
        'none',
        '--entrypoint',
        'node',
        image,
        '-e',
        script,
      ]);
      const found = JSON.parse(stdout) as { modules: string[]; bundle: boolean; typescript: string[] };
      assert.deepEqual(found.typescript, [], 'no TypeScript source in /app');
      assert.ok(found.bundle, 'the bundle bin/svc.js runs is in /app');
      assert.ok(
        found.modules.includes('@grpc/grpc-js') && found.modules.includes('express'),
        'the dependencies are there',
      );
      // Every package the lock marks dev-only (the dev dependencies and what only they pull in) stays out.
      const lock = JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')) as Json;
      const devOnly = Object.entries(lock.packages as Record<string, { dev?: boolean }>)
        .filter(([where, entry]) => entry.dev && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(where))
        .map(([where]) => where.slice('node_modules/'.length));
      assert.ok(devOnly.includes('tsx') && devOnly.includes('typescript') && devOnly.includes('ts-proto'));
      assert.deepEqual(
        found.modules.filter((name) => devOnly.includes(name)),
        [],
        'no dev-only package in the image',
      );
      assert.ok(!found.modules.includes('tsx') && !found.modules.includes('esbuild'), 'no tsx (nor its esbuild)');
    });

    /** certsAndSecrets issues the CA and pods' certificates and projects the Secrets as the kubelet would. */
    async function certsAndSecrets(
      at: string,
      replicas: number,
    ): Promise<{ secrets: Json[]; tls: string; api: string; apiTls: string }> {
      const pki = path.join(at, 'pki');
      assert.equal(await runCertsCli(['ca', '--out', pki], quiet, quiet), 0);
      for (let ordinal = 0; ordinal < replicas; ordinal++) {
        const pod = `svc-${ordinal}`;
        const certArgs = ['node', '--out', pki, '--name', pod, '--cluster-id', clusterId];
        certArgs.push('--peers-service', 'svc-peers', '--namespace', 'prod', '--pod', pod);
        assert.equal(await runCertsCli(certArgs, quiet, quiet), 0);
      }
      const layout = deploymentNames({ namespace: 'prod' });
      const dns = apiDnsNames(layout).flatMap((name) => ['--dns', name]);
      assert.equal(await runCertsCli(['api', '--out', pki, ...dns], quiet, quiet), 0);
      const secrets = (await buildSecrets({ certsDir: pki, namespace: 'prod', replicas })) as Json[];
      const named = (name: string): Json => secrets.find((secret) => secret.metadata.name === name);
      // One file per key, owned by root, readable by the pod's group (fsGroup), in a directory of its own.
      const project = (volume: string, secret: Json, keys: string[]): string => {
        const where = path.join(at, volume);
        mkdirSync(where);
        for (const key of keys) {
          writeFileSync(path.join(where, key), Buffer.from(secret.data[key], 'base64'), { mode: 0o440 });
          chownSync(path.join(where, key), 0, NODE_UID);
        }
        chownSync(where, 0, NODE_UID);
        return where;
      };
      const tlsSecret = named(layout.tlsSecret);
      const tls = project('tls-pairs', tlsSecret, Object.keys(tlsSecret.data));
      const api = project('api', named(layout.apiSecret), [SECRET_KEYS.apiSecretKey]);
      const apiTls = project('api-tls', named(layout.apiTlsSecret), [SECRET_KEYS.tlsCert, SECRET_KEYS.tlsKey]);
      return { secrets, tls, api, apiTls };
    }

    /** startPod runs the rendered node container as pod `pod` would run, with its own data directory. */
    async function startPod(options: {
      at: string;
      pod: string;
      container: Json;
      tls: string;
      api: string;
      apiTls: string;
      redisUrl: string;
      network: string[];
    }): Promise<{ name: string; data: string }> {
      const container = options.container;
      const data = path.join(options.at, `data-${options.pod}`);
      mkdirSync(data);
      chownSync(data, NODE_UID, NODE_UID);
      // The init container first, as the kubelet runs it: it copies the pod's own pair out of every pod's.
      const own = path.join(options.at, `tls-${options.pod}`);
      mkdirSync(own);
      chownSync(own, NODE_UID, NODE_UID);
      const init = (
        renderManifests({ namespace: 'prod', clusterId, replicas: 1, founders: 1, image }).find(
          (object) => object.kind === 'StatefulSet' && object.metadata?.name === 'svc',
        ) as Json
      ).spec.template.spec.initContainers[0];
      const initCommand = (init.command as string[]).map((arg) => arg.replaceAll('$(POD_NAME)', options.pod));
      await run('podman', [
        ...podman,
        'run',
        '--rm',
        ...limits,
        '--read-only',
        '--cap-drop',
        'ALL',
        '--security-opt',
        'no-new-privileges',
        '--network',
        'none',
        '--user',
        `${NODE_UID}:${NODE_UID}`,
        '-v',
        `${options.tls}:${MOUNTS.tlsPairs}:ro`,
        '-v',
        `${own}:${MOUNTS.tls}`,
        '--entrypoint',
        initCommand[0]!,
        image,
        ...initCommand.slice(1),
      ]);
      assert.deepEqual(readdirSync(own).sort(), ['ca.crt', `${options.pod}.crt`, `${options.pod}.key`]);
      const args = (container.args as string[]).map((arg) => arg.replaceAll('$(POD_NAME)', options.pod));
      const env = (container.env as Json[]).flatMap((v) =>
        v.name === 'POD_NAME'
          ? ['-e', `POD_NAME=${options.pod}`]
          : v.name === 'REDIS_URL'
            ? ['-e', `REDIS_URL=${options.redisUrl}`]
            : ['-e', `${v.name}=${v.value}`],
      );
      const containerName = `${name}-${path.basename(options.at)}-${options.pod}`;
      names.push(containerName);
      await run('podman', [
        ...podman,
        'run',
        '-d',
        '--name',
        containerName,
        ...limits,
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--cap-drop',
        'ALL',
        '--security-opt',
        'no-new-privileges',
        ...options.network,
        '--user',
        `${NODE_UID}:${NODE_UID}`,
        '-v',
        `${data}:${MOUNTS.data}`,
        '-v',
        `${own}:${MOUNTS.tls}:ro`,
        '-v',
        `${options.api}:${MOUNTS.apiSecret}:ro`,
        '-v',
        `${options.apiTls}:${MOUNTS.apiTls}:ro`,
        ...env,
        image,
        ...args,
      ]);
      return { name: containerName, data };
    }

    const logsOf = async (containerName: string): Promise<string> => {
      const { stdout, stderr } = await run('podman', [...podman, 'logs', containerName], {
        maxBuffer: 16 * 1024 * 1024,
      });
      return stdout + stderr;
    };

    /**
     * httpInside GETs a path of the node's HTTP port (HTTPS) from inside its container, as the kubelet's probe
     * would: without checking the certificate.
     */
    async function httpInside(containerName: string, pathname: string): Promise<{ status: number; body: string }> {
      const script = `require('node:https').get({ host: '127.0.0.1', port: ${HTTP_PORT}, path: '${pathname}', rejectUnauthorized: false }, (r) => { let body = ''; r.setEncoding('utf8'); r.on('data', (c) => (body += c)); r.on('end', () => console.log(JSON.stringify({ status: r.statusCode, body }))); }).on('error', () => console.log('{"status":0,"body":""}'))`;
      const { stdout } = await run('podman', [...podman, 'exec', containerName, 'node', '-e', script]);
      return JSON.parse(stdout) as { status: number; body: string };
    }

    async function waitReady(containerName: string, probePath: string): Promise<void> {
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        const answer = await httpInside(containerName, probePath).catch(() => ({ status: -1, body: '' }));
        if (answer.status === 200) return;
        const { stdout: state } = await run('podman', [
          ...podman,
          'inspect',
          containerName,
          '--format',
          '{{.State.Running}}',
        ]);
        if (state.trim() !== 'true') break;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      assert.fail(`${containerName} never answered ${probePath} 200:\n${(await logsOf(containerName)).slice(-3000)}`);
    }

    async function stopCleanly(containerName: string, pod: string): Promise<string> {
      await run('podman', [...podman, 'stop', '-t', String(TERMINATION_GRACE_SECONDS), containerName]);
      const { stdout: exit } = await run('podman', [
        ...podman,
        'inspect',
        containerName,
        '--format',
        '{{.State.ExitCode}}',
      ]);
      const text = await logsOf(containerName);
      assert.equal(exit.trim(), '0', text.slice(-3000));
      assert.match(text, new RegExp(`svc node ${pod}: stopped`));
      return text;
    }

    const nodeContainer = (replicas: number): Json =>
      (
        renderManifests({ namespace: 'prod', clusterId, replicas, founders: 3, image }).find(
          (object) => object.kind === 'StatefulSet' && object.metadata?.name === 'svc',
        ) as Json
      ).spec.template.spec.containers[0];

    it('runs the rendered svc-0 as a one-node cluster to /ready with its Redis, and stops cleanly on SIGTERM', async () => {
      const at = path.join(dir, 'single');
      mkdirSync(at);
      const { secrets, tls, api, apiTls } = await certsAndSecrets(at, 1);
      const container = (
        renderManifests({ namespace: 'prod', clusterId, replicas: 1, founders: 1, image }).find(
          (object) => object.kind === 'StatefulSet' && object.metadata?.name === 'svc',
        ) as Json
      ).spec.template.spec.containers[0];
      // The Secret's Redis, stood in for by a redis-server on this host's loopback with the Secret's password,
      // reached from the container through slirp4netns (10.0.2.2 is the host's loopback there).
      const redisAuth = secrets.find(
        (secret) => secret.metadata.name === deploymentNames({ namespace: 'prod' }).redisAuthSecret,
      );
      const password = Buffer.from(redisAuth.data[SECRET_KEYS.redisPassword], 'base64').toString();
      const [redisPort] = await freePorts(1);
      writeFileSync(path.join(at, 'redis.conf'), `requirepass ${password}\n`, { mode: 0o600 });
      redis = spawn(
        'redis-server',
        [path.join(at, 'redis.conf'), '--port', String(redisPort), '--bind', '127.0.0.1', '--dir', at],
        { stdio: 'ignore' },
      );
      const pod = await startPod({
        at,
        pod: 'svc-0',
        container,
        tls,
        api,
        apiTls,
        redisUrl: `redis://:${password}@10.0.2.2:${redisPort}`,
        network: ['--network', 'slirp4netns:allow_host_loopback=true'],
      });
      await waitReady(pod.name, container.readinessProbe.httpGet.path);
      const text = await stopCleanly(pod.name, 'svc-0');
      assert.match(text, /svc node svc-0: running/, 'the start finished: the API reached its Redis');
      assert.ok(!text.includes(password), 'the Redis password is in no log line');
      assert.ok(existsSync(path.join(pod.data, 'cluster-id')), 'the node wrote its data volume');
    });

    it('three founders elect over their pod DNS names; a fourth pod of the same template joins through the seeds; a founder killed with -9 restarts on its volume', async () => {
      const at = path.join(dir, 'cluster');
      mkdirSync(at);
      const { tls, api, apiTls } = await certsAndSecrets(at, 4);
      // A network whose DNS answers the pods' names under the peers Service, as the cluster's DNS would.
      await run('podman', ['network', 'create', network]);
      networkMade = true;
      const container = nodeContainer(3);
      assert.deepEqual(nodeContainer(4).args, container.args, 'scaling up changes no pod flag');
      // No Redis here: the API's start waits for it, which neither readiness nor a stop waits on.
      const redisUrl = 'redis://:unused@127.0.0.1:1';
      const start = (pod: string) =>
        startPod({
          at,
          pod,
          container,
          tls,
          api,
          apiTls,
          redisUrl,
          network: ['--network', network, '--network-alias', `${pod}.svc-peers.prod.svc.cluster.local`],
        });
      const founders = [await start('svc-0'), await start('svc-1'), await start('svc-2')];
      for (const founder of founders) await waitReady(founder.name, container.readinessProbe.httpGet.path);
      const joiner = await start('svc-3');
      await waitReady(joiner.name, container.readinessProbe.httpGet.path);
      const status = JSON.parse((await httpInside(founders[0]!.name, '/status')).body) as Json;
      const members = (status.members as Json[]).map((member) => `${member.name}:${member.role}`).sort();
      // svc-3 joins as a learner; autopilot promotes it once stable for autopilotStableTicks (it may have by now).
      assert.deepEqual(members.slice(0, 3), ['svc-0:voter', 'svc-1:voter', 'svc-2:voter']);
      assert.match(members[3]!, /^svc-3:(learner|voter)$/);
      const svc3 = (status.members as Json[]).find((member) => member.name === 'svc-3');
      assert.equal(svc3.grpcAddr, `svc-3.svc-peers.prod.svc.cluster.local:${GRPC_PORT}`);

      // The nodes report the package's version (read from /app/package.json in the image) as build_version.
      const version = (JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { version: string })
        .version;
      assert.equal(status.buildVersion, version);
      const { stdout: printed } = await run('podman', [...podman, 'run', '--rm', ...limits, image, '--version']);
      assert.equal(printed, `svc ${version}\n`);

      // A crash of svc-1 (PID 1 in its container) and the container started again on its volume: it reaches
      // /health. With a pid-named lock it refused "in use by process 1" and the pod crash-looped.
      const victim = founders[1]!;
      const { stdout: pid1 } = await run('podman', [
        ...podman,
        'exec',
        victim.name,
        'node',
        '-e',
        "process.stdout.write(require('fs').readFileSync('/proc/1/cmdline'))",
      ]);
      assert.match(pid1, /^node\0\/app\/bin\/svc\.js\0node\0/, "the node is the container's PID 1");
      await run('podman', [...podman, 'kill', '--signal', 'KILL', victim.name]);
      await run('podman', [...podman, 'wait', victim.name]);
      assert.equal(readFileSync(path.join(victim.data, 'LOCK'), 'utf8').split(/\s/)[0], '1', 'its LOCK names pid 1');
      await run('podman', [...podman, 'start', victim.name]);
      await waitReady(victim.name, '/health');
      const logs = await logsOf(victim.name);
      assert.doesNotMatch(logs, /DataDirLockedError|is in use by/);
      for (const [index, pod] of [...founders, joiner].entries()) await stopCleanly(pod.name, `svc-${index}`);
    });
  });
});
