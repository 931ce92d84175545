// Every environment variable the developer API reads, declared once: its kind, default and doc, and the key a
// node's config file holds it under (`api.<key>`, cli/node/config-schema.ts). The API's readers (config.ts,
// server.ts, runs/run-backend-config.ts, images/generator-config.ts) read them through envSetting, so a bad value
// is refused naming the variable, and `svc node` folds the same declarations into its schema.
import { rateLimitPerSecondDefault, runTmpBytesMaxKubernetes } from './limits.js';
import { imageServiceTimeoutMsDefault } from './albums/limits.js';
import { gptImageQualities, imageServiceKinds } from './images/image-service-contracts.js';
import { runBackendNames } from './runs/run-backend.js';
import { parseRange } from './auth/ip-allowlist.js';
import { parseDenyEntry } from './runs/egress-deny-entry.js';
import { parseEgressRule } from './runs/egress-filter.js';
import {
  list,
  matching,
  onOff,
  oneOf,
  positiveInteger,
  succeeds,
  text,
  wholeNumber,
  type SettingKind,
} from './setting-types.js';

export interface EnvSetting {
  /** env is the variable's name. */
  env: string;
  /** key is the setting's place under a node config file's `api` section (absent: the standalone server only). */
  key?: string;
  kind: SettingKind;
  /** fallback is the value when the variable is unset or empty; defaultText says it when it is not a constant. */
  fallback?: unknown;
  defaultText?: string;
  doc: string;
  /** secret: the value is never echoed in a message or printed (`svc node --print-config` masks it). */
  secret?: boolean;
  /** path: a file or directory (relative in a config file: to the file). */
  path?: boolean;
}

/** UID_MAX: the largest POSIX uid/gid (2^31 - 1). */
const UID_MAX = 2 ** 31 - 1;
const SECRET_KEY_TEXT = /^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}={0,1})$/;
const REDIS_URL_TEXT = /^(redis|rediss|redis\+sentinel):\/\/\S+$/;
const CPU_QUANTITY = /^(\d+(\.\d+)?|\d+m)$/;

