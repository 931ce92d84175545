// Validation of a Kubernetes object against the Kubernetes OpenAPI schema, the way the run backend's stand-in
// API server (test/api/kubernetes-api-stand-in.ts) validates what it is sent, with the same two sources:
// - the known fields of each type, as generated into @kubernetes/client-node's models (their attributeTypeMap):
//   a field the schema does not have is what `kubectl apply` (strict field validation) refuses;
// - required fields, types and enums: kubernetes-models' validators, generated from the same schema;
// and what the API server checks beyond the schema for these objects: names, label keys and values, and that a
// container's volume mounts name volumes of its pod.
import * as k8s from '@kubernetes/client-node';
import { validate as validateConfigMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap';
import { validate as validateSecret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import { validate as validateService } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Service';
import { validate as validateServiceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount';
import { validate as validateStatefulSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1StatefulSet';
import { validate as validateNetworkPolicy } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as validatePodDisruptionBudget } from 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget';
import { validate as validateRole } from 'kubernetes-models/_schemas/IoK8sApiRbacV1Role';
import { validate as validateRoleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1RoleBinding';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type SchemaValidate = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; keyword: string; message?: string; params: Json }> | null;
};

/** KINDS maps each kind the manifests hold to its model type (known fields) and its schema validator. */
const KINDS: Record<string, { apiVersion: string; type: string; validate: SchemaValidate }> = {
  ConfigMap: { apiVersion: 'v1', type: 'V1ConfigMap', validate: validateConfigMap },
  Secret: { apiVersion: 'v1', type: 'V1Secret', validate: validateSecret },
  Service: { apiVersion: 'v1', type: 'V1Service', validate: validateService },
  ServiceAccount: { apiVersion: 'v1', type: 'V1ServiceAccount', validate: validateServiceAccount },
  StatefulSet: { apiVersion: 'apps/v1', type: 'V1StatefulSet', validate: validateStatefulSet },
  NetworkPolicy: { apiVersion: 'networking.k8s.io/v1', type: 'V1NetworkPolicy', validate: validateNetworkPolicy },
  PodDisruptionBudget: {
    apiVersion: 'policy/v1',
    type: 'V1PodDisruptionBudget',
    validate: validatePodDisruptionBudget,
  },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', type: 'V1Role', validate: validateRole },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', type: 'V1RoleBinding', validate: validateRoleBinding },
};

interface Attribute {
  baseName: string;
  type: string;
}
const models = k8s as unknown as Record<string, { attributeTypeMap?: Attribute[] } | undefined>;

/** unknownFields lists the fields of value its schema type does not have (by their JSON names). */
function unknownFields(value: Json, type: string, at: string, found: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((item, index) => unknownFields(item, array[1]!, `${at}[${index}]`, found));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object')
      for (const [key, item] of Object.entries(value)) unknownFields(item, map[1]!, `${at}[${key}]`, found);
    return;
  }
  const attributes = models[type]?.attributeTypeMap;
  if (!attributes || typeof value !== 'object' || Array.isArray(value)) return;
  const known = new Map(attributes.map((attribute) => [attribute.baseName, attribute.type]));
  for (const [key, item] of Object.entries(value)) {
    const field = at ? `${at}.${key}` : key;
    const itemType = known.get(key);
    if (itemType === undefined) found.push(field);
    else unknownFields(item, itemType, field, found);
  }
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const quantity = /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

function labelProblems(labels: Json, at: string): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(labels ?? {})) {
    const [prefix, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['', key];
    if ((prefix && !dns1123Subdomain.test(prefix)) || name.length > 63 || !labelName.test(name))
      problems.push(`${at}: label key ${JSON.stringify(key)}`);
    if (typeof value !== 'string' || value.length > 63 || !labelValue.test(value))
      problems.push(`${at}: label value ${JSON.stringify(value)}`);
  }
  return problems;
}

function podSpecProblems(spec: Json, at: string, claimNames: string[]): string[] {
  const problems: string[] = [];
  // A StatefulSet's volumeClaimTemplates are volumes of its pods too.
  const volumes = new Set([...(spec.volumes ?? []).map((volume: Json) => volume.name), ...claimNames]);
  for (const volume of spec.volumes ?? [])
    if (!dns1123Label.test(volume.name)) problems.push(`${at}.volumes: name ${volume.name}`);
  for (const [index, container] of (spec.containers ?? []).entries()) {
    const where = `${at}.containers[${index}]`;
    if (!dns1123Label.test(container.name)) problems.push(`${where}.name`);
    for (const kind of ['limits', 'requests'])
      for (const [resource, value] of Object.entries(container.resources?.[kind] ?? {}))
        if (typeof value !== 'string' || !quantity.test(value)) problems.push(`${where}.resources.${kind}.${resource}`);
    for (const mount of container.volumeMounts ?? []) {
      if (!volumes.has(mount.name)) problems.push(`${where}.volumeMounts: no volume ${mount.name}`);
      if (!String(mount.mountPath).startsWith('/')) problems.push(`${where}.volumeMounts: ${mount.mountPath}`);
    }
  }
  return problems;
}

/** schemaProblems lists everything the API server would refuse in object (empty when it would admit it). */
export function schemaProblems(object: Json): string[] {
  const kind = KINDS[object?.kind];
  if (!kind) return [`unknown kind ${JSON.stringify(object?.kind)}`];
  const problems: string[] = [];
  if (object.apiVersion !== kind.apiVersion) problems.push(`apiVersion ${object.apiVersion}, not ${kind.apiVersion}`);
  const unknown: string[] = [];
  unknownFields(object, kind.type, '', unknown);
  problems.push(...unknown.map((field) => `unknown field "${field}"`));
  if (!kind.validate(object))
    for (const error of kind.validate.errors ?? [])
      problems.push(`${error.instancePath || '/'}: ${error.keyword} ${error.message ?? JSON.stringify(error.params)}`);
  const name = object.metadata?.name;
  if (typeof name !== 'string' || name.length > 253 || !dns1123Subdomain.test(name))
    problems.push(`metadata.name ${JSON.stringify(name)}`);
  // Services and StatefulSets are DNS labels (their names become host names).
  if ((object.kind === 'Service' || object.kind === 'StatefulSet') && !dns1123Label.test(name))
    problems.push(`metadata.name ${JSON.stringify(name)} is not a DNS label`);
  problems.push(...labelProblems(object.metadata?.labels, 'metadata.labels'));
  if (object.kind === 'StatefulSet') {
    const template = object.spec?.template;
    problems.push(...labelProblems(template?.metadata?.labels, 'spec.template.metadata.labels'));
    const claims = (object.spec?.volumeClaimTemplates ?? []).map((claim: Json) => claim.metadata?.name);
    problems.push(...podSpecProblems(template?.spec ?? {}, 'spec.template.spec', claims));
    const selector = object.spec?.selector?.matchLabels ?? {};
    for (const [key, value] of Object.entries(selector))
      if (template?.metadata?.labels?.[key] !== value) problems.push(`selector ${key} does not match the template`);
  }
  return problems;
}
