// The wire contract as data, read two ways: from the spec's markdown tables and
// from the compiled proto descriptors (buf's FileDescriptorSet as JSON). The
// conformance test compares the two; compareContracts lists every difference.

/** WireField is one field; `type` is a scalar name or a message's short name, or map<k, v>. */
export interface WireField {
  name: string;
  number: number;
  type: string;
  repeated: boolean;
  /** oneof names the oneof the field belongs to, '' for none. */
  oneof: string;
}

export interface WireMethod {
  name: string;
  requestType: string;
  responseType: string;
  requestStream: boolean;
  responseStream: boolean;
}

export interface WireContract {
  packageName: string;
  serviceName: string;
  methods: WireMethod[];
  /** messages by name, fields in any order. */
  messages: Record<string, WireField[]>;
}

// ---------------------------------------------------------------------------------------------
// The spec's markdown.

interface MarkdownTable {
  heading: string;
  header: string[];
  rows: string[][];
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((c) => c.trim());
}

function markdownTables(markdown: string): MarkdownTable[] {
  const lines = markdown.split('\n');
  const tables: MarkdownTable[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    const headingMatch = /^#{1,6}\s+(.*)$/.exec(line);
    if (headingMatch) {
      heading = headingMatch[1]!.trim();
      continue;
    }
    if (!line.trim().startsWith('|') || !/^\s*\|[\s|:-]+\|\s*$/.test(lines[i + 1] ?? '')) continue;
    const table: MarkdownTable = { heading, header: cells(line), rows: [] };
    i += 2;
    for (; i < lines.length && lines[i]!.trim().startsWith('|'); i += 1) table.rows.push(cells(lines[i]!));
    i -= 1;
    tables.push(table);
  }
  return tables;
}

