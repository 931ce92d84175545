// `svc node`'s configuration, resolved against its schema (cli/node/config-schema.ts): each setting's value comes
// from, in rising order, its default, the config file (JSON or YAML; paths relative to the file), the environment
// (SVC_* and REDIS_URL; paths relative to the working directory) and the flags (likewise). An unknown file key,
// flag or SVC_* variable and a value its kind refuses are UsageErrors naming it (exit code 2); then the node's
// own resolveNodeConfig checks the whole, so `--print-config` prints only a config the node would accept.
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { JSON_SCHEMA, load as loadYaml } from 'js-yaml';
import { kindProblem } from '../api/setting-types.js';
import { ConfigError, resolveNodeConfig, type NodeConfig } from './node/config.js';
import {
  API_ON_FLAG,
  API_SECTION,
  configFileSchema,
  flagSpec,
  KNOWN_ENV,
  NODE_SETTINGS,
  SECTION_FLAGS,
  SETTINGS_BY_KEY,
  SVC_ENV_PREFIX,
  type NodeSetting,
} from './node/config-schema.js';
import { limitOverrides, listFlag, stringFlag, type FlagSpec, type FlagValues } from './flags.js';
import { CONFIG_FILE_BYTES_MAX } from './limits.js';
import { UsageError } from './usage.js';

export { parseFounder } from './founder.js';

export const NODE_FLAGS: FlagSpec = flagSpec();

/** NodeConfigWithApi is the node's config as the CLI builds it (the api section included). */
export type NodeConfigWithApi = NodeConfig;

/** Source says where a setting's value came from. */
export type Source = 'default' | 'file' | 'env' | 'flag';

export interface SettingValue {
  value: unknown;
  source: Source;
  /** from names it: the file's path, the variable or the flag. */
  from?: string;
  /** default says, for an unset setting without a constant default, what the node does instead. */
  default?: string;
}

export interface ResolvedCliConfig {
  /** config is what the node is started with: the values set by a file, a variable or a flag. */
  config: NodeConfig;
  /** settings holds every setting's value (defaults included) and its source, in the schema's order. */
  settings: Map<string, SettingValue>;
}

/** FILE_ONLY_REFUSED are NodeConfig fields a program may pass but a file may not hold. */
const FILE_ONLY_REFUSED = ['logDestination', 'engineCompat'] as const;
/** ISSUES_SHOWN_MAX bounds the problems one refusal lists. */
const ISSUES_SHOWN_MAX = 5;

