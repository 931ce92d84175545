// A STAND-IN for a Kubernetes API server and its kubelet, for tests only: a real cluster cannot run on this
// machine. It serves the endpoints the Kubernetes run backend uses (create a Job or NetworkPolicy, watch and read
// pods, follow a container's log, delete a Job or pod; create, read, update and delete a Secret) and refuses
// requests the way the real API server does:
// - unknown fields with ?fieldValidation=Strict: 400 BadRequest `strict decoding error: unknown field "…"`.
//   The known fields are those of the Kubernetes OpenAPI schema, as generated into @kubernetes/client-node's
//   models (each model's attributeTypeMap);
// - what the OpenAPI schema refuses (missing required fields, wrong types, values outside an enum): validated with
//   kubernetes-models' validators, generated from the same schema; 422 Invalid (400 for a wrong type);
// - what the API server validates beyond the schema: object names (RFC 1123; a Job's at most 63 characters),
//   container names, label keys and values, a Job pod's restartPolicy, quantities, volume mounts, a negative
//   deadline: 422 Invalid with {causes: [{reason, message, field}]};
// - a Secret's keys, base64 values, size and immutability (kubernetes-stand-in-secrets.ts);
// - a second object of a name: 409 AlreadyExists; a wrong bearer token: 401.
// Errors are `Status` objects as the real server sends them. Its kubelet runs a Job's container as a local
// process (no image, no isolation, no resource limits: those are the real node's), in the host directory the
// workspace volume names, with Kubernetes' $(VAR) expansion of command and args; the log is stdout and stderr
// together, as the real log API gives them. Deleting a Job without propagationPolicy orphans its pods, as the
// real batch/v1 API does; activeDeadlineSeconds ends a Job's pod. Its garbage collector deletes a Secret whose
// owner Jobs are all gone (deleted with propagation, or never there), and drops the owner reference of a Job
// deleted without it (orphaning). Its kubelet resolves env `secretKeyRef`s (a missing Secret or key: the
// container waits in CreateContainerConfigError) and mounts secret volumes at their mount paths, read-only, in
// a mount namespace of the container's own (unshare(1): the stand-in must run as root for such pods).
// It lists pods, Jobs and Secrets with label selectors and paging (limit/continue, consistent snapshots) as the
// real server does (kubernetes-stand-in-lists.ts), and deletes with preconditions (uid, resourceVersion: 409
// Conflict when the object differs).
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import {
  dns1123Label,
  dns1123Subdomain,
  labelName,
  labelValue,
  quantity,
  unknownFields,
  type SchemaValidate,
} from './kubernetes-rules.js';
import { validate as validateJobSchema } from 'kubernetes-models/_schemas/IoK8sApiBatchV1Job';
import { validate as validateNetworkPolicySchema } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as validateSecretSchema } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import {
  PatchError,
  applyJsonPatch,
  applyMergePatch,
  base64Problem,
  foldSecret,
  secretCauses,
  secretUpdateCauses,
} from './kubernetes-stand-in-secrets.js';
import {
  ListError,
  ListSnapshots,
  listForm,
  listPage,
  parseLabelSelector,
  selects,
} from './kubernetes-stand-in-lists.js';
import type { Requirement } from './kubernetes-stand-in-lists.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  body: Json;
  accept?: string;
}

export interface KubernetesApiStandIn {
  url: string;
  token: string;
  requests: RecordedRequest[];
  jobs: Map<string, Json>;
  pods: Map<string, Json>;
  networkPolicies: Map<string, Json>;
  /** secrets by `namespace/name`, as stored (data base64). */
  secrets: Map<string, Json>;
  /** orphanedPods are pods left running by a Job deletion without propagation. */
  orphanedPods: string[];
  /** claims maps PersistentVolumeClaim names to host directories, for the kubelet's volume mounts. */
  claims: Map<string, string>;
  /** compactLists forgets the states continued list pages are served from (their tokens then get 410). */
  compactLists(): void;
  kubeConfig(): k8s.KubeConfig;
  close(): Promise<void>;
}

class StatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: Json,
    readonly continueToken?: string,
  ) {
    super(message);
  }
  body(): Json {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.continueToken ? { continue: this.continueToken } : {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

// --- the OpenAPI schema: known fields (strict decoding) -------------------------------------------------------

// --- the OpenAPI schema: required fields, types, enums (kubernetes-models) -------------------------------------

const fieldPath = (instancePath: string) =>
  instancePath
    .split('/')
    .filter(Boolean)
    .map((part, index) => (/^\d+$/.test(part) ? `[${part}]` : `${index ? '.' : ''}${part}`))
    .join('');

function schemaCauses(validate: SchemaValidate, body: Json): { causes: Json[]; decodeError: string | null } {
  if (validate(body)) return { causes: [], decodeError: null };
  const errors = validate.errors ?? [];
  // anyOf holds the schema's int-or-string and quantity fields: the real server refuses those while decoding.
  const anyOf = errors.find((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf');
  if (anyOf) {
    const field = fieldPath(anyOf.instancePath);
    return {
      causes: [],
      decodeError: /resources|sizeLimit/.test(field)
        ? "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        : `${field}: expected an integer or a string`,
    };
  }
  // A `byte` field (a Secret's data) is base64 the server decodes: a bad one fails decoding.
  const byteError = errors.find((error) => error.keyword === 'format' && error.params.format === 'byte');
  if (byteError) {
    let value: Json = body;
    for (const part of byteError.instancePath.split('/').filter(Boolean)) value = value?.[part];
    return { causes: [], decodeError: base64Problem(String(value)) ?? 'illegal base64 data' };
  }
  const typeError = errors.find((error) => error.keyword === 'type');
  if (typeError) {
    return {
      causes: [],
      decodeError: `json: cannot unmarshal into Go struct field ${fieldPath(typeError.instancePath)} of type ${typeError.params.type}`,
    };
  }
  const causes: Json[] = [];
  for (const error of errors) {
    const base = fieldPath(error.instancePath);
    if (error.keyword === 'required') {
      const field = base ? `${base}.${error.params.missingProperty}` : String(error.params.missingProperty);
      causes.push({ reason: 'FieldValueRequired', message: 'Required value', field });
    } else if (error.keyword === 'enum') {
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: supported values: ${JSON.stringify(error.params.allowedValues)}`,
        field: base,
      });
    } else {
      causes.push({ reason: 'FieldValueInvalid', message: `Invalid value: ${error.keyword}`, field: base });
    }
  }
  return { causes, decodeError: null };
}

// --- what the API server validates beyond the schema ------------------------------------------------------------

function nameCauses(name: unknown, field: string, maxLength: number, label: boolean): Json[] {
  if (typeof name !== 'string' || name === '')
    return [{ reason: 'FieldValueRequired', message: 'Required value: name or generateName is required', field }];
  const shape = label ? dns1123Label : dns1123Subdomain;
  if (name.length > maxLength || !shape.test(name)) {
    return [
      {
        reason: 'FieldValueInvalid',
        field,
        message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 ${label ? 'label' : 'subdomain'} must consist of lower case alphanumeric characters, '-'${label ? '' : " or '.'"}, and must start and end with an alphanumeric character, and be at most ${maxLength} characters`,
      },
    ];
  }
  return [];
}

function labelCauses(labels: Json, field: string): Json[] {
  const causes: Json[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    const [prefix, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['', key];
    if ((prefix && !dns1123Subdomain.test(prefix)) || name.length > 63 || !labelName.test(name)) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: `${field}`,
        message: `Invalid value: ${JSON.stringify(key)}: name part must consist of alphanumeric characters, '-', '_' or '.'`,
      });
    }
    if (typeof value !== 'string' || value.length > 63 || !labelValue.test(value)) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: `${field}`,
        message: `Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, and be at most 63 characters`,
      });
    }
  }
  return causes;
}