function unquote(text: string): string {
  return text.replace(/`/g, '').trim();
}

/** specField reads one row's field, number and type cells, e.g. "oneof chunk: header" or "repeated MemberInfo". */
function specField(fieldCell: string, numberCell: string, typeCell: string): WireField {
  let name = unquote(fieldCell);
  let oneof = '';
  const oneofMatch = /^oneof\s+(\w+)\s*:\s*(\w+)$/.exec(name);
  if (oneofMatch) {
    oneof = oneofMatch[1]!;
    name = oneofMatch[2]!;
  }
  // "term (sanctioning leader's term)": the name is the first word, the rest explains it.
  name = name.replace(/\s*\(.*\)\s*$/, '');
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`spec field cell ${JSON.stringify(fieldCell)} names no field`);
  const number = Number(unquote(numberCell));
  if (!Number.isInteger(number) || number <= 0) throw new Error(`spec field ${name} has number ${numberCell}`);
  let type = unquote(typeCell);
  let repeated = false;
  const repeatedMatch = /^repeated\s+(\w+)$/.exec(type);
  if (repeatedMatch) {
    repeated = true;
    type = repeatedMatch[1]!;
  }
  const mapMatch = /^map\s*<\s*(\w+)\s*,\s*(\w+)\s*>$/.exec(type);
  if (mapMatch) type = `map<${mapMatch[1]}, ${mapMatch[2]}>`;
  return { name, number, type, repeated, oneof };
}

function addField(messages: Record<string, WireField[]>, message: string, field: WireField): void {
  if (!/^[A-Z]\w*$/.test(message)) throw new Error(`spec table names no message: ${JSON.stringify(message)}`);
  (messages[message] ??= []).push(field);
}

/** parseSpec reads the wire contract out of replication-grpc.md. It throws on a table it cannot read. */
export function parseSpec(markdown: string): WireContract {
  const packageName = /gRPC package is `([\w.]+)`/.exec(markdown)?.[1] ?? '';
  const serviceName = /gRPC service is `(\w+)`/.exec(markdown)?.[1] ?? '';
  const messages: Record<string, WireField[]> = {};
  const methods: WireMethod[] = [];
  for (const table of markdownTables(markdown)) {
    const header = table.header.map((h) => h.toLowerCase());
    const column = (name: string): number => header.indexOf(name);
    if (column('field') >= 0 && column('no.') >= 0 && column('type') >= 0) {
      const messageColumn = column('message');
      for (const row of table.rows) {
        const message = messageColumn >= 0 ? unquote(row[messageColumn]!) : unquote(table.heading);
        addField(messages, message, specField(row[column('field')]!, row[column('no.')]!, row[column('type')]!));
      }
    } else if (column('method') >= 0 && column('call type') >= 0) {
      for (const row of table.rows) {
        const callType = unquote(row[column('call type')]!);
        const streamOf = (cell: string): { type: string; stream: boolean } => {
          const m = /^stream of\s+(\w+)$/.exec(unquote(cell));
          return m ? { type: m[1]!, stream: true } : { type: unquote(cell), stream: false };
        };
        const request = streamOf(row[column('request')]!);
        const response = streamOf(row[column('response')]!);
        if (!['unary', 'server-stream', 'client-stream', 'bidi-stream'].includes(callType)) {
          throw new Error(`spec method ${row[0]} has call type ${callType}`);
        }
        methods.push({
          name: unquote(row[column('method')]!),
          requestType: request.type,
          responseType: response.type,
          requestStream: request.stream || callType === 'client-stream' || callType === 'bidi-stream',
          responseStream: response.stream || callType === 'server-stream' || callType === 'bidi-stream',
        });
      }
    }
  }
  // A message the spec describes in a sentence: "`AppliedReportAck` has one field: `acknowledged` (1, bool)."
  for (const m of markdown.matchAll(/`(\w+)` has one field: `(\w+)` \((\d+), ([\w<>, ]+)\)/g)) {
    addField(messages, m[1]!, specField(m[2]!, m[3]!, m[4]!));
  }
  return { packageName, serviceName, methods, messages };
}

// ---------------------------------------------------------------------------------------------
// The compiled descriptors (google.protobuf.FileDescriptorSet as buf prints it in JSON).

interface FieldDescriptorJson {
  name: string;
  number: number;
  label?: string;
  type: string;
  typeName?: string;
  oneofIndex?: number;
  proto3Optional?: boolean;
}

interface MessageDescriptorJson {
  name: string;
  field?: FieldDescriptorJson[];
  nestedType?: MessageDescriptorJson[];
  oneofDecl?: { name: string }[];
  options?: { mapEntry?: boolean };
}

export interface FileDescriptorSetJson {
  file: {
    name: string;
    package?: string;
    messageType?: MessageDescriptorJson[];
    service?: {
      name: string;
      method?: {
        name: string;
        inputType: string;
        outputType: string;
        clientStreaming?: boolean;
        serverStreaming?: boolean;
      }[];
    }[];
  }[];
}

function shortName(typeName: string): string {
  return typeName.slice(typeName.lastIndexOf('.') + 1);
}

function descriptorType(field: FieldDescriptorJson): string {
  if (field.type === 'TYPE_MESSAGE' || field.type === 'TYPE_ENUM') return shortName(field.typeName ?? '?');
  return field.type.replace(/^TYPE_/, '').toLowerCase();
}

/** contractFromDescriptors reads the wire contract of `fileName` out of a FileDescriptorSet. */
export function contractFromDescriptors(set: FileDescriptorSetJson, fileName: string): WireContract {
  const file = set.file.find((f) => f.name === fileName);
  if (!file) throw new Error(`descriptor set has no file ${fileName}`);
  const messages: Record<string, WireField[]> = {};
  for (const message of file.messageType ?? []) {
    const mapEntries = new Map<string, MessageDescriptorJson>();
    for (const nested of message.nestedType ?? []) {
      if (nested.options?.mapEntry) mapEntries.set(nested.name, nested);
      else messages[`${message.name}.${nested.name}`] = []; // a nested message the spec cannot table: flagged as extra
    }
    messages[message.name] = (message.field ?? []).map((field) => {
      const entry = field.type === 'TYPE_MESSAGE' ? mapEntries.get(shortName(field.typeName ?? '')) : undefined;
      const oneof = field.oneofIndex === undefined ? '' : (message.oneofDecl?.[field.oneofIndex]?.name ?? '?');
      if (entry) {
        const key = entry.field!.find((f) => f.number === 1)!;
        const value = entry.field!.find((f) => f.number === 2)!;
        return {
          name: field.name,
          number: field.number,
          type: `map<${descriptorType(key)}, ${descriptorType(value)}>`,
          repeated: false,
          oneof,
        };
      }
      return {
        name: field.name,
        number: field.number,
        type: descriptorType(field),
        repeated: field.label === 'LABEL_REPEATED',
        oneof,
      };
    });
  }
  const service = file.service ?? [];
  return {
    packageName: file.package ?? '',
    serviceName: service.map((s) => s.name).join(','),
    methods: service.flatMap((s) =>
      (s.method ?? []).map((m) => ({
        name: m.name,
        requestType: shortName(m.inputType),
        responseType: shortName(m.outputType),
        requestStream: m.clientStreaming === true,
        responseStream: m.serverStreaming === true,
      })),
    ),
    messages,
  };
}

// ---------------------------------------------------------------------------------------------

function describeField(f: WireField): string {
  return `${f.repeated ? 'repeated ' : ''}${f.type} ${f.name} = ${f.number}${f.oneof ? ` (oneof ${f.oneof})` : ''}`;
}

/** compareContracts lists every way `proto` differs from `spec`; empty means they agree. */
export function compareContracts(spec: WireContract, proto: WireContract): string[] {
  const differences: string[] = [];
  if (spec.packageName !== proto.packageName)
    differences.push(`package: spec ${spec.packageName}, proto ${proto.packageName}`);
  if (spec.serviceName !== proto.serviceName)
    differences.push(`service: spec ${spec.serviceName}, proto ${proto.serviceName}`);

  const protoMethods = new Map(proto.methods.map((m) => [m.name, m]));
  for (const method of spec.methods) {
    const found = protoMethods.get(method.name);
    if (!found) {
      differences.push(`method ${method.name}: in the spec, missing from the proto`);
    } else if (JSON.stringify(found) !== JSON.stringify(method)) {
      differences.push(`method ${method.name}: spec ${JSON.stringify(method)}, proto ${JSON.stringify(found)}`);
    }
    protoMethods.delete(method.name);
  }
  for (const extra of protoMethods.keys()) differences.push(`method ${extra}: in the proto, not in the spec`);

  const messageNames = new Set([...Object.keys(spec.messages), ...Object.keys(proto.messages)]);
  for (const name of [...messageNames].sort()) {
    const specFields = spec.messages[name];
    const protoFields = proto.messages[name];
    if (!specFields) {
      differences.push(`message ${name}: in the proto, not in the spec`);
      continue;
    }
    if (!protoFields) {
      differences.push(`message ${name}: in the spec, missing from the proto`);
      continue;
    }
    const protoByName = new Map(protoFields.map((f) => [f.name, f]));
    const seenNumbers = new Set<number>();
    for (const field of specFields) {
      if (seenNumbers.has(field.number)) differences.push(`${name}: the spec uses number ${field.number} twice`);
      seenNumbers.add(field.number);
      const found = protoByName.get(field.name);
      if (!found) {
        differences.push(`${name}.${field.name}: in the spec (${describeField(field)}), missing from the proto`);
      } else if (describeField(found) !== describeField(field)) {
        differences.push(`${name}.${field.name}: spec ${describeField(field)}, proto ${describeField(found)}`);
      }
      protoByName.delete(field.name);
    }
    for (const extra of protoByName.values()) {
      differences.push(`${name}.${extra.name}: in the proto (${describeField(extra)}), not in the spec`);
    }
  }
  return differences;
}