/** API_ENV_SETTINGS, in the order the docs list them. */
export const API_ENV_SETTINGS: readonly EnvSetting[] = [
  {
    env: 'REDIS_URL',
    key: 'redisUrl',
    kind: matching(REDIS_URL_TEXT, 'a redis://, rediss:// or redis+sentinel://host:port[,host:port…]/<primary> URL'),
    defaultText: 'a redis-server of this node alone under dataDir/api-redis when one is on the PATH, else none',
    doc: 'the Redis of queues, run events and the cluster-wide rate limit; every node of a cluster needs the same',
    secret: true,
  },
  {
    env: 'SVC_SECRET_KEY_FILE',
    key: 'secretKeyFile',
    kind: text('a file path'),
    doc: 'the file holding the 32-byte credential key (64 hex digits or base64); it wins over SVC_SECRET_KEY',
    defaultText: 'none: credential endpoints answer 503',
    path: true,
  },
  {
    env: 'SVC_SECRET_KEY',
    key: 'secretKey',
    kind: matching(SECRET_KEY_TEXT, '32 bytes as 64 hex digits or base64'),
    doc: 'the 32-byte credential key itself (prefer the file: a variable shows in the process environment)',
    defaultText: 'none',
    secret: true,
  },
  {
    env: 'SVC_RATE_LIMIT_RPS',
    key: 'rateLimitPerSecond',
    kind: wholeNumber(1, 1_000_000),
    fallback: rateLimitPerSecondDefault,
    doc: 'requests per second per API key, cluster-wide through the shared Redis',
  },
  {
    env: 'SVC_TRUSTED_PROXIES',
    key: 'trustedProxies',
    kind: list('IP or CIDR', succeeds(parseRange)),
    fallback: [],
    doc: 'peers whose X-Forwarded-For is believed (read right to left, skipping them)',
  },
  {
    env: 'SVC_WORKSPACE_ROOT',
    key: 'workspaceRoot',
    kind: text('a directory path'),
    defaultText: 'none: any absolute workspace',
    doc: 'project workspaces must be inside it',
    path: true,
  },
  {
    env: 'SVC_ACCESS_LOG',
    key: 'accessLog',
    kind: onOff(),
    fallback: false,
    doc: 'one `request` log line per answer: method, path without query, status, duration, request id, key id',
  },
  {
    env: 'SVC_RUN_BACKEND',
    key: 'runBackend',
    kind: oneOf(runBackendNames),
    fallback: 'bubblewrap',
    doc: 'where agent runs go: `bubblewrap` on the worker host, or `kubernetes`, one Job per run (api.kubernetes.*)',
  },
  {
    env: 'SVC_RUN_WORKER',
    key: 'runWorker',
    kind: onOff(),
    fallback: true,
    doc: 'this process runs agent runs (0/false: leave them to worker processes elsewhere)',
  },
  {
    env: 'SVC_ALBUM_WORKER',
    key: 'albumWorker',
    kind: onOff(),
    fallback: true,
    doc: 'this process runs album jobs (0/false: leave them to other processes)',
  },
  {
    env: 'SVC_RUN_EGRESS_ALLOW',
    key: 'runEgressAllow',
    kind: list('ip[/len][:port]', succeeds(parseEgressRule)),
    fallback: [],
    doc: "destinations networked runs may reach past the standing denials; never the members' ports or Redis's",
  },
  {
    env: 'SVC_RUN_EGRESS_DENY',
    key: 'runEgressDeny',
    kind: list('ip[/len][:port] or name[:port]', succeeds(parseDenyEntry)),
    fallback: [],
    doc: "more destinations no run may reach (names resolved at each networked run's start)",
  },
  {
    env: 'SVC_IMAGE_GENERATOR',
    key: 'images.generator',
    kind: oneOf(['builtin', 'openai']),
    fallback: 'builtin',
    doc: 'the album image generator: `builtin` (procedural) or `openai` (an HTTP image service, api.images.*)',
  },
  {
    env: 'SVC_IMAGE_API_URL',
    key: 'images.apiUrl',
    kind: matching(/^https?:\/\/\S+$/, 'an http(s) URL'),
    defaultText: 'none (needed by `openai`)',
    doc: 'the image service root, without /v1',
  },
  {
    env: 'SVC_IMAGE_API_KEY_FILE',
    key: 'images.apiKeyFile',
    kind: text('a file path'),
    defaultText: 'none',
    doc: "the file holding the image service's key (sent as Authorization: Bearer); it wins over SVC_IMAGE_API_KEY",
    path: true,
  },
  {
    env: 'SVC_IMAGE_API_KEY',
    key: 'images.apiKey',
    kind: text('a key'),
    defaultText: 'none',
    doc: "the image service's key itself",
    secret: true,
  },
  {
    env: 'SVC_IMAGE_SERVICE',
    key: 'images.service',
    kind: oneOf(imageServiceKinds),
    fallback: 'openai',
    doc: 'whose contract to follow: `openai` (GPT image models) or `localai` (LocalAI, Stable Diffusion)',
  },
  {
    env: 'SVC_IMAGE_MODEL',
    key: 'images.model',
    kind: text('a model name'),
    defaultText: '`gpt-image-1` (`stablediffusion` for localai)',
    doc: 'the `model` field of image requests',
  },
  {
    env: 'SVC_IMAGE_EDIT_MODEL',
    key: 'images.editModel',
    kind: text('a model name'),
    defaultText: 'the model',
    doc: 'the model that draws shots from the anchor (LocalAI: image-to-image)',
  },
  {
    env: 'SVC_IMAGE_QUALITY',
    key: 'images.quality',
    kind: oneOf(gptImageQualities),
    defaultText: '`auto` (the service decides)',
    doc: "gpt-image-1's `quality`",
  },
  {
    env: 'SVC_IMAGE_TIMEOUT_MS',
    key: 'images.timeoutMs',
    kind: positiveInteger(),
    fallback: imageServiceTimeoutMsDefault,
    doc: "one image service call's limit",
  },
  {
    env: 'SVC_K8S_RUN_IMAGE',
    key: 'kubernetes.runImage',
    kind: text('a container image'),
    defaultText: 'none (needed by the `kubernetes` backend)',
    doc: "the container image of runs, with the agents' tools",
  },
  {
    env: 'SVC_K8S_NAMESPACE',
    key: 'kubernetes.namespace',
    kind: text('a namespace'),
    defaultText: "this pod's namespace in a cluster, else `default`",
    doc: 'where run Jobs are created',
  },
  {
    env: 'SVC_K8S_WORKSPACE_CLAIM',
    key: 'kubernetes.workspaceClaim',
    kind: text('a PersistentVolumeClaim name'),
    defaultText: 'none: hostPath volumes (single-node development clusters only)',
    doc: 'a ReadWriteMany claim holding the workspaces under api.workspaceRoot',
  },
  {
    env: 'SVC_K8S_RUN_CPU',
    key: 'kubernetes.runCpu',
    kind: matching(CPU_QUANTITY, 'a CPU quantity such as 1 or 500m'),
    fallback: '1',
    doc: 'CPU limit per run',
  },
  {
    env: 'SVC_K8S_RUN_UID',
    key: 'kubernetes.runUid',
    kind: positiveInteger(UID_MAX),
    fallback: 65534,
    doc: 'the unprivileged uid of runs (never 0)',
  },
  {
    env: 'SVC_K8S_RUN_GID',
    key: 'kubernetes.runGid',
    kind: positiveInteger(UID_MAX),
    fallback: 65534,
    doc: 'the unprivileged gid of runs (never 0)',
  },
  {
    env: 'SVC_K8S_RUN_TMP_BYTES',
    key: 'kubernetes.runTmpBytes',
    kind: positiveInteger(),
    fallback: runTmpBytesMaxKubernetes,
    doc: "size limit of a run's /tmp (an emptyDir)",
  },
  {
    env: 'SVC_K8S_SERVICE_ACCOUNT',
    key: 'kubernetes.serviceAccount',
    kind: text('a service account name'),
    defaultText: "the namespace's default (its token is never mounted)",
    doc: "the run pods' service account",
  },
  {
    env: 'SVC_API_HOST',
    kind: text('a host or IP address'),
    fallback: '127.0.0.1',
    doc: "the standalone API server's bind address (`tsx api/main.ts`; `svc node` serves the API on httpListen)",
  },
  {
    env: 'SVC_API_PORT',
    kind: wholeNumber(0, 65_535),
    fallback: 8080,
    doc: "the standalone API server's port (`tsx api/main.ts`)",
  },
];

