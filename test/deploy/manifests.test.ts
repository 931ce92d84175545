// The Kubernetes manifests (`svc manifests render|secrets`, cli/manifests/) against the code they deploy: each
// object against the Kubernetes OpenAPI schema; the pod's references against the Secrets the manifests make; the
// certificates `svc certs` issues against the peers Service; the node's arguments through the real `svc node`
// parser; the probes against the node's real HTTP server; the RBAC Role against the run backend's API calls; the
// committed example against a fresh render. A real cluster cannot run here: these are what can be checked without.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { loadAll } from 'js-yaml';
import { Redis } from 'ioredis';
import { runCertsCli } from '../../cli/certs/certs-command.js';
import { parseFlags } from '../../cli/flags.js';
import { ADMIN_TARGET_FLAGS } from '../../cli/admin-target.js';
import { NODE_STOP_TIMEOUT_MS } from '../../cli/limits.js';
import {
  apiDnsNames,
  deploymentNames,
  GRPC_PORT,
  HTTP_PORT,
  METRICS_PORT,
  MOUNTS,
  podHost,
  REDIS_CONFIG_KEY,
  SECRET_KEYS,
} from '../../cli/manifests/layout.js';
import { renderOptionsFromArgs, runManifestsCommand, toYaml } from '../../cli/manifests/manifests-command.js';
import {
  LIVENESS_PATH,
  READINESS_PATH,
  renderManifests,
  RUN_BACKEND_RULES,
  TERMINATION_GRACE_SECONDS,
  type ManifestOptions,
} from '../../cli/manifests/render.js';
import { buildSecrets } from '../../cli/manifests/secrets.js';
import { resolveNodeConfig } from '../../cli/node/config.js';
import { NODE_FLAGS, nodeConfigFromFlags } from '../../cli/node-config.js';
import { configFromEnv } from '../../api/config.js';
import { kubernetesSettingsFromEnv } from '../../api/runs/run-backend-config.js';
import { startHttpServer } from '../../transports/node/http-server.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { freePorts } from '../../cli/free-ports.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { schemaProblems } from './kubernetes-schema.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const repo = path.resolve(import.meta.dirname, '../..');
const EXAMPLE = path.join(repo, 'deploy/kubernetes/example/svc.yaml');
const quiet = { write: () => true };

const options: ManifestOptions = {
  namespace: 'prod',
  clusterId: '0123456789abcdef',
  replicas: 3,
  founders: 3,
  image: 'registry.example/svc:0.1.0',
  runImage: 'registry.example/svc-agent:1',
  workspaceClaim: 'svc-workspaces',
};
const names = deploymentNames(options);

/** expand does Kubernetes' $(VAR) expansion of a container's command and args ($$ is a literal $). */
const expand = (text: string, env: Record<string, string>): string =>
  text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name?: string) =>
    name === undefined ? '$' : (env[name] ?? whole),
  );

const byKind = (objects: Json[], kind: string): Json[] => objects.filter((object) => object.kind === kind);
const one = (objects: Json[], kind: string, name: string): Json => {
  const found = objects.filter((object) => object.kind === kind && object.metadata.name === name);
  assert.equal(found.length, 1, `one ${kind} ${name}`);
  return found[0];
};
const decode = (value: string): string => Buffer.from(value, 'base64').toString('utf8');