function podSpecCauses(spec: Json, field: string): Json[] {
  const causes: Json[] = [];
  if (!Array.isArray(spec?.containers) || spec.containers.length === 0) {
    causes.push({ reason: 'FieldValueRequired', message: 'Required value', field: `${field}.containers` });
    return causes;
  }
  const volumes = new Set((spec.volumes ?? []).map((volume: Json) => volume.name));
  for (const [index, volume] of (spec.volumes ?? []).entries()) {
    causes.push(...nameCauses(volume.name, `${field}.volumes[${index}].name`, 63, true));
    if (volume.secret) causes.push(...secretVolumeCauses(volume.secret, `${field}.volumes[${index}].secret`));
  }
  const names = new Set<string>();
  for (const [index, container] of spec.containers.entries()) {
    const at = `${field}.containers[${index}]`;
    causes.push(...nameCauses(container.name, `${at}.name`, 63, true));
    if (names.has(container.name))
      causes.push({
        reason: 'FieldValueDuplicate',
        message: `Duplicate value: ${JSON.stringify(container.name)}`,
        field: `${at}.name`,
      });
    names.add(container.name);
    if (!container.image)
      causes.push({ reason: 'FieldValueRequired', message: 'Required value', field: `${at}.image` });
    for (const [envIndex, item] of (container.env ?? []).entries()) {
      const envField = `${at}.env[${envIndex}]`;
      if (item.valueFrom && item.value)
        causes.push({
          reason: 'FieldValueInvalid',
          message: 'Invalid value: "": may not be specified when `value` is not empty',
          field: `${envField}.valueFrom`,
        });
      const ref = item.valueFrom?.secretKeyRef;
      if (ref) {
        causes.push(...nameCauses(ref.name, `${envField}.valueFrom.secretKeyRef.name`, 253, false));
        if (typeof ref.key !== 'string' || !/^[-._a-zA-Z0-9]+$/.test(ref.key) || ref.key.length > 253)
          causes.push({
            reason: 'FieldValueInvalid',
            message: `Invalid value: ${JSON.stringify(ref.key)}: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
            field: `${envField}.valueFrom.secretKeyRef.key`,
          });
      }
    }
    for (const kind of ['limits', 'requests']) {
      for (const [resource, value] of Object.entries(container.resources?.[kind] ?? {})) {
        if (typeof value !== 'string' || !quantity.test(value)) {
          causes.push({
            reason: 'FieldValueInvalid',
            message: `Invalid value: ${JSON.stringify(value)}: must be a quantity`,
            field: `${at}.resources.${kind}[${resource}]`,
          });
        }
      }
    }
    for (const [mountIndex, mount] of (container.volumeMounts ?? []).entries()) {
      if (!volumes.has(mount.name))
        causes.push({
          reason: 'FieldValueNotFound',
          message: `Not found: ${JSON.stringify(mount.name)}`,
          field: `${at}.volumeMounts[${mountIndex}].name`,
        });
      if (typeof mount.mountPath !== 'string' || !mount.mountPath.startsWith('/')) {
        causes.push({
          reason: 'FieldValueInvalid',
          message: 'Invalid value: must be an absolute path',
          field: `${at}.volumeMounts[${mountIndex}].mountPath`,
        });
      }
    }
  }
  return causes;
}

/** fileModeCause: a secret volume's modes are permission bits, 0 to 0777. */
function fileModeCause(mode: unknown, field: string): Json[] {
  if (mode === undefined || (typeof mode === 'number' && Number.isInteger(mode) && mode >= 0 && mode <= 0o777))
    return [];
  return [
    {
      reason: 'FieldValueInvalid',
      message: `Invalid value: ${JSON.stringify(mode)}: must be a number between 0 and 0777 (octal), both inclusive`,
      field,
    },
  ];
}

function secretVolumeCauses(secret: Json, field: string): Json[] {
  const causes: Json[] = [];
  causes.push(...nameCauses(secret.secretName, `${field}.secretName`, 253, false));
  causes.push(...fileModeCause(secret.defaultMode, `${field}.defaultMode`));
  for (const [index, item] of (secret.items ?? []).entries()) {
    const at = `${field}.items[${index}]`;
    const parts = typeof item.path === 'string' ? item.path.split('/') : [];
    if (typeof item.path !== 'string' || item.path === '' || item.path.startsWith('/') || parts.includes('..'))
      causes.push({
        reason: 'FieldValueInvalid',
        message: `Invalid value: ${JSON.stringify(item.path)}: must be a relative path without '..'`,
        field: `${at}.path`,
      });
    causes.push(...fileModeCause(item.mode, `${at}.mode`));
  }
  return causes;
}

function invalid(kind: string, name: unknown, causes: Json[]): StatusError {
  const list = causes.map((cause) => `${cause.field}: ${cause.message}`).join(', ');
  return new StatusError(
    422,
    'Invalid',
    `${kind} ${JSON.stringify(String(name ?? ''))} is invalid: ${causes.length > 1 ? `[${list}]` : list}`,
    { name: String(name ?? ''), kind: kind.split('.')[0]!.toLowerCase() + 's', causes },
  );
}

/** admit checks a created object as the API server would; it returns the object with unknown fields dropped. */
function admit(
  body: Json,
  query: URLSearchParams,
  type: string,
  validate: SchemaValidate,
  kind: string,
  namespace: string,
): Json {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new StatusError(400, 'BadRequest', 'the body of the request was in an unknown format');
  const unknown: string[] = [];
  unknownFields(body, type, '', unknown);
  if (unknown.length > 0 && query.get('fieldValidation') === 'Strict') {
    throw new StatusError(
      400,
      'BadRequest',
      `strict decoding error: ${unknown.map((field) => `unknown field "${field}"`).join(', ')}`,
    );
  }
  const schema = schemaCauses(validate, body);
  if (schema.decodeError) {
    throw new StatusError(
      400,
      'BadRequest',
      `${kind.split('.')[0]} in version "${String(body.apiVersion).split('/').pop()}" cannot be handled as a ${kind.split('.')[0]}: ${schema.decodeError}`,
    );
  }
  const causes = [...schema.causes];
  if (body.metadata?.namespace !== undefined && body.metadata.namespace !== namespace) {
    throw new StatusError(
      400,
      'BadRequest',
      'the namespace of the provided object does not match the namespace sent on the request',
    );
  }
  causes.push(...nameCauses(body.metadata?.name, 'metadata.name', kind === 'Job.batch' ? 63 : 253, false));
  causes.push(...labelCauses(body.metadata?.labels, 'metadata.labels'));
  if (kind === 'Job.batch') {
    const template = body.spec?.template;
    causes.push(...labelCauses(template?.metadata?.labels, 'spec.template.metadata.labels'));
    if (template?.spec) causes.push(...podSpecCauses(template.spec, 'spec.template.spec'));
    const restart = template?.spec?.restartPolicy;
    if (template?.spec && restart !== 'Never' && restart !== 'OnFailure') {
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${JSON.stringify(restart ?? 'Always')}: supported values: "OnFailure", "Never"`,
        field: 'spec.template.spec.restartPolicy',
      });
    }
    for (const field of ['activeDeadlineSeconds', 'backoffLimit', 'ttlSecondsAfterFinished']) {
      const value = body.spec?.[field];
      if (typeof value === 'number' && (value < 0 || (field === 'activeDeadlineSeconds' && value === 0))) {
        causes.push({
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${value}: must be greater than ${field === 'activeDeadlineSeconds' ? 'zero' : 'or equal to 0'}`,
          field: `spec.${field}`,
        });
      }
    }
  }
  const seen = new Set<string>();
  const distinct = causes.filter(
    (cause) => !seen.has(`${cause.reason} ${cause.field}`) && seen.add(`${cause.reason} ${cause.field}`),
  );
  if (distinct.length > 0) throw invalid(kind, body.metadata?.name, distinct);
  return body;
}

/** admitSecret checks a Secret as the API server would and returns it as stored (stringData folded into data). */
function admitSecret(body: Json, query: URLSearchParams, namespace: string): Json {
  const secret = foldSecret(
    admit(body, query, 'V1Secret', validateSecretSchema as SchemaValidate, 'Secret', namespace),
  );
  const causes = secretCauses(secret);
  if (causes.length > 0) throw invalid('Secret', secret.metadata?.name, causes);
  return secret;
}

const mountSecretsScript = [
  // Arguments: pairs of (mount path, host directory), then `--`, then the container's argv. A mount path that
  // does not exist gets a tmpfs on its nearest existing ancestor (in this mount namespace only), as a runtime
  // creates its mount points in the container's own root.
  'set -e',
  'made=" "',
  'while [ "$1" != -- ]; do',
  '  target=$1; source=$2; shift 2',
  '  parent=$target; while [ ! -e "$parent" ]; do parent=$(dirname "$parent"); done',
  '  if [ "$parent" != "$target" ] && [ "${made#* $parent }" = "$made" ]; then',
  '    mount -t tmpfs -o size=1m,mode=0755 stand-in-secrets "$parent"; made="$made$parent "',
  '  fi',
  '  mkdir -p "$target"',
  '  mount --bind "$source" "$target"',
  '  mount -o remount,bind,ro "$target"',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

// --- the server and its kubelet ---------------------------------------------------------------------------------

export async function startKubernetesApiStandIn(): Promise<KubernetesApiStandIn> {
  const token = randomBytes(16).toString('hex');
  const jobs = new Map<string, Json>();
  const pods = new Map<string, Json>();
  const networkPolicies = new Map<string, Json>();
  const secrets = new Map<string, Json>();
  /** secretDirs holds, per pod, the host directories of its secret volumes' files. */
  const secretDirs = new Map<string, string[]>();
  const processes = new Map<string, ChildProcess>();
  const logs = new Map<string, Buffer[]>();
  const logFollowers = new Map<string, Set<http.ServerResponse>>();
  const podWatchers = new Set<{ namespace: string; selector: Requirement[]; res: http.ServerResponse }>();
  const snapshots = new ListSnapshots();
  const timers = new Set<NodeJS.Timeout>();
  const requests: RecordedRequest[] = [];
  const orphanedPods: string[] = [];
  const claims = new Map<string, string>();
  let resourceVersion = 1;

  const later = (ms: number, action: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, ms);
    timers.add(timer);
  };
  const stamp = (object: Json) => {
    object.metadata.resourceVersion = String(++resourceVersion);
  };
  const matches = (pod: Json, selector: Requirement[]) => selects(selector, pod.metadata.labels);
  /** checkPreconditions refuses a delete whose preconditions (DeleteOptions) do not match the object: 409. */
  const checkPreconditions = (object: Json, body: Json, resource: string) => {
    const wanted = body?.preconditions ?? {};
    for (const [field, have] of [
      ['uid', object.metadata.uid],
      ['resourceVersion', object.metadata.resourceVersion],
    ] as const) {
      const want = wanted[field];
      if (want !== undefined && want !== null && want !== have) {
        const label = field === 'uid' ? 'UID' : 'ResourceVersion';
        throw new StatusError(
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${resource} "${object.metadata.name}": Precondition failed: ${label} in precondition: ${want}, ${label} in object meta: ${have}`,
          { name: object.metadata.name, kind: resource.split('.')[0] },
        );
      }
    }
  };
  /** list answers a list call of one collection (kubernetes-stand-in-lists.ts). */
  const list = (
    res: http.ServerResponse,
    kind: string,
    apiVersion: string,
    collection: string,
    objects: Json[],
    query: URLSearchParams,
    accept: string | undefined,
  ) => {
    const form = listForm(accept);
    const page = listPage(collection, objects, query, resourceVersion, snapshots);
    if (form === 'metadata') {
      send(res, 200, {
        kind: 'PartialObjectMetadataList',
        apiVersion: 'meta.k8s.io/v1',
        metadata: page.metadata,
        items: page.items.map((item) => ({
          kind: 'PartialObjectMetadata',
          apiVersion: 'meta.k8s.io/v1',
          metadata: item.metadata,
        })),
      });
    } else send(res, 200, { kind, apiVersion, metadata: page.metadata, items: page.items });
  };
  const notify = (type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Json) => {
    stamp(pod);
    for (const watcher of podWatchers) {
      if (watcher.namespace === pod.metadata.namespace && matches(pod, watcher.selector))
        watcher.res.write(`${JSON.stringify({ type, object: pod })}\n`);
    }
  };
  const containerStatus = (pod: Json) => pod.status.containerStatuses[0];

  // --- the garbage collector: owner references --------------------------------------------------------------
  const ownerPresent = (namespace: string, ref: Json) =>
    ref.apiVersion === 'batch/v1' &&
    ref.kind === 'Job' &&
    jobs.get(`${namespace}/${ref.name}`)?.metadata.uid === ref.uid;
  /** collectSecret deletes a Secret whose owners are all gone and drops references to gone ones (some left). */
  const collectSecret = (key: string) =>
    later(10, () => {
      const secret = secrets.get(key);
      const refs: Json[] = secret?.metadata.ownerReferences ?? [];
      if (!secret || refs.length === 0) return;
      const present = refs.filter((ref) => ownerPresent(secret.metadata.namespace, ref));
      if (present.length === 0) secrets.delete(key);
      else if (present.length < refs.length) {
        secret.metadata.ownerReferences = present;
        stamp(secret);
      }
    });
  /** jobDeleted: dependents go with the Job (Background, Foreground) or lose their reference to it (orphan). */
  const jobDeleted = (job: Json, policy: string | undefined) => {
    for (const [key, secret] of secrets) {
      const refs: Json[] = secret.metadata.ownerReferences ?? [];
      if (!refs.some((ref) => ref.uid === job.metadata.uid)) continue;
      if (policy === 'Background' || policy === 'Foreground') collectSecret(key);
      else {
        secret.metadata.ownerReferences = refs.filter((ref) => ref.uid !== job.metadata.uid);
        if (secret.metadata.ownerReferences.length === 0) delete secret.metadata.ownerReferences;
        stamp(secret);
      }
    }
  };

  const removeSecretDirs = (key: string) => {
    for (const dir of secretDirs.get(key) ?? []) rmSync(dir, { recursive: true, force: true });
    secretDirs.delete(key);
  };

  /**
   * secretMounts writes the files of the pod's secret volumes to host directories and says where each is mounted;
   * null while a Secret or key a volume needs is missing (the kubelet keeps the pod in ContainerCreating).
   */
  function secretMounts(pod: Json): Array<{ mountPath: string; source: string }> | null {
    const key = pod.metadata.name as string;
    removeSecretDirs(key);
    const dirs: string[] = [];
    secretDirs.set(key, dirs);
    const mounts: Array<{ mountPath: string; source: string }> = [];
    for (const volume of pod.spec.volumes ?? []) {
      if (!volume.secret) continue;
      const secret = secrets.get(`${pod.metadata.namespace}/${volume.secret.secretName}`);
      if (!secret && !volume.secret.optional) return null;
      const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-k8s-secret-'));
      dirs.push(dir);
      const data: Record<string, string> = secret?.data ?? {};
      const items: Json[] = volume.secret.items ?? Object.keys(data).map((item) => ({ key: item, path: item }));
      for (const item of items) {
        const value = data[item.key];
        if (value === undefined) {
          if (volume.secret.optional) continue;
          return null;
        }
        const file = path.join(dir, item.path);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, Buffer.from(value, 'base64'));
        chmodSync(file, item.mode ?? volume.secret.defaultMode ?? 0o644);
      }
      for (const mount of pod.spec.containers[0].volumeMounts ?? []) {
        if (mount.name === volume.name)
          mounts.push({ mountPath: mount.mountPath, source: path.join(dir, mount.subPath ?? '') });
      }
    }
    return mounts;
  }

  function hostDirectory(pod: Json, workingDir: string): string {
    for (const mount of pod.spec.containers[0].volumeMounts ?? []) {
      if (workingDir !== mount.mountPath && !workingDir.startsWith(`${mount.mountPath}/`)) continue;
      const volume = pod.spec.volumes.find((item: Json) => item.name === mount.name);
      const root = volume.hostPath?.path ?? claims.get(volume.persistentVolumeClaim?.claimName);
      if (!root) throw new Error(`the stand-in kubelet cannot mount volume ${mount.name}`);
      return path.join(root, mount.subPath ?? '', path.relative(mount.mountPath, workingDir));
    }
    throw new Error(`no volume holds the working directory ${workingDir}`);
  }

  /** expand does Kubernetes' $(VAR) expansion of a command or argument: $$ is $, $(NAME) the variable's value. */
  const expand = (text: string, env: Record<string, string>) =>
    text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name?: string) =>
      name === undefined ? '$' : (env[name] ?? whole),
    );

  function startContainer(pod: Json): void {
    const container = pod.spec.containers[0];
    const key = pod.metadata.name as string;
    const waitFor = (reason: string, message: string) => {
      containerStatus(pod).state = { waiting: { reason, message } };
      notify('MODIFIED', pod);
    };
    // Volumes come before the container: one whose Secret is not there yet is retried, as the kubelet does.
    const mounts = secretMounts(pod);
    if (mounts === null) {
      later(200, () => {
        if (pods.has(key) && !pod.metadata.deletionTimestamp) startContainer(pod);
      });
      return;
    }
    const env: Record<string, string> = {};
    for (const item of container.env ?? []) {
      const ref = item.valueFrom?.secretKeyRef;
      if (!ref) {
        env[item.name] = item.value ?? '';
        continue;
      }
      const secret = secrets.get(`${pod.metadata.namespace}/${ref.name}`);
      const value: string | undefined = secret?.data?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        waitFor(
          'CreateContainerConfigError',
          secret
            ? `couldn't find key ${ref.key} in Secret ${pod.metadata.namespace}/${ref.name}`
            : `secret "${ref.name}" not found`,
        );
        return;
      }
      env[item.name] = Buffer.from(value, 'base64').toString('utf8');
    }
    let argv = [...(container.command ?? []), ...(container.args ?? [])].map((part: string) => expand(part, env));
    if (mounts.length > 0) {
      if (process.getuid?.() !== 0) {
        waitFor('CreateContainerError', 'the stand-in kubelet mounts secret volumes with unshare(1), which needs root');
        return;
      }
      argv = [
        'unshare',
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        mountSecretsScript,
        'sh',
        ...mounts.flatMap((mount) => [mount.mountPath, mount.source]),
        '--',
        ...argv,
      ];
    }
    logs.set(key, []);
    let child: ChildProcess;
    try {
      child = spawn(argv[0]!, argv.slice(1), {
        cwd: hostDirectory(pod, container.workingDir ?? '/'),
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      containerStatus(pod).state = { waiting: { reason: 'CreateContainerError', message: (error as Error).message } };
      notify('MODIFIED', pod);
      return;
    }
    processes.set(key, child);
    const startedAt = new Date().toISOString();
    const collect = (chunk: Buffer) => {
      logs.get(key)!.push(chunk);
      for (const follower of logFollowers.get(key) ?? []) follower.write(chunk);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.on('error', (error) => {
      processes.delete(key);
      containerStatus(pod).state = { waiting: { reason: 'RunContainerError', message: error.message } };
      notify('MODIFIED', pod);
    });
    child.on('spawn', () => {
      pod.status.phase = 'Running';
      containerStatus(pod).state = { running: { startedAt } };
      containerStatus(pod).ready = true;
      containerStatus(pod).started = true;
      notify('MODIFIED', pod);
    });
    child.on('close', (code, signal) => {
      processes.delete(key);
      removeSecretDirs(key);
      const exitCode = code ?? 128 + ({ SIGTERM: 15, SIGKILL: 9 } as Record<string, number>)[signal ?? 'SIGKILL']!;
      pod.status.phase = exitCode === 0 ? 'Succeeded' : 'Failed';
      containerStatus(pod).state = {
        terminated: {
          exitCode,
          reason: exitCode === 0 ? 'Completed' : 'Error',
          startedAt,
          finishedAt: new Date().toISOString(),
        },
      };
      containerStatus(pod).ready = false;
      notify('MODIFIED', pod);
      for (const follower of logFollowers.get(key) ?? []) follower.end();
      logFollowers.delete(key);
      if (pod.metadata.deletionTimestamp) removePod(key);
    });
  }

  function removePod(key: string): void {
    const pod = pods.get(key);
    if (!pod) return;
    pods.delete(key);
    removeSecretDirs(key);
    notify('DELETED', pod);
  }

  /** terminatePod is the kubelet stopping a pod: SIGTERM, then SIGKILL after the grace period; then it is gone. */
  function terminatePod(key: string, graceSeconds: number): void {
    const pod = pods.get(key);
    if (!pod) return;
    pod.metadata.deletionTimestamp ??= new Date().toISOString();
    const child = processes.get(key);
    if (!child) {
      removePod(key);
      return;
    }
    if (graceSeconds === 0) child.kill('SIGKILL');
    else {
      child.kill('SIGTERM');
      later(graceSeconds * 1000, () => {
        if (processes.get(key) === child) child.kill('SIGKILL');
      });
    }
  }

  function createPod(job: Json): void {
    const namespace = job.metadata.namespace;
    const name = `${job.metadata.name}-${randomBytes(3).toString('hex').slice(0, 5)}`;
    const template = job.spec.template;
    const pod: Json = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        uid: randomBytes(16).toString('hex'),
        creationTimestamp: new Date().toISOString(),
        labels: {
          ...template.metadata?.labels,
          'batch.kubernetes.io/job-name': job.metadata.name,
          'job-name': job.metadata.name,
          'controller-uid': job.metadata.uid,
        },
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: job.metadata.name,
            uid: job.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...template.spec, nodeName: 'stand-in-node' },
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: template.spec.containers[0].name,
            image: template.spec.containers[0].image,
            imageID: '',
            ready: false,
            restartCount: 0,
            started: false,
            state: { waiting: { reason: 'ContainerCreating' } },
          },
        ],
      },
    };
    pods.set(name, pod);
    notify('ADDED', pod);
    later(20, () => {
      if (pods.has(name)) startContainer(pod);
    });
    const deadline = job.spec.activeDeadlineSeconds;
    if (typeof deadline === 'number') {
      later(deadline * 1000, () => {
        if (!jobs.has(`${namespace}/${job.metadata.name}`) || !processes.has(name)) return;
        job.status = { ...job.status, conditions: [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded' }] };
        terminatePod(name, pod.spec.terminationGracePeriodSeconds ?? 30);
      });
    }
  }

  const send = (res: http.ServerResponse, status: number, body: Json) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  async function route(req: http.IncomingMessage, res: http.ServerResponse, body: Json): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const parts = url.pathname.split('/').filter(Boolean);
    requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      body,
      accept: req.headers.accept,
    });
    if (req.headers.authorization !== `Bearer ${token}`) throw new StatusError(401, 'Unauthorized', 'Unauthorized');
    const method = req.method;
    // /apis/batch/v1/namespaces/{ns}/jobs[/{name}]
    if (
      parts[0] === 'apis' &&
      parts[1] === 'batch' &&
      parts[2] === 'v1' &&
      parts[3] === 'namespaces' &&
      parts[5] === 'jobs'
    ) {
      const namespace = parts[4]!;
      if (method === 'GET' && parts.length === 6) {
        const listed = [...jobs.values()].filter((job) => job.metadata.namespace === namespace);
        list(res, 'JobList', 'batch/v1', `jobs/${namespace}`, listed, url.searchParams, req.headers.accept);
        return;
      }
      if (method === 'POST' && parts.length === 6) {
        const job = admit(body, url.searchParams, 'V1Job', validateJobSchema as SchemaValidate, 'Job.batch', namespace);
        const key = `${namespace}/${job.metadata.name}`;
        if (jobs.has(key))
          throw new StatusError(409, 'AlreadyExists', `jobs.batch "${job.metadata.name}" already exists`, {
            name: job.metadata.name,
            group: 'batch',
            kind: 'jobs',
          });
        job.metadata = {
          ...job.metadata,
          namespace,
          uid: randomBytes(16).toString('hex'),
          creationTimestamp: new Date().toISOString(),
        };
        job.status = { active: 1 };
        stamp(job);
        jobs.set(key, job);
        createPod(job);
        send(res, 201, job);
        return;
      }
      if (method === 'DELETE' && parts.length === 7) {
        const key = `${namespace}/${parts[6]}`;
        const job = jobs.get(key);
        if (!job)
          throw new StatusError(404, 'NotFound', `jobs.batch "${parts[6]}" not found`, {
            name: parts[6],
            group: 'batch',
            kind: 'jobs',
          });
        checkPreconditions(job, body, 'jobs.batch');
        jobs.delete(key);
        ++resourceVersion;
        const policy = url.searchParams.get('propagationPolicy') ?? body?.propagationPolicy;
        jobDeleted(job, policy);
        for (const pod of [...pods.values()].filter(
          (item) => item.metadata.ownerReferences?.[0]?.uid === job.metadata.uid,
        )) {
          if (policy === 'Background' || policy === 'Foreground')
            terminatePod(pod.metadata.name, pod.spec.terminationGracePeriodSeconds ?? 30);
          else orphanedPods.push(pod.metadata.name);
        }
        send(res, 200, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: { name: parts[6], group: 'batch', kind: 'jobs', uid: job.metadata.uid },
        });
        return;
      }
    }
    // /apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies
    if (
      parts[0] === 'apis' &&
      parts[1] === 'networking.k8s.io' &&
      parts[3] === 'namespaces' &&
      parts[5] === 'networkpolicies' &&
      method === 'POST' &&
      parts.length === 6
    ) {
      const namespace = parts[4]!;
      const policy = admit(
        body,
        url.searchParams,
        'V1NetworkPolicy',
        validateNetworkPolicySchema as SchemaValidate,
        'NetworkPolicy.networking.k8s.io',
        namespace,
      );
      const key = `${namespace}/${policy.metadata.name}`;
      if (networkPolicies.has(key))
        throw new StatusError(
          409,
          'AlreadyExists',
          `networkpolicies.networking.k8s.io "${policy.metadata.name}" already exists`,
        );
      policy.metadata = { ...policy.metadata, namespace, uid: randomBytes(16).toString('hex') };
      networkPolicies.set(key, policy);
      send(res, 201, policy);
      return;
    }
    // /api/v1/namespaces/{ns}/secrets[/{name}]
    if (parts[0] === 'api' && parts[1] === 'v1' && parts[2] === 'namespaces' && parts[4] === 'secrets') {
      const namespace = parts[3]!;
      if (method === 'GET' && parts.length === 5) {
        const listed = [...secrets.values()].filter((secret) => secret.metadata.namespace === namespace);
        list(res, 'SecretList', 'v1', `secrets/${namespace}`, listed, url.searchParams, req.headers.accept);
        return;
      }
      if (method === 'POST' && parts.length === 5) {
        const secret = admitSecret(body, url.searchParams, namespace);
        const key = `${namespace}/${secret.metadata.name}`;
        if (secrets.has(key))
          throw new StatusError(409, 'AlreadyExists', `secrets "${secret.metadata.name}" already exists`, {
            name: secret.metadata.name,
            kind: 'secrets',
          });
        secret.metadata = {
          ...secret.metadata,
          namespace,
          uid: randomBytes(16).toString('hex'),
          creationTimestamp: new Date().toISOString(),
        };
        stamp(secret);
        secrets.set(key, secret);
        collectSecret(key);
        send(res, 201, secret);
        return;
      }
      if (parts.length === 6) {
        const name = parts[5]!;
        const key = `${namespace}/${name}`;
        const stored = secrets.get(key);
        if (!stored) throw new StatusError(404, 'NotFound', `secrets "${name}" not found`, { name, kind: 'secrets' });
        if (method === 'GET') {
          send(res, 200, stored);
          return;
        }
        if (method === 'DELETE') {
          checkPreconditions(stored, body, 'secrets');
          secrets.delete(key);
          ++resourceVersion;
          send(res, 200, {
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Success',
            details: { name, kind: 'secrets', uid: stored.metadata.uid },
          });
          return;
        }
        if (method === 'PUT' || method === 'PATCH') {
          let updated: Json;
          if (method === 'PUT') updated = body;
          else {
            const type = String(req.headers['content-type'] ?? '').split(';')[0];
            try {
              if (type === 'application/json-patch+json') updated = applyJsonPatch(stored, body);
              else if (type === 'application/merge-patch+json' || type === 'application/strategic-merge-patch+json')
                updated = applyMergePatch(stored, body);
              else
                throw new StatusError(
                  415,
                  'UnsupportedMediaType',
                  `the stand-in does not take ${JSON.stringify(type)} patches (server-side apply)`,
                );
            } catch (error) {
              if (error instanceof PatchError) throw new StatusError(422, 'Invalid', error.message);
              throw error;
            }
          }
          if (updated?.metadata?.name !== name)
            throw new StatusError(
              400,
              'BadRequest',
              `the name of the object (${String(updated?.metadata?.name)}) does not match the name on the URL (${name})`,
            );
          const version = updated.metadata.resourceVersion;
          if (method === 'PUT' && version !== undefined && version !== stored.metadata.resourceVersion)
            throw new StatusError(
              409,
              'Conflict',
              `Operation cannot be fulfilled on secrets "${name}": the object has been modified; please apply your changes to the latest version and try again`,
            );
          const secret = admitSecret(updated, url.searchParams, namespace);
          const causes = secretUpdateCauses(stored, secret);
          if (causes.length > 0) throw invalid('Secret', name, causes);
          secret.metadata = {
            ...secret.metadata,
            namespace,
            uid: stored.metadata.uid,
            creationTimestamp: stored.metadata.creationTimestamp,
          };
          stamp(secret);
          secrets.set(key, secret);
          collectSecret(key);
          send(res, 200, secret);
          return;
        }
      }
    }
    // /api/v1/namespaces/{ns}/pods[/{name}[/log]]
    if (parts[0] === 'api' && parts[1] === 'v1' && parts[2] === 'namespaces' && parts[4] === 'pods') {
      const namespace = parts[3]!;
      if (method === 'GET' && parts.length === 5) {
        const selector = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
        if (url.searchParams.get('watch') !== 'true') {
          const inNamespace = [...pods.values()].filter((pod) => pod.metadata.namespace === namespace);
          list(res, 'PodList', 'v1', `pods/${namespace}`, inNamespace, url.searchParams, req.headers.accept);
          return;
        }
        const listed = [...pods.values()].filter(
          (pod) => pod.metadata.namespace === namespace && matches(pod, selector),
        );
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        for (const pod of listed) res.write(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
        const watcher = { namespace, selector, res };
        podWatchers.add(watcher);
        res.on('close', () => podWatchers.delete(watcher));
        return;
      }
      const pod = pods.get(parts[5] ?? '');
      if (!pod || pod.metadata.namespace !== namespace)
        throw new StatusError(404, 'NotFound', `pods "${parts[5]}" not found`, { name: parts[5], kind: 'pods' });
      if (method === 'GET' && parts.length === 6) {
        send(res, 200, pod);
        return;
      }
      if (method === 'DELETE' && parts.length === 6) {
        const grace = url.searchParams.get('gracePeriodSeconds') ?? body?.gracePeriodSeconds;
        terminatePod(
          pod.metadata.name,
          grace === undefined || grace === null ? (pod.spec.terminationGracePeriodSeconds ?? 30) : Number(grace),
        );
        send(res, 200, pod);
        return;
      }
      if (method === 'GET' && parts[6] === 'log') {
        const container = url.searchParams.get('container') ?? pod.spec.containers[0].name;
        if (container !== pod.spec.containers[0].name)
          throw new StatusError(400, 'BadRequest', `container ${container} is not valid for pod ${pod.metadata.name}`);
        const state = containerStatus(pod).state;
        if (state.waiting) {
          throw new StatusError(
            400,
            'BadRequest',
            `container "${container}" in pod "${pod.metadata.name}" is waiting to start: ${state.waiting.reason}`,
          );
        }
        res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
        for (const chunk of logs.get(pod.metadata.name) ?? []) res.write(chunk);
        if (url.searchParams.get('follow') === 'true' && state.running && processes.has(pod.metadata.name)) {
          const followers = logFollowers.get(pod.metadata.name) ?? new Set();
          followers.add(res);
          logFollowers.set(pod.metadata.name, followers);
          res.on('close', () => followers.delete(res));
          return;
        }
        res.end();
        return;
      }
    }
    throw new StatusError(404, 'NotFound', 'the server could not find the requested resource');
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: Json;
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        send(res, 400, new StatusError(400, 'BadRequest', 'the body of the request was in an unknown format').body());
        return;
      }
      route(req, res, body).catch((error: unknown) => {
        if (error instanceof ListError)
          send(
            res,
            error.code,
            new StatusError(error.code, error.reason, error.message, undefined, error.continueToken).body(),
          );
        else if (error instanceof StatusError) send(res, error.code, error.body());
        else send(res, 500, new StatusError(500, 'InternalError', String(error)).body());
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    token,
    requests,
    jobs,
    pods,
    networkPolicies,
    secrets,
    orphanedPods,
    claims,
    compactLists: () => snapshots.compact(),
    kubeConfig() {
      const config = new k8s.KubeConfig();
      config.loadFromOptions({
        clusters: [{ name: 'stand-in', server: url, skipTLSVerify: true }],
        users: [{ name: 'stand-in', token }],
        contexts: [{ name: 'stand-in', cluster: 'stand-in', user: 'stand-in', namespace: 'runs' }],
        currentContext: 'stand-in',
      });
      return config;
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const child of processes.values()) child.kill('SIGKILL');
      for (const key of [...secretDirs.keys()]) removeSecretDirs(key);
      for (const watcher of podWatchers) watcher.res.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