/** readConfigFile reads a JSON or YAML object, bounded in size. */
async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > CONFIG_FILE_BYTES_MAX) throw new Error(`larger than ${CONFIG_FILE_BYTES_MAX} bytes`);
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  const yaml = /\.ya?ml$/i.test(path);
  let parsed: unknown;
  try {
    parsed = yaml ? loadYaml(text, { schema: JSON_SCHEMA }) : JSON.parse(text);
  } catch (err) {
    throw new UsageError(
      `config file ${path} is not valid ${yaml ? 'YAML' : 'JSON'}: ${firstLine((err as Error).message)}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`config file ${path} must hold an object of NodeConfig fields`);
  return parsed as Record<string, unknown>;
}

function getPath(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const part of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
}

function setPath(root: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = root;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

/** pathText writes a zod issue's path as a key: `bootstrap[0].name`. */
function pathText(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, part) =>
      typeof part === 'number' ? `${text}[${part}]` : text === '' ? String(part) : `${text}.${String(part)}`,
    '',
  );
}

/** settingOf finds the declared setting a path lies in (its longest declared prefix). */
function settingOf(path: readonly PropertyKey[]): NodeSetting | undefined {
  const names = path.filter((p): p is string => typeof p === 'string');
  for (let n = names.length; n > 0; n--) {
    const setting = SETTINGS_BY_KEY.get(names.slice(0, n).join('.'));
    if (setting) return setting;
  }
  return undefined;
}

/** fileProblems turns the schema's issues into refusals naming each key (a secret's value is never echoed). */
function fileProblems(
  issues: readonly { code: string; path: PropertyKey[]; message: string; keys?: string[] }[],
  raw: unknown,
): string {
  const lines = issues.slice(0, ISSUES_SHOWN_MAX).map((issue) => {
    if (issue.code === 'unrecognized_keys') {
      const keys = (issue.keys ?? []).map((k) => JSON.stringify(pathText([...issue.path, k])));
      return `unknown key${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`;
    }
    const value = getPath(raw, issue.path);
    const secret = settingOf(issue.path)?.secret === true;
    const shown = secret || value === undefined ? '' : `, got ${JSON.stringify(value)}`;
    return `${pathText(issue.path) || '(top level)'} ${issue.message}${shown}`;
  });
  if (issues.length > ISSUES_SHOWN_MAX) lines.push(`and ${issues.length - ISSUES_SHOWN_MAX} more`);
  return lines.join('; ');
}

/** checked returns a value its setting's kind accepts, or throws a UsageError naming `name` (a flag or variable). */
function checked(setting: NodeSetting, value: unknown, name: string, text: string): unknown {
  const problem = kindProblem(setting.kind, value);
  if (problem !== null)
    throw new UsageError(`${name} ${problem}${setting.secret ? '' : `, got ${JSON.stringify(text)}`}`);
  return value;
}

function fromFile(path: string, raw: Record<string, unknown>, layer: Map<string, SettingValue>): boolean {
  for (const key of FILE_ONLY_REFUSED) {
    if (key in raw) throw new UsageError(`config file ${path}: ${key} cannot be set from a file`);
  }
  const result = configFileSchema().safeParse(raw);
  if (!result.success) throw new UsageError(`config file ${path}: ${fileProblems(result.error.issues as never, raw)}`);
  const base = dirname(resolve(path));
  for (const setting of NODE_SETTINGS) {
    const value = getPath(raw, setting.key.split('.'));
    if (value === undefined) continue;
    const placed = setting.path && typeof value === 'string' && !isAbsolute(value) ? resolve(base, value) : value;
    layer.set(setting.key, { value: placed, source: 'file', from: path });
  }
  return API_SECTION in raw;
}

/**
 * KUBERNETES_SERVICE_LINK matches the variables the kubelet puts in every pod for each Service of its namespace
 * (a Service `svc-peers` gives SVC_PEERS_SERVICE_HOST, SVC_PEERS_PORT_7443_TCP_ADDR, …) unless the pod turns
 * enableServiceLinks off: they are not settings, and refusing them would crash-loop a pod in such a namespace.
 */
const KUBERNETES_SERVICE_LINK =
  /_SERVICE_HOST$|_SERVICE_PORT(_[A-Z0-9_]+)?$|_PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?$/;

function fromEnv(env: NodeJS.ProcessEnv, layer: Map<string, SettingValue>): void {
  for (const name of Object.keys(env).sort()) {
    if (name.startsWith(SVC_ENV_PREFIX) && !KNOWN_ENV.has(name) && !KUBERNETES_SERVICE_LINK.test(name))
      throw new UsageError(`unknown environment variable ${name} (docs/configuration.md lists every SVC_* variable)`);
  }
  for (const setting of NODE_SETTINGS) {
    if (setting.env === undefined) continue;
    const text = env[setting.env];
    if (text === undefined || text === '') continue;
    const value = checked(setting, setting.kind.fromText(text), setting.env, text);
    layer.set(setting.key, {
      value: setting.path ? resolve(value as string) : value,
      source: 'env',
      from: setting.env,
    });
  }
}

function fromFlags(values: FlagValues, layer: Map<string, SettingValue>): void {
  // The sections first (--engine-limit NAME=N), so a named flag (--election-timeout-ticks) wins over them.
  for (const { flag, section } of SECTION_FLAGS) {
    for (const [name, value] of Object.entries(limitOverrides(values, flag))) {
      const setting = SETTINGS_BY_KEY.get(`${section}.${name}`);
      if (setting === undefined) {
        const known = NODE_SETTINGS.filter((s) => s.key.startsWith(`${section}.`)).map((s) =>
          s.key.slice(section.length + 1),
        );
        throw new UsageError(`--${flag}: unknown limit ${JSON.stringify(name)} (known: ${known.join(', ')})`);
      }
      checked(setting, value, `--${flag} ${name}`, String(value));
      layer.set(setting.key, { value, source: 'flag', from: `--${flag}` });
    }
  }
  for (const setting of NODE_SETTINGS) {
    for (const use of setting.flags ?? []) {
      let value: unknown;
      if ('sets' in use) {
        if (values[use.flag] !== true) continue;
        value = use.sets;
      } else if (use.repeat) {
        const items = listFlag(values, use.flag);
        if (items.length === 0) continue;
        value = checked(setting, items.map(use.item ?? ((item: string) => item)), `--${use.flag}`, items.join(' '));
      } else {
        const text = stringFlag(values, use.flag);
        if (text === undefined) continue;
        value = checked(setting, setting.kind.fromText(text), `--${use.flag}`, text);
        if (setting.path) value = resolve(value as string);
      }
      layer.set(setting.key, { value, source: 'flag', from: `--${use.flag}` });
    }
  }
  tlsFlags(layer);
  httpTlsFlags(layer);
}

/** tlsFlags: --insecure, or the three --tls-* files together (mutual TLS, implied). */
function tlsFlags(layer: Map<string, SettingValue>): void {
  const files = [
    ['tls.caFile', '--tls-ca'],
    ['tls.certFile', '--tls-cert'],
    ['tls.keyFile', '--tls-key'],
  ] as const;
  const given = files.filter(([key]) => layer.has(key));
  if (layer.get('tls.mode')?.value === 'insecure') {
    if (given.length > 0 || layer.has('tls.serverNameOverride'))
      throw new UsageError('--insecure cannot be combined with --tls-* flags');
    return;
  }
  if (given.length === 0) return;
  const missing = files.filter(([key]) => !layer.has(key)).map(([, flag]) => flag);
  if (missing.length > 0)
    throw new UsageError(`mutual TLS needs --tls-ca, --tls-cert and --tls-key (missing ${missing.join(', ')})`);
  layer.set('tls.mode', { value: 'mtls', source: 'flag', from: '--tls-ca' });
}

/** httpTlsFlags: --http-insecure, or --http-tls-cert and --http-tls-key (and --http-tls-ca): HTTPS with that pair. */
function httpTlsFlags(layer: Map<string, SettingValue>): void {
  const given = ['httpTls.certFile', 'httpTls.keyFile', 'httpTls.caFile'].filter((key) => layer.has(key));
  if (layer.get('httpTls.mode')?.value === 'insecure') {
    if (given.length > 0) throw new UsageError('--http-insecure cannot be combined with --http-tls-* flags');
    return;
  }
  if (given.length === 0) return;
  if (!layer.has('httpTls.certFile') || !layer.has('httpTls.keyFile'))
    throw new UsageError('HTTPS with its own certificate needs --http-tls-cert and --http-tls-key');
  layer.set('httpTls.mode', { value: 'https', source: 'flag', from: '--http-tls-cert' });
}

const REQUIRED_FLAGS: Record<string, string> = {
  name: '--name',
  dataDir: '--data-dir',
  grpcListen: '--grpc-listen',
  httpListen: '--http-listen',
};

/**
 * resolveCliConfig reads the file named by --config, the environment and the flags into a NodeConfig checked
 * by its schema and by resolveNodeConfig, with every setting's source. Problems are UsageErrors (exit code 2).
 */
export async function resolveCliConfig(values: FlagValues, env: NodeJS.ProcessEnv): Promise<ResolvedCliConfig> {
  const configPath = stringFlag(values, 'config');
  const fileLayer = new Map<string, SettingValue>();
  const envLayer = new Map<string, SettingValue>();
  const flagLayer = new Map<string, SettingValue>();
  let apiOn: SettingValue = { value: false, source: 'default' };
  if (configPath !== undefined && fromFile(configPath, await readConfigFile(configPath), fileLayer))
    apiOn = { value: true, source: 'file', from: configPath };
  fromEnv(env, envLayer);
  fromFlags(values, flagLayer);
  if (values[API_ON_FLAG] === true) apiOn = { value: true, source: 'flag', from: `--${API_ON_FLAG}` };
  else {
    const apiFlag = [...flagLayer].find(([key]) => key.startsWith(`${API_SECTION}.`));
    if (apiFlag) apiOn = { value: true, source: 'flag', from: apiFlag[1].from };
  }

  const set = new Map<string, SettingValue>([...fileLayer, ...envLayer, ...flagLayer]);
  // The API's variables apply only to a node serving the API (they were still checked above).
  if (apiOn.value !== true) for (const key of set.keys()) if (key.startsWith(`${API_SECTION}.`)) set.delete(key);

  const config: Record<string, unknown> = {};
  for (const setting of NODE_SETTINGS) {
    const entry = set.get(setting.key);
    if (entry !== undefined) setPath(config, setting.key, entry.value);
  }
  if (apiOn.value === true) config[API_SECTION] ??= {};
  // A plaintext mode carries no files: the other mode's keys (from a file, say) are dropped, not half-applied.
  for (const section of ['tls', 'httpTls'] as const) {
    const part = config[section] as { mode?: unknown } | undefined;
    if (part?.mode === 'insecure') config[section] = { mode: 'insecure' };
  }
  if (flagLayer.has('tls.serverNameOverride') && (config.tls as { mode?: unknown } | undefined)?.mode !== 'mtls')
    throw new UsageError(
      '--tls-server-name needs mutual TLS (--tls-ca, --tls-cert, --tls-key or a config file tls section)',
    );

  for (const [field, flag] of Object.entries(REQUIRED_FLAGS)) {
    if (config[field] === undefined) throw new UsageError(`${flag} is required (or ${field} in --config)`);
  }
  if (config.tls === undefined)
    throw new UsageError(
      'say how peers talk: --tls-ca/--tls-cert/--tls-key (mutual TLS) or --insecure (plaintext), or a tls section in --config',
    );
  if (((config.bootstrap as unknown[]) ?? []).length === 0 && ((config.seeds as unknown[]) ?? []).length === 0) {
    throw new UsageError(
      'give --founder for each founding member (a new cluster) or --seed (joining one), or bootstrap/seeds in --config',
    );
  }
  try {
    resolveNodeConfig(config as unknown as NodeConfig);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }

  const settings = new Map<string, SettingValue>();
  settings.set(API_SECTION, apiOn);
  for (const setting of NODE_SETTINGS) {
    if (setting.key.startsWith(`${API_SECTION}.`) && apiOn.value !== true) continue;
    const unset: SettingValue =
      setting.fallback !== undefined
        ? { value: setting.fallback, source: 'default' }
        : { value: null, source: 'default', ...(setting.defaultText ? { default: setting.defaultText } : {}) };
    settings.set(setting.key, set.get(setting.key) ?? unset);
  }
  return { config: config as unknown as NodeConfig, settings };
}

/** nodeConfigFromFlags is resolveCliConfig's config alone. */
export async function nodeConfigFromFlags(
  values: FlagValues,
  env: NodeJS.ProcessEnv = process.env,
): Promise<NodeConfigWithApi> {
  return (await resolveCliConfig(values, env)).config;
}

/** maskSecret hides a secret: a URL keeps all but its credentials, anything else is replaced whole. */
function maskSecret(value: unknown): unknown {
  if (typeof value !== 'string') return '***';
  return /^[a-z+]+:\/\/[^/]*@/.test(value) ? value.replace(/\/\/[^@/]*@/, '//***@') : '***';
}

/** printableConfig is --print-config's document: the config the node gets and each setting's source, secrets masked. */
export function printableConfig(resolved: ResolvedCliConfig): {
  config: unknown;
  settings: Record<string, SettingValue>;
} {
  const config = structuredClone(resolved.config) as unknown as Record<string, unknown>;
  const settings: Record<string, SettingValue> = {};
  for (const [key, entry] of resolved.settings) {
    const secret = SETTINGS_BY_KEY.get(key)?.secret === true && entry.source !== 'default';
    settings[key] = secret ? { ...entry, value: maskSecret(entry.value) } : entry;
    if (secret) setPath(config, key, maskSecret(entry.value));
  }
  return { config, settings };
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}

/** printConfigText is --print-config's JSON: the config indented, then one line per setting (a long list to scan). */
export function printConfigText(resolved: ResolvedCliConfig): string {
  const { config, settings } = printableConfig(resolved);
  const lines = Object.entries(settings).map(([key, entry]) => `    ${JSON.stringify(key)}: ${JSON.stringify(entry)}`);
  const configText = JSON.stringify(config, null, 2).replace(/\n/g, '\n  ');
  return `{\n  "config": ${configText},\n  "settings": {\n${lines.join(',\n')}\n  }\n}\n`;
}
