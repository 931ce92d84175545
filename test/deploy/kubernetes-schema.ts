// Validation of a Kubernetes object against the Kubernetes OpenAPI schema, with the rules the run backend's
// stand-in API server applies (test/api/kubernetes-rules.ts): known fields (what `kubectl apply`'s strict field
// validation refuses), required fields, types and enums (kubernetes-models' validators, one per kind the
// manifests hold), and what the API server checks beyond the schema for these objects: names, label keys and
// values, and that a container's volume mounts name volumes of its pod.
import {
  dns1123Label,
  dns1123Subdomain,
  labelName,
  labelValue,
  quantity,
  unknownFields,
  type SchemaValidate,
} from '../api/kubernetes-rules.js';
import { validate as validateConfigMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap';
import { validate as validateSecret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret';
import { validate as validateService } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Service';
import { validate as validateServiceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount';
import { validate as validateStatefulSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1StatefulSet';
import { validate as validateCronJob } from 'kubernetes-models/_schemas/IoK8sApiBatchV1CronJob';
import { validate as validateNetworkPolicy } from 'kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy';
import { validate as validatePodDisruptionBudget } from 'kubernetes-models/_schemas/IoK8sApiPolicyV1PodDisruptionBudget';
import { validate as validateRole } from 'kubernetes-models/_schemas/IoK8sApiRbacV1Role';
import { validate as validateRoleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1RoleBinding';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
/** KINDS maps each kind the manifests hold to its model type (known fields) and its schema validator. */
const KINDS: Record<string, { apiVersion: string; type: string; validate: SchemaValidate }> = {
  ConfigMap: { apiVersion: 'v1', type: 'V1ConfigMap', validate: validateConfigMap },
  Secret: { apiVersion: 'v1', type: 'V1Secret', validate: validateSecret },
  Service: { apiVersion: 'v1', type: 'V1Service', validate: validateService },
  ServiceAccount: { apiVersion: 'v1', type: 'V1ServiceAccount', validate: validateServiceAccount },
  StatefulSet: { apiVersion: 'apps/v1', type: 'V1StatefulSet', validate: validateStatefulSet },
  CronJob: { apiVersion: 'batch/v1', type: 'V1CronJob', validate: validateCronJob },
  NetworkPolicy: { apiVersion: 'networking.k8s.io/v1', type: 'V1NetworkPolicy', validate: validateNetworkPolicy },
  PodDisruptionBudget: {
    apiVersion: 'policy/v1',
    type: 'V1PodDisruptionBudget',
    validate: validatePodDisruptionBudget,
  },
  Role: { apiVersion: 'rbac.authorization.k8s.io/v1', type: 'V1Role', validate: validateRole },
  RoleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', type: 'V1RoleBinding', validate: validateRoleBinding },
};

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
  if (object.kind === 'CronJob') {
    // A CronJob's name prefixes its Jobs' (with 11 characters of time): the API server allows 52.
    if (typeof name === 'string' && name.length > 52) problems.push(`metadata.name ${name} is longer than 52`);
    const job = object.spec?.jobTemplate;
    problems.push(...labelProblems(job?.metadata?.labels, 'spec.jobTemplate.metadata.labels'));
    problems.push(
      ...labelProblems(job?.spec?.template?.metadata?.labels, 'spec.jobTemplate.spec.template.metadata.labels'),
    );
    const pod = job?.spec?.template?.spec ?? {};
    if (pod.restartPolicy !== 'Never' && pod.restartPolicy !== 'OnFailure')
      problems.push('a Job pod restartPolicy must be Never or OnFailure');
    problems.push(...podSpecProblems(pod, 'spec.jobTemplate.spec.template.spec', []));
  }
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