const BY_NAME = new Map(API_ENV_SETTINGS.map((setting) => [setting.env, setting]));

/** apiEnvSetting finds a declaration; asking for an undeclared variable is a programming error. */
export function apiEnvSetting(name: string): EnvSetting {
  const setting = BY_NAME.get(name);
  if (setting === undefined) throw new Error(`${name} is not a declared API setting (api/env-settings.ts)`);
  return setting;
}

/** envValueProblem checks a variable's text against its kind: null when it fits, else the refusal naming it. */
export function envValueProblem(setting: EnvSetting, text: string): string | null {
  const result = setting.kind.schema.safeParse(setting.kind.fromText(text));
  if (result.success) return null;
  const problem = result.error.issues[0]?.message ?? 'is not valid';
  const name = setting.key === undefined ? setting.env : `${setting.env} (api.${setting.key})`;
  return `${name} ${problem}${setting.secret ? '' : `, got ${JSON.stringify(text)}`}`;
}

/**
 * envSetting reads one declared variable: its value, or the declared fallback when it is unset or empty
 * (undefined when it has none). A value its kind refuses throws an Error naming the variable.
 */
export function envSetting<T = unknown>(env: NodeJS.ProcessEnv, name: string): T {
  const setting = apiEnvSetting(name);
  const raw = env[name];
  if (raw === undefined || raw === '') return setting.fallback as T;
  const problem = envValueProblem(setting, raw);
  if (problem !== null) throw new Error(problem);
  return setting.kind.fromText(raw) as T;
}
