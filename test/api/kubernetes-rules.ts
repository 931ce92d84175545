// The Kubernetes API server's rules that both the run backend's stand-in API server (kubernetes-api-stand-in.ts)
// and the manifests' check (test/deploy/kubernetes-schema.ts) apply: the known fields of each type, as generated
// into @kubernetes/client-node's models (their attributeTypeMap; a field the schema does not have is what strict
// field validation refuses), the shape of kubernetes-models' schema validators, and the name, label and quantity
// forms the server checks beyond the schema.
import * as k8s from '@kubernetes/client-node';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

interface Attribute {
  name: string;
  baseName: string;
  type: string;
}
const models = k8s as unknown as Record<string, { attributeTypeMap?: Attribute[] } | undefined>;

/** unknownFields lists the fields of value that its schema type does not have, as field paths. */
export function unknownFields(value: Json, type: string, at: string, found: string[]): void {
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

export interface SchemaError {
  instancePath: string;
  keyword: string;
  params: Json;
  message?: string;
}
export type SchemaValidate = ((data: unknown) => boolean) & { errors?: SchemaError[] | null };

export const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
export const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
export const quantity = /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