describe('deploy: Kubernetes manifests', function () {
  this.timeout(120_000);
  let dir: string;
  let certs: string;
  let secrets: Json[];
  let objects: Json[];

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'svc-manifests-'));
    certs = path.join(dir, 'pki');
    // The documented sequence (docs/operations.md): a cluster CA, then each pod's peer certificate with the
    // manifests' peers Service and namespace, one more than the replicas (a planned scale-up).
    assert.equal(await runCertsCli(['ca', '--out', certs], quiet, quiet), 0);
    for (let ordinal = 0; ordinal <= options.replicas; ordinal++) {
      const pod = `${names.statefulSet}-${ordinal}`;
      const args = ['node', '--out', certs, '--name', pod, '--cluster-id', options.clusterId];
      args.push('--peers-service', names.peersService, '--namespace', options.namespace, '--pod', pod);
      assert.equal(await runCertsCli(args, quiet, quiet), 0);
    }
    assert.equal(
      await runCertsCli(['admin', '--out', certs, '--name', 'alice', '--cluster-id', options.clusterId], quiet, quiet),
      0,
    );
    // The HTTP API's certificate, for the names the manifests give it (docs/operations.md).
    const dns = apiDnsNames(names).flatMap((name) => ['--dns', name]);
    assert.equal(await runCertsCli(['api', '--out', certs, ...dns], quiet, quiet), 0);
    secrets = await buildSecrets({ certsDir: certs, namespace: options.namespace, replicas: options.replicas + 1 });
    objects = renderManifests(options) as Json[];
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  const nodeSet = (): Json => one(objects, 'StatefulSet', names.statefulSet);
  const nodeContainer = (): Json => nodeSet().spec.template.spec.containers[0];
  const secret = (name: string): Json => one(secrets, 'Secret', name);

  it('every object, Secrets included, is one the API server admits (OpenAPI schema, strict fields, names)', () => {
    const variants = [
      objects,
      renderManifests({ ...options, runImage: undefined, workspaceClaim: undefined }),
      renderManifests({ ...options, replicas: 5, storageClass: 'fast', name: 'store' }),
      renderManifests({ ...options, backupSchedule: '15 3 * * *', backupClaim: 'svc-backups', backupKeep: 14 }),
      secrets,
    ];
    for (const list of variants) {
      for (const object of list as Json[]) {
        // Through YAML and back, as kubectl reads it.
        const [read] = loadAll(toYaml([object])) as Json[];
        assert.deepEqual(schemaProblems(read), [], `${object.kind} ${object.metadata.name}`);
        assert.equal(read.metadata.namespace, options.namespace, `${object.kind} ${object.metadata.name} namespace`);
      }
    }
    // The check is real: it refuses what the API server refuses.
    const broken = structuredClone(nodeSet());
    broken.spec.template.spec.containers[0].volumeMount = [];
    delete broken.spec.selector;
    broken.spec.podManagementPolicy = 'Whenever';
    const problems = schemaProblems(broken).join('\n');
    assert.match(problems, /unknown field "spec.template.spec.containers\[0\].volumeMount"/);
    assert.match(problems, /required/);
    assert.match(problems, /enum/);
  });

  it('the pod references only Secrets and ConfigMaps the manifests define, and keys they hold', () => {
    const all = [...objects, ...secrets];
    const dataOf = (kind: string, name: string): Record<string, string> => {
      const object = one(all, kind, name);
      return object.data;
    };
    let references = 0;
    for (const set of byKind(objects, 'StatefulSet')) {
      const pod = set.spec.template.spec;
      for (const volume of pod.volumes) {
        const source = volume.secret
          ? dataOf('Secret', volume.secret.secretName)
          : volume.configMap
            ? dataOf('ConfigMap', volume.configMap.name)
            : null;
        if (!source) continue;
        references += 1;
        for (const item of volume.secret?.items ?? volume.configMap?.items ?? [])
          assert.ok(item.key in source, `${volume.name}: key ${item.key}`);
      }
      for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
        for (const variable of container.env ?? []) {
          const ref = variable.valueFrom?.secretKeyRef ?? variable.valueFrom?.configMapKeyRef;
          if (!ref) continue;
          references += 1;
          const kind = variable.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap';
          assert.ok(ref.key in dataOf(kind, ref.name), `${variable.name}: ${kind} ${ref.name} key ${ref.key}`);
        }
        assert.equal(container.envFrom, undefined, 'no envFrom: every variable is named');
      }
    }
    assert.ok(references >= 5, `${references} references checked`);
    // The CA's key and the admin certificate stay with the operator.
    const tlsKeys = Object.keys(secret(names.tlsSecret).data);
    assert.ok(!tlsKeys.includes('ca.key') && !tlsKeys.some((key) => key.startsWith('alice')), tlsKeys.join(' '));
    for (const value of Object.values(secret(names.tlsSecret).data) as string[])
      assert.doesNotMatch(decode(value), /admin\/alice/);
  });

  it('no Secret value appears outside the Secrets: not in the pod spec, a ConfigMap or the rendered YAML', () => {
    const values = secrets.flatMap((object) => Object.values(object.data as Record<string, string>));
    const password = decode(secret(names.redisAuthSecret).data[SECRET_KEYS.redisPassword]);
    const apiKey = decode(secret(names.apiSecret).data[SECRET_KEYS.apiSecretKey]).trim();
    const keyPem = decode(secret(names.tlsSecret).data['svc-0.key']);
    const needles = [password, apiKey, keyPem.split('\n')[1]!, ...values, ...values.map(decode)];
    const rendered = toYaml(objects);
    for (const needle of needles) {
      if (needle.length < 16) continue;
      assert.ok(!rendered.includes(needle), 'a secret value in the rendered manifests');
    }
    assert.equal(password.length, 64);
    assert.ok(decode(secret(names.apiSecret).data[SECRET_KEYS.redisUrl]).includes(`:${password}@`));
    // No env var of any pod carries a literal value that is a secret, nor a flag.
    for (const set of byKind(objects, 'StatefulSet'))
      for (const container of set.spec.template.spec.containers) {
        const words = [...(container.command ?? []), ...(container.args ?? [])].join(' ');
        assert.doesNotMatch(words, /redis:\/\/|requirepass|--api-redis-url|SECRET_KEY=/);
        for (const variable of container.env ?? [])
          assert.ok(!/REDIS_URL|SECRET|PASSWORD/.test(variable.name) || variable.value === undefined, variable.name);
      }
  });

  it("the peers Service is the one the certificate's SANs name: wildcard and per-pod names, for every pod", () => {
    const peers = one(objects, 'Service', names.peersService);
    assert.equal(peers.metadata.namespace, options.namespace);
    assert.equal(peers.spec.clusterIP, 'None', 'headless: a DNS name per pod');
    assert.equal(peers.spec.publishNotReadyAddresses, true, 'peers find each other before any is ready');
    assert.equal(nodeSet().spec.serviceName, peers.metadata.name, "the pods' DNS names hang under it");
    assert.deepEqual(peers.spec.selector, nodeSet().spec.template.metadata.labels);
    for (let ordinal = 0; ordinal <= options.replicas; ordinal++) {
      const pod = `${names.statefulSet}-${ordinal}`;
      const cert = new X509Certificate(readFileSync(path.join(certs, `${pod}.crt`)));
      const sans = cert.subjectAltName!.split(', ');
      assert.ok(sans.includes(`DNS:*.${peers.metadata.name}.${options.namespace}.svc.cluster.local`), sans.join());
      assert.ok(sans.includes(`DNS:${pod}.${peers.metadata.name}.${options.namespace}.svc.cluster.local`));
      // Every address the pods advertise or dial is covered by every pod's certificate.
      for (let other = 0; other <= options.replicas; other++) {
        const host = podHost(names, `${names.statefulSet}-${other}`);
        assert.notEqual(cert.checkHost(host), undefined, `${pod}'s certificate covers ${host}`);
      }
    }
  });

  it("the node's arguments parse with the real `svc node` parser, for founders and a scaled-up pod, to the mounted files", async () => {
    const container = nodeContainer();
    const pod = nodeSet().spec.template.spec;
    const mountOf = (volume: string): string => container.volumeMounts.find((m: Json) => m.name === volume).mountPath;
    const volumeOf = (volume: string): Json => pod.volumes.find((v: Json) => v.name === volume);
    const tlsKeys = Object.keys(secret(volumeOf('tls-pairs').secret.secretName).data);
    // The node container holds its own pair only: the Secret of every pair is the init container's.
    assert.ok(!container.volumeMounts.some((m: Json) => m.name === 'tls-pairs'), 'the node never mounts every pair');
    assert.equal(volumeOf('tls').emptyDir.medium, 'Memory', 'its own pair is kept in memory');
    const init = pod.initContainers.find((c: Json) => c.name === 'own-tls-pair');
    assert.ok(init.volumeMounts.some((m: Json) => m.name === 'tls-pairs' && m.readOnly === true));
    assert.equal(init.volumeMounts.find((m: Json) => m.name === 'tls').mountPath, mountOf('tls'));
    assert.equal(container.args[0], 'node', 'the image runs `svc`; its first argument is the subcommand');
    assert.equal(container.command, undefined, "the image's entrypoint runs (deploy/Containerfile)");
    for (let ordinal = 0; ordinal <= options.replicas; ordinal++) {
      const podName = `${names.statefulSet}-${ordinal}`;
      const args = container.args.map((arg: string) => expand(arg, { POD_NAME: podName }));
      assert.ok(!args.some((arg: string) => arg.includes('$(')), 'every $(VAR) is defined in the env');
      const { values } = parseFlags(args.slice(1), NODE_FLAGS);
      // The pod's plain variables pass the node's schema too (SVC_RUN_BACKEND, SVC_K8S_*, …); REDIS_URL is a Secret's.
      const podEnv = Object.fromEntries(
        container.env
          .filter((v: Json) => v.value !== undefined)
          .map((v: Json) => [v.name, expand(v.value, { POD_NAME: podName })]),
      );
      const config = await nodeConfigFromFlags(values, podEnv);
      const resolved = resolveNodeConfig(config);
      assert.equal(resolved.name, podName);
      assert.equal(resolved.dataDir, mountOf('data'));
      assert.equal(resolved.grpcListenAt.port, GRPC_PORT);
      assert.equal(resolved.httpListenAt.port, HTTP_PORT);
      assert.equal(resolved.grpcAdvertise, `${podHost(names, podName)}:${GRPC_PORT}`);
      assert.equal(resolved.clusterId, options.clusterId);
      assert.ok(resolved.tls.mode === 'mtls');
      for (const file of [resolved.tls.caFile, resolved.tls.certFile, resolved.tls.keyFile]) {
        assert.equal(path.dirname(file), mountOf('tls'), file);
        assert.ok(tlsKeys.includes(path.basename(file)), `${file} is a key of the TLS Secret`);
      }
      assert.equal(path.basename(resolved.tls.certFile), `${podName}.crt`, 'each node its own pair');
      // HTTPS with the API TLS Secret's pair; /metrics on its own port.
      assert.equal(resolved.httpAdvertise, `https://${podHost(names, podName)}:${HTTP_PORT}`);
      assert.ok(resolved.httpTls?.mode === 'https');
      const apiTls = volumeOf('api-tls').secret;
      assert.equal(apiTls.secretName, names.apiTlsSecret);
      assert.equal(resolved.httpTls.certFile, path.join(mountOf('api-tls'), SECRET_KEYS.tlsCert));
      assert.equal(resolved.httpTls.keyFile, path.join(mountOf('api-tls'), SECRET_KEYS.tlsKey));
      assert.equal(resolved.metricsListenAt.port, METRICS_PORT);
      assert.ok(resolved.bootstrap!.every((member) => member.httpAddr.startsWith('https://')) || ordinal >= 3);
      const keyVolume = volumeOf('api-secret').secret;
      assert.equal(resolved.api?.secretKeyFile, path.join(mountOf('api-secret'), keyVolume.items[0].path));
      assert.equal(resolved.api?.localRedis, false, 'a missing REDIS_URL never starts a Redis of one pod');
      assert.equal(resolved.api?.redisUrl, undefined, 'the Redis URL comes from the environment (a Secret)');
      assert.equal(resolved.api?.runBackend, 'kubernetes', "the pod's SVC_RUN_BACKEND, through the schema");
      if (ordinal < options.replicas) {
        assert.deepEqual(
          resolved.bootstrap!.map((member) => member.name),
          ['svc-0', 'svc-1', 'svc-2'],
          'a founder',
        );
      } else {
        assert.deepEqual(resolved.bootstrap, [], 'a pod beyond the founders joins');
        assert.deepEqual(
          resolved.seeds,
          [0, 1, 2].map((n) => `${podHost(names, `svc-${n}`)}:${GRPC_PORT}`),
        );
      }
    }
    // The API's and the run backend's settings, read by their real readers from the pod's plain env.
    const env = Object.fromEntries(
      container.env.filter((v: Json) => v.value !== undefined).map((v: Json) => [v.name, v.value]),
    );
    const api = configFromEnv(env);
    assert.equal(api.runBackend, 'kubernetes');
    const runs = kubernetesSettingsFromEnv(env, api.workspaceRoot);
    assert.equal(runs.namespace, options.namespace);
    assert.equal(runs.workspaceClaim, options.workspaceClaim);
    assert.equal(mountOf('workspaces'), api.workspaceRoot, 'the node sees the workspaces where runs mount them');
    const plain = renderManifests({ ...options, runImage: undefined, workspaceClaim: undefined }) as Json[];
    const plainSet = one(plain, 'StatefulSet', names.statefulSet);
    assert.equal(plainSet.spec.template.spec.automountServiceAccountToken, false, 'no API token without runs');
    assert.equal(byKind(plain, 'Role').length, 0);
  });

  it("the probes ask the node's real HTTP server: readiness on /ready, liveness on a path that holds through an election", async () => {
    const container = nodeContainer();
    assert.equal(container.readinessProbe.httpGet.path, READINESS_PATH);
    assert.equal(container.livenessProbe.httpGet.path, LIVENESS_PATH);
    const httpPort = container.ports.find((port: Json) => port.name === container.readinessProbe.httpGet.port);
    assert.equal(httpPort.containerPort, HTTP_PORT);
    assert.equal(container.livenessProbe.httpGet.port, 'http');
    assert.equal(container.startupProbe.httpGet.port, 'http');
    let leader: string | null = null;
    // The node's real HTTPS listener with the API TLS Secret's pair; the kubelet does not check the certificate.
    const apiTls = secret(names.apiTlsSecret).data;
    const server = await startHttpServer({
      host: '127.0.0.1',
      port: 0,
      role: 'api',
      surface: {
        health: () => null,
        ready: () => (leader === null ? 'no leader known' : null),
        status: () => ({ role: leader === null ? 'candidate' : 'follower' }) as unknown as NodeStatusDocument,
        metrics: async () => null,
      },
      requestTimeoutMs: 5_000,
      onError: () => undefined,
      tls: {
        cert: Buffer.from(apiTls[SECRET_KEYS.tlsCert], 'base64'),
        key: Buffer.from(apiTls[SECRET_KEYS.tlsKey], 'base64'),
      },
    });
    const kubelet = new Agent({ connect: { rejectUnauthorized: false } });
    try {
      const get = async (probe: Json) => {
        assert.equal(probe.httpGet.scheme, 'HTTPS');
        const url = `https://127.0.0.1:${server.port}${probe.httpGet.path}`;
        return (await undiciFetch(url, { dispatcher: kubelet, signal: AbortSignal.timeout(5000) })).status;
      };
      // During an election: out of the client Service, but alive.
      assert.equal(await get(container.readinessProbe), 503);
      assert.equal(await get(container.livenessProbe), 200);
      assert.equal(await get(container.startupProbe), 200);
      leader = 'svc-1';
      assert.equal(await get(container.readinessProbe), 200);
    } finally {
      await server.close();
      await kubelet.close();
    }
  });

  it("the init container gives each pod its own TLS pair and nothing of its peers' (its command, run here)", async () => {
    const pod = nodeSet().spec.template.spec;
    const init = pod.initContainers.find((c: Json) => c.name === 'own-tls-pair');
    const mountOf = (volume: string): string => init.volumeMounts.find((m: Json) => m.name === volume).mountPath;
    const tlsSecret = secret(pod.volumes.find((v: Json) => v.name === 'tls-pairs').secret.secretName);
    const at = mkdtempSync(path.join(dir, 'own-pair-'));
    const pairs = path.join(at, 'pairs');
    mkdirSync(pairs);
    for (const [key, value] of Object.entries(tlsSecret.data as Record<string, string>))
      writeFileSync(path.join(pairs, key), Buffer.from(value, 'base64'));
    /** runInit runs the container's command as the kubelet would, the mounts moved under `at`. */
    const runInit = async (podName: string, own: string): Promise<{ code: number | null; stderr: string }> => {
      mkdirSync(own);
      const command = (init.command as string[]).map((arg) =>
        expand(arg, { POD_NAME: podName }).replace(mountOf('tls-pairs'), pairs).replace(mountOf('tls'), own),
      );
      assert.equal(command[0], 'node');
      const child = spawn(process.execPath, command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stderr };
    };
    const own = path.join(at, 'svc-1');
    assert.deepEqual(await runInit('svc-1', own), { code: 0, stderr: '' });
    assert.deepEqual(readdirSync(own).sort(), ['ca.crt', 'svc-1.crt', 'svc-1.key']);
    for (const file of readdirSync(own)) {
      assert.equal(statSync(path.join(own, file)).mode & 0o777, 0o400, file);
      assert.deepEqual(readFileSync(path.join(own, file)), readFileSync(path.join(pairs, file)), file);
    }
    const missing = await runInit('svc-9', path.join(at, 'svc-9'));
    assert.equal(missing.code, 1, 'a pod with no pair in the Secret fails before its node starts');
    assert.match(missing.stderr, /the TLS Secret holds no svc-9\.crt: issue the pod a certificate/);
    const traversal = await runInit('../svc-1', path.join(at, 'bad'));
    assert.equal(traversal.code, 2, 'a pod name is a DNS label');
  });

  it("the pods are locked down, spread, budgeted and given the node's stop grace", () => {
    const set = nodeSet();
    const pod = set.spec.template.spec;
    assert.equal(set.spec.podManagementPolicy, 'Parallel', 'founders must start together to elect');
    assert.ok(TERMINATION_GRACE_SECONDS * 1000 > NODE_STOP_TIMEOUT_MS);
    assert.equal(pod.terminationGracePeriodSeconds, TERMINATION_GRACE_SECONDS);
    assert.equal(set.spec.volumeClaimTemplates[0].metadata.name, 'data');
    for (const s of byKind(objects, 'StatefulSet')) {
      const spec = s.spec.template.spec;
      assert.equal(spec.securityContext.runAsNonRoot, true);
      assert.ok(spec.securityContext.runAsUser > 0);
      for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
        assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'] });
        assert.equal(c.securityContext.readOnlyRootFilesystem, true);
        assert.equal(c.securityContext.allowPrivilegeEscalation, false);
        assert.ok(c.resources.requests.memory && c.resources.limits.memory && c.resources.limits.cpu);
      }
    }
    const budget = one(objects, 'PodDisruptionBudget', names.statefulSet);
    assert.equal(budget.spec.maxUnavailable, 1);
    assert.deepEqual(budget.spec.selector.matchLabels, set.spec.selector.matchLabels);
  });

  it('Redis: the password only in a Secret file it includes, noeviction and appendonly, reachable from the nodes alone', async () => {
    const redisSet = one(objects, 'StatefulSet', names.redis);
    const container = redisSet.spec.template.spec.containers[0];
    const config = one(objects, 'ConfigMap', names.redisConfigMap).data[REDIS_CONFIG_KEY] as string;
    assert.match(config, /^maxmemory-policy noeviction$/m);
    assert.match(config, /^appendonly yes$/m);
    const include = /^include (.+)$/m.exec(config)![1]!;
    const authVolume = redisSet.spec.template.spec.volumes.find((v: Json) => v.secret);
    const authMount = container.volumeMounts.find((m: Json) => m.name === authVolume.name);
    assert.equal(include, path.join(authMount.mountPath, authVolume.secret.items[0].path));
    assert.equal(authVolume.secret.secretName, names.redisAuthSecret);
    assert.deepEqual(container.command, ['redis-server', `${MOUNTS.redisConfig}/${REDIS_CONFIG_KEY}`]);
    assert.equal(container.env, undefined, 'no password in the environment either');
    // The redis URL the nodes get names this Service.
    const url = new URL(decode(secret(names.apiSecret).data[SECRET_KEYS.redisUrl]));
    const service = one(objects, 'Service', names.redis);
    assert.equal(url.hostname, `${service.metadata.name}.${options.namespace}.svc.cluster.local`);
    assert.equal(Number(url.port), service.spec.ports[0].port);
    // NetworkPolicies: Redis from the nodes only; the peer port from the nodes only.
    const nodeLabels = nodeSet().spec.template.metadata.labels;
    const redisPolicy = one(objects, 'NetworkPolicy', names.redis);
    assert.deepEqual(redisPolicy.spec.podSelector.matchLabels, redisSet.spec.template.metadata.labels);
    assert.deepEqual(redisPolicy.spec.ingress, [
      { from: [{ podSelector: { matchLabels: nodeLabels } }], ports: [{ protocol: 'TCP', port: Number(url.port) }] },
    ]);
    const nodePolicy = one(objects, 'NetworkPolicy', names.statefulSet);
    const grpcRules = nodePolicy.spec.ingress.filter((rule: Json) =>
      rule.ports.some((port: Json) => port.port === GRPC_PORT),
    );
    assert.deepEqual(grpcRules, [
      { from: [{ podSelector: { matchLabels: nodeLabels } }], ports: [{ protocol: 'TCP', port: GRPC_PORT }] },
    ]);

    // The rendered configuration, run by a real redis-server (paths moved into a temp dir, loopback only).
    const authFile = path.join(dir, 'auth.conf');
    writeFileSync(authFile, decode(secret(names.redisAuthSecret).data[SECRET_KEYS.redisAuthConf]), { mode: 0o600 });
    const conf = config.replace(/^include .+$/m, `include ${authFile}`).replace(/^dir .+$/m, `dir ${dir}`);
    writeFileSync(path.join(dir, 'redis.conf'), conf);
    const [port] = await freePorts(1);
    const child = spawn('redis-server', [path.join(dir, 'redis.conf'), '--port', String(port), '--bind', '127.0.0.1'], {
      stdio: 'ignore',
    });
    const password = decode(secret(names.redisAuthSecret).data[SECRET_KEYS.redisPassword]);
    const anonymous = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    const authed = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, maxRetriesPerRequest: 0 });
    // Refused connections while it starts, and the anonymous client's refusals, are expected here.
    anonymous.on('error', () => undefined);
    authed.on('error', () => undefined);
    try {
      let connected = false;
      for (let attempt = 0; attempt < 100 && !connected; attempt++) {
        connected = await authed.connect().then(
          () => true,
          async () => {
            authed.disconnect();
            await new Promise((resolve) => setTimeout(resolve, 100));
            return false;
          },
        );
      }
      assert.ok(connected, 'redis-server started on the rendered configuration');
      assert.deepEqual(await authed.config('GET', 'maxmemory-policy'), ['maxmemory-policy', 'noeviction']);
      assert.deepEqual(await authed.config('GET', 'appendonly'), ['appendonly', 'yes']);
      await anonymous.connect().catch(() => undefined);
      await assert.rejects(anonymous.ping(), /NOAUTH/);
    } finally {
      anonymous.disconnect();
      authed.disconnect();
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  });

  it('the Role grants exactly the Kubernetes API calls of the run backend (api/runs/kubernetes-backend.ts, its sweep)', () => {
    const source = ['api/runs/kubernetes-backend.ts', 'api/runs/kubernetes-sweep.ts']
      .map((file) => readFileSync(path.join(repo, file), 'utf8'))
      .join('\n');
    const groups: Record<string, string> = { BatchV1Api: 'batch', CoreV1Api: '', NetworkingV1Api: 'networking.k8s.io' };
    const fieldGroup = new Map<string, string>();
    for (const match of source.matchAll(/(\w+): (\w+V1Api)\b/g)) {
      assert.ok(match[2]! in groups, `an API class the test knows: ${match[2]}`);
      fieldGroup.set(match[1]!, groups[match[2]!]!);
    }
    const verbs: Record<string, string> = { create: 'create', delete: 'delete', read: 'get', list: 'list' };
    Object.assign(verbs, { patch: 'patch', replace: 'update', deleteCollection: 'deletecollection' });
    const plural = (kind: string): string =>
      kind === 'PodLog' ? 'pods/log' : kind.toLowerCase().replace(/y$/, 'ie') + 's';
    const called = new Set<string>();
    for (const match of source.matchAll(/(?:this|clients)\.(\w+)\.(\w+?)Namespaced(\w+)\(/g)) {
      const group = fieldGroup.get(match[1]!);
      assert.ok(group !== undefined, `a client field the test knows: ${match[1]}`);
      assert.ok(match[2]! in verbs, `a verb the test knows: ${match[2]}`);
      called.add(`${group}/${plural(match[3]!)}:${verbs[match[2]!]}`);
    }
    // The Watch helper GETs with ?watch=true on the path it is given; the Log helper reads pods/log.
    for (const match of source.matchAll(/\/api\/v1\/namespaces\/\$\{[^}]+\}\/(\w+)`/g))
      called.add(`/${match[1]}:watch`);
    if (/new Log\(/.test(source)) called.add('/pods/log:get');
    const granted = new Set(
      RUN_BACKEND_RULES.flatMap((rule) => rule.verbs.map((verb) => `${rule.apiGroup}/${rule.resource}:${verb}`)),
    );
    assert.ok(called.size >= 6, [...called].join(' '));
    for (const call of called) assert.ok(granted.has(call), `the Role lacks ${call}`);
    for (const grant of granted)
      assert.ok(called.has(grant), `the Role grants ${grant}, which the backend never calls`);
    const role = one(objects, 'Role', `${names.statefulSet}-runs`);
    assert.deepEqual(
      new Set(
        role.rules.flatMap((rule: Json) =>
          rule.verbs.map((verb: string) => `${rule.apiGroups[0]}/${rule.resources[0]}:${verb}`),
        ),
      ),
      granted,
    );
    const binding = one(objects, 'RoleBinding', `${names.statefulSet}-runs`);
    assert.equal(binding.roleRef.name, role.metadata.name);
    assert.deepEqual(binding.subjects, [
      { kind: 'ServiceAccount', name: nodeSet().spec.template.spec.serviceAccountName, namespace: options.namespace },
    ]);
  });

  it('the client Service speaks HTTPS to the HTTP port only; /metrics is on its own port, open to the monitoring namespace alone', () => {
    const client = one(objects, 'Service', names.clientService);
    assert.deepEqual(client.spec.ports, [{ name: 'https', port: 443, targetPort: 'http', protocol: 'TCP' }]);
    const container = nodeContainer();
    assert.equal(container.ports.find((port: Json) => port.name === 'metrics').containerPort, METRICS_PORT);
    const peers = one(objects, 'Service', names.peersService);
    assert.ok(peers.spec.ports.some((port: Json) => port.name === 'metrics' && port.port === METRICS_PORT));
    const rules = one(objects, 'NetworkPolicy', names.statefulSet).spec.ingress.filter((rule: Json) =>
      rule.ports.some((port: Json) => port.port === METRICS_PORT),
    );
    assert.deepEqual(rules, [
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
        ports: [{ protocol: 'TCP', port: METRICS_PORT }],
      },
    ]);
    // The API TLS Secret: a kubernetes.io/tls pair from the cluster CA covering the client Service and the pods.
    const apiTls = secret(names.apiTlsSecret);
    assert.equal(apiTls.type, 'kubernetes.io/tls');
    const cert = new X509Certificate(Buffer.from(apiTls.data[SECRET_KEYS.tlsCert], 'base64'));
    assert.ok(cert.checkIssued(new X509Certificate(readFileSync(path.join(certs, 'ca.crt')))));
    for (const host of [`${names.clientService}.${options.namespace}.svc.cluster.local`, podHost(names, 'svc-2')])
      assert.notEqual(cert.checkHost(host), undefined, host);
  });

  it('with --api-tls cert-manager: a Certificate writes the API TLS Secret, and svc manifests secrets leaves it out', async () => {
    const rendered = renderManifests({
      ...options,
      apiTls: 'cert-manager',
      certManagerIssuer: 'ClusterIssuer/internal-ca',
    }) as Json[];
    const certificate = one(rendered, 'Certificate', names.apiTlsSecret);
    assert.equal(certificate.apiVersion, 'cert-manager.io/v1');
    assert.equal(certificate.spec.secretName, names.apiTlsSecret);
    assert.deepEqual(certificate.spec.dnsNames, apiDnsNames(names));
    assert.deepEqual(certificate.spec.issuerRef, {
      kind: 'ClusterIssuer',
      name: 'internal-ca',
      group: 'cert-manager.io',
    });
    assert.throws(() => renderManifests({ ...options, apiTls: 'cert-manager' }), /needs a cert-manager issuer/);
    const without = await buildSecrets({
      certsDir: certs,
      namespace: options.namespace,
      replicas: options.replicas,
      apiTls: 'cert-manager',
    });
    assert.deepEqual(
      without.map((object) => object.metadata!.name),
      [names.tlsSecret, names.apiSecret, names.redisAuthSecret],
    );
  });

  it('the committed example is what its header command renders now', async () => {
    const text = readFileSync(EXAMPLE, 'utf8');
    const header = /^# svc manifests render (.+)$/m.exec(text);
    assert.ok(header, 'the example names the command that made it');
    const args = header[1]!.split(/\s+/);
    const exampleOptions = renderOptionsFromArgs(args);
    assert.notEqual(exampleOptions, 'help');
    const fresh = renderManifests(exampleOptions as ManifestOptions);
    assert.deepEqual(loadAll(text), JSON.parse(JSON.stringify(fresh)), 'regenerate it: make manifests-example');
  });

  it('the backup CronJob runs the real `svc backup` with the backup admin Secret into the claim, and may reach the peer port', async () => {
    assert.ok(!objects.some((o) => o.kind === 'CronJob'), 'no CronJob unless a schedule is given');
    const argv = ['--backup-schedule', '@daily', '--backup-claim', 'svc-backups', '--backup-keep', '14'];
    const withBackup = renderManifests(
      renderOptionsFromArgs([
        ...['--namespace', options.namespace, '--cluster-id', options.clusterId, '--image', options.image],
        ...['--founders', '3', ...argv],
      ]) as ManifestOptions,
    ) as Json[];
    const cron = one(withBackup, 'CronJob', names.backup);
    const [read] = loadAll(toYaml([cron])) as Json[];
    assert.deepEqual(schemaProblems(read), []);
    const broken = structuredClone(cron);
    broken.spec.jobTemplate.spec.template.spec.restartPolicy = 'Always';
    broken.spec.jobTemplate.spec.template.spec.containers[0].volumeMount = [];
    delete broken.spec.schedule;
    const problems = schemaProblems(broken).join('\n');
    assert.match(problems, /restartPolicy must be Never or OnFailure/);
    assert.match(problems, /unknown field "spec.jobTemplate.spec.template.spec.containers\[0\].volumeMount"/);
    assert.match(problems, /required/, 'the schema check of a CronJob is real');
    assert.equal(cron.spec.schedule, '@daily');
    assert.equal(cron.spec.concurrencyPolicy, 'Forbid');
    const pod = cron.spec.jobTemplate.spec.template.spec;
    const container = pod.containers[0];
    assert.equal(container.image, options.image);
    const volume = (name: string): Json => pod.volumes.find((v: Json) => v.name === name);
    const mount = (name: string): string => container.volumeMounts.find((m: Json) => m.name === name).mountPath;
    assert.equal(volume('backups').persistentVolumeClaim.claimName, 'svc-backups');
    // Its arguments parse with the backup command's own flags, and name files the Secret it mounts holds.
    assert.equal(container.args[0], 'backup');
    const { values } = parseFlags(container.args.slice(1), {
      ...ADMIN_TARGET_FLAGS,
      'out-dir': { type: 'string' },
      keep: { type: 'string' },
    });
    assert.equal(values['out-dir'], mount('backups'));
    assert.equal(values.keep, '14');
    assert.deepEqual(
      values.node,
      [0, 1, 2].map((i) => `svc-${i}.svc-peers.prod.svc.cluster.local:7000`),
    );
    const adminCerts = path.join(dir, 'backup-pki');
    assert.equal(await runCertsCli(['ca', '--out', adminCerts], quiet, quiet), 0);
    for (let ordinal = 0; ordinal < 3; ordinal++) {
      const podName = `svc-${ordinal}`;
      const args = ['node', '--out', adminCerts, '--name', podName, '--cluster-id', options.clusterId];
      args.push('--peers-service', names.peersService, '--namespace', options.namespace, '--pod', podName);
      assert.equal(await runCertsCli(args, quiet, quiet), 0);
    }
    const adminArgs = ['admin', '--out', adminCerts, '--name', 'backup', '--cluster-id', options.clusterId];
    assert.equal(await runCertsCli(adminArgs, quiet, quiet), 0);
    const withAdmin = await buildSecrets({
      certsDir: adminCerts,
      namespace: options.namespace,
      replicas: 3,
      backupAdmin: 'backup',
      // This directory holds no API certificate (svc certs api): the API's TLS is not what this test is about.
      apiTls: 'cert-manager',
    });
    const adminSecret = one(withAdmin, 'Secret', volume('backup-admin').secret.secretName);
    assert.deepEqual(schemaProblems(adminSecret), []);
    for (const flag of ['tls-ca', 'tls-cert', 'tls-key']) {
      const file = values[flag] as string;
      assert.equal(path.dirname(file), mount('backup-admin'), flag);
      assert.ok(path.basename(file) in adminSecret.data, `${flag}: the Secret holds ${path.basename(file)}`);
    }
    assert.match(decode(adminSecret.data['admin.crt']), /BEGIN CERTIFICATE/);
    // A peer certificate is refused as the backup's: the Admin service takes admin certificates only.
    await assert.rejects(
      buildSecrets({
        certsDir: adminCerts,
        namespace: options.namespace,
        replicas: 3,
        backupAdmin: 'svc-0',
        apiTls: 'cert-manager',
      }),
      /is a peer certificate/,
    );
    // The nodes' NetworkPolicy lets the backup pods (and the nodes) reach the peer port, nothing else.
    const policy = one(withBackup, 'NetworkPolicy', names.statefulSet);
    const peerRule = policy.spec.ingress.find((rule: Json) => rule.ports[0].port === 7000);
    assert.deepEqual(
      peerRule.from.map((f: Json) => f.podSelector.matchLabels['app.kubernetes.io/component']),
      ['node', 'backup'],
    );
    assert.deepEqual(cron.spec.jobTemplate.spec.template.metadata.labels['app.kubernetes.io/component'], 'backup');
    const io = { out: quiet, err: quiet };
    const base = ['render', '--namespace', 'prod', '--cluster-id', 'c1', '--image', 'r/svc:1', '--founders', '3'];
    await assert.rejects(runManifestsCommand([...base, '--backup-schedule', '@daily'], io), /needs a backup claim/);
    await assert.rejects(runManifestsCommand([...base, '--backup-claim', 'b'], io), /need a backup schedule/);
    await assert.rejects(
      runManifestsCommand([...base, '--backup-schedule', 'soon', '--backup-claim', 'b'], io),
      /not a cron schedule/,
    );
  });

  it('render refuses what would found a second roster or make objects the API server refuses', async () => {
    const io = { out: quiet, err: quiet };
    const base = ['render', '--namespace', 'prod', '--cluster-id', 'c1', '--image', 'r/svc:1'];
    await assert.rejects(runManifestsCommand(base, io), /needs --founders/);
    await assert.rejects(runManifestsCommand([...base, '--founders', '4', '--replicas', '3'], io), /founders must be/);
    await assert.rejects(runManifestsCommand([...base, '--founders', '3', '--namespace', 'Prod'], io), /DNS label/);
    await assert.rejects(runManifestsCommand([...base, '--founders', '3', '--data-size', 'lots'], io), /quantity/);
    await assert.rejects(
      runManifestsCommand([...base, '--founders', '3', '--workspace-claim', 'ws'], io),
      /need --run-image/,
    );
    const printed: string[] = [];
    const ok = await runManifestsCommand([...base, '--founders', '3'], {
      out: { write: (t: string) => printed.push(t) },
      err: quiet,
    });
    assert.equal(ok, 0);
    assert.equal(
      (loadAll(printed.join('')) as Json[]).find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'svc').spec
        .replicas,
      3,
      'replicas default to the founders',
    );
  });

  it('svc manifests secrets writes a 0600 file, never overwrites it, and refuses certificates of another deployment', async () => {
    const out = path.join(dir, 'secrets.yaml');
    const stdout: string[] = [];
    const io = { out: { write: (text: string) => stdout.push(text) }, err: quiet };
    const args = ['secrets', '--certs', certs, '--namespace', options.namespace, '--out', out];
    assert.equal(await runManifestsCommand(args, io), 0);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    assert.equal(stdout.join(''), '', 'no secret value on stdout');
    const first = readFileSync(out, 'utf8');
    await assert.rejects(runManifestsCommand(args, io), /exists; pass --force/);
    assert.equal(await runManifestsCommand([...args, '--force'], io), 0);
    assert.equal(readFileSync(out, 'utf8'), first, 'the API key and Redis password are made once and kept');
    assert.equal(statSync(path.join(certs, 'api-secret-key')).mode & 0o777, 0o600);
    await assert.rejects(
      buildSecrets({ certsDir: certs, namespace: 'staging', replicas: 3 }),
      /does not cover svc-0\.svc-peers\.staging\.svc\.cluster\.local/,
    );
    await assert.rejects(
      buildSecrets({ certsDir: certs, namespace: 'prod', replicas: 3, clusterId: 'fedcba9876543210' }),
      /names cluster 0123456789abcdef, not fedcba9876543210/,
    );
    await assert.rejects(
      buildSecrets({ certsDir: certs, namespace: 'prod', replicas: 9 }),
      /cannot read svc-4's certificate/,
    );
  });
});
