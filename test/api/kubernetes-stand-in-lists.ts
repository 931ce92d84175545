// How the Kubernetes API STAND-IN (kubernetes-api-stand-in.ts) answers list calls, as the real API server does:
// - labelSelector in the apimachinery grammar (k8s.io/apimachinery/pkg/labels: `key`, `!key`, `key=v`,
//   `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>1`, `key<1`, joined by commas; keys and values
//   checked as label keys and values); a selector it cannot parse is 400 BadRequest;
// - items sorted by name (the order of their storage keys);
// - paging: `limit` cuts a page and sets metadata.continue, a token of the real form (unpadded base64url JSON
//   {"v":"meta.k8s.io/v1","rv":<list resourceVersion>,"start":"<next key>"}); a continued page is served from the
//   state at the token's resourceVersion (a consistent snapshot: nothing created, changed or deleted after the
//   first page shows), a token the server cannot decode is 400 "invalid continue token: continue key is not
//   valid…", continue with a resourceVersion other than "" or "0" is 400, and a token whose snapshot is gone
//   (compacted; the stand-in keeps a few, or compact() drops them) is 410 Expired with a token that continues
//   from the latest state (rv -1), as the real server answers.
// - Accept `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`: the objects' metadata alone (the
//   first acceptable entry of the header wins; none acceptable is 406 NotAcceptable).
// Not done: remainingItemCount (the real server omits it with a label selector, which is how the backend lists).
import { dns1123Subdomain, labelName, labelValue } from './kubernetes-rules.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export class ListError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly continueToken?: string,
  ) {
    super(message);
  }
}

type Operator = 'exists' | '!' | '=' | '==' | '!=' | 'in' | 'notin' | '>' | '<';
export interface Requirement {
  key: string;
  operator: Operator;
  values: string[];
}

type Token = { kind: 'id' | 'op' | 'end'; text: string };
const symbols = ['!=', '==', '!', '=', '(', ')', ',', '>', '<'];

function lex(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    if (/\s/.test(text[at]!)) {
      at++;
      continue;
    }
    const symbol = symbols.find((item) => text.startsWith(item, at));
    if (symbol) {
      tokens.push({ kind: 'op', text: symbol });
      at += symbol.length;
      continue;
    }
    let end = at;
    while (end < text.length && !/[\s!=(),<>]/.test(text[end]!)) end++;
    tokens.push({ kind: 'id', text: text.slice(at, end) });
    at = end;
  }
  tokens.push({ kind: 'end', text: 'end of string' });
  return tokens;
}

function keyProblem(key: string): string | null {
  const [prefix, name] = key.includes('/') ? (key.split('/', 2) as [string, string]) : ['', key];
  if (key.split('/').length > 2)
    return `key: Invalid value: ${JSON.stringify(key)}: a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/'`;
  if (key.includes('/') && (prefix === '' || prefix.length > 253 || !dns1123Subdomain.test(prefix)))
    return `key: Invalid value: ${JSON.stringify(key)}: prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`;
  if (name === '') return `key: Invalid value: ${JSON.stringify(key)}: name part must be non-empty`;
  if (name.length > 63 || !labelName.test(name))
    return `key: Invalid value: ${JSON.stringify(key)}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`;
  return null;
}

function valueProblem(key: string, value: string, index: number): string | null {
  if (value.length <= 63 && labelValue.test(value)) return null;
  return `values[${index}][${key}]: Invalid value: ${JSON.stringify(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`;
}

/** parseLabelSelector parses a labelSelector as the API server does, or throws a 400 ListError. */
export function parseLabelSelector(text: string): Requirement[] {
  const tokens = lex(text);
  let at = 0;
  const peek = () => tokens[at]!;
  const next = () => tokens[at++]!;
  const fail = (message: string): never => {
    throw new ListError(400, 'BadRequest', message);
  };
  const isStart = (token: Token) => token.kind === 'id' || (token.kind === 'op' && token.text === '!');

  const requirement = (): Requirement => {
    let operator: Operator | null = null;
    if (peek().text === '!' && peek().kind === 'op') {
      next();
      operator = '!';
    }
    const keyToken = next();
    if (keyToken.kind !== 'id') throw new Error(`found '${keyToken.text}', expected: identifier`);
    const key = keyToken.text;
    const keyIssue = keyProblem(key);
    if (keyIssue) throw new Error(keyIssue);
    const after = peek();
    if (operator === '!') return { key, operator, values: [] };
    if (after.kind === 'end' || after.text === ',') return { key, operator: 'exists', values: [] };
    const opToken = next();
    const known: Operator[] = ['=', '==', '!=', 'in', 'notin', '>', '<'];
    if (!known.includes(opToken.text as Operator))
      throw new Error(`found '${opToken.text}', expected: in, notin, =, ==, !=, gt, lt`);
    operator = opToken.text as Operator;
    let values: string[] = [];
    if (operator === 'in' || operator === 'notin') {
      const open = next();
      if (open.text !== '(') throw new Error(`found '${open.text}', expected: '('`);
      if (peek().text !== ')') {
        for (;;) {
          const value = next();
          if (value.kind !== 'id') throw new Error(`found '${value.text}', expected: ',', or identifier`);
          values.push(value.text);
          const separator = next();
          if (separator.text === ')') break;
          if (separator.text !== ',') throw new Error(`found '${separator.text}', expected: ',' or ')'`);
        }
      } else next();
      if (values.length === 0) throw new Error("for 'in', 'notin' operators, values set can't be empty");
    } else {
      const value = peek();
      if (value.kind === 'end' || value.text === ',') values = [''];
      else if (value.kind === 'id') values = [next().text];
      else throw new Error(`found '${value.text}', expected: identifier`);
      if ((operator === '>' || operator === '<') && !/^-?\d+$/.test(values[0]!))
        throw new Error(`for 'Gt', 'Lt' operators, the value must be an integer`);
    }
    for (const [index, value] of values.entries()) {
      const issue = valueProblem(key, value, index);
      if (issue) throw new Error(issue);
    }
    return { key, operator, values };
  };

  const requirements: Requirement[] = [];
  for (;;) {
    const token = peek();
    if (token.kind === 'end') return requirements;
    if (!isStart(token)) fail(`found '${token.text}', expected: !, identifier, or 'end of string'`);
    try {
      requirements.push(requirement());
    } catch (error) {
      if (error instanceof ListError) throw error;
      fail(`unable to parse requirement: ${(error as Error).message}`);
    }
    const after = next();
    if (after.kind === 'end') return requirements;
    if (after.text !== ',') fail(`found '${after.text}', expected: ',' or 'end of string'`);
    if (!isStart(peek())) fail(`found '${peek().text}', expected: identifier after ','`);
  }
}

/** selects says whether labels satisfy every requirement (an empty selector selects everything). */
export function selects(requirements: Requirement[], labels: Record<string, string> | undefined): boolean {
  return requirements.every(({ key, operator, values }) => {
    const has = labels !== undefined && Object.hasOwn(labels, key);
    const value = has ? labels[key]! : undefined;
    switch (operator) {
      case 'exists':
        return has;
      case '!':
        return !has;
      case '=':
      case '==':
      case 'in':
        return has && values.includes(value!);
      case '!=':
      case 'notin':
        return !has || !values.includes(value!);
      case '>':
      case '<': {
        if (!has || !/^-?\d+$/.test(value!)) return false;
        return operator === '>' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0]);
      }
    }
  });
}

const tokenVersion = 'meta.k8s.io/v1';

export function encodeContinue(rv: number, startKey: string): string {
  return Buffer.from(JSON.stringify({ v: tokenVersion, rv, start: startKey })).toString('base64url');
}

/** decodeContinue reads a token as the real server does (storage.DecodeContinue) or throws its 400. */
export function decodeContinue(token: string): { rv: number; startKey: string } {
  const invalid = (detail: string) =>
    new ListError(400, 'BadRequest', `invalid continue token: continue key is not valid${detail}`);
  if (!/^[A-Za-z0-9_-]*$/.test(token) || token.length % 4 === 1) throw invalid(': illegal base64 data at input byte 0');
  let decoded: Json;
  try {
    decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch (error) {
    throw invalid(`: ${(error as Error).message}`);
  }
  if (decoded?.v !== tokenVersion)
    throw invalid(`: server does not recognize this encoded version ${String(decoded?.v ?? '')}`);
  const rv = decoded.rv;
  if (typeof rv !== 'number' || !Number.isInteger(rv) || rv === 0)
    throw invalid(': incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  const start = decoded.start;
  if (typeof start !== 'string' || start === '') throw invalid(': encoded start key empty (version meta.k8s.io/v1)');
  // Path traversal out of the listed collection, which the real server refuses (path.Clean must not change it).
  const key = start.startsWith('/') ? start : `/${start}`;
  if (key.split('/').some((part, index) => (index > 0 && part === '') || part === '.' || part === '..'))
    throw invalid(`: ${start}`);
  return { rv, startKey: key.slice(1) };
}

/** ListSnapshots keeps the states that continued pages are served from, by `<collection>@<rv>`. */
export class ListSnapshots {
  private readonly held = new Map<string, Json[]>();
  constructor(private readonly kept = 16) {}
  save(collection: string, rv: number, items: Json[]): void {
    this.held.set(`${collection}@${rv}`, items);
    while (this.held.size > this.kept) this.held.delete(this.held.keys().next().value!);
  }
  load(collection: string, rv: number): Json[] | undefined {
    return this.held.get(`${collection}@${rv}`);
  }
  /** compact drops every snapshot, as etcd's compaction does to old revisions. */
  compact(): void {
    this.held.clear();
  }
}

/**
 * listPage answers one list call over the objects of one collection (a resource in a namespace) at resource
 * version currentRv: the `items` and list `metadata` of the response, or a ListError.
 */
export function listPage(
  collection: string,
  objects: Iterable<Json>,
  query: URLSearchParams,
  currentRv: number,
  snapshots: ListSnapshots,
): { items: Json[]; metadata: Json } {
  const requirements = parseLabelSelector(query.get('labelSelector') ?? '');
  const limitText = query.get('limit');
  if (limitText !== null && !/^-?\d+$/.test(limitText))
    throw new ListError(
      400,
      'BadRequest',
      `limit: strconv.ParseInt: parsing ${JSON.stringify(limitText)}: invalid syntax`,
    );
  const limit = limitText === null ? 0 : Number(limitText);
  const token = query.get('continue') ?? '';
  let rv = currentRv;
  let startKey = '';
  let state: Json[] | undefined;
  if (token !== '') {
    const resourceVersion = query.get('resourceVersion') ?? '';
    const decoded = decodeContinue(token);
    if (resourceVersion !== '' && resourceVersion !== '0')
      throw new ListError(400, 'BadRequest', 'specifying resource version is not allowed when using continue');
    startKey = decoded.startKey;
    if (decoded.rv > 0) {
      state = snapshots.load(collection, decoded.rv);
      if (!state)
        throw new ListError(
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
          encodeContinue(-1, decoded.startKey),
        );
      rv = decoded.rv;
    }
  }
  const fresh = !state;
  if (!state) {
    state = [...objects]
      .map((object) => structuredClone(object))
      .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  }
  const after = state.filter((object) => startKey === '' || object.metadata.name >= startKey);
  const matching = after.filter((object) => selects(requirements, object.metadata.labels));
  if (limit <= 0 || matching.length <= limit) return { items: matching, metadata: { resourceVersion: String(rv) } };
  const items = matching.slice(0, limit);
  // A page cut from the latest state keeps that state, for the pages after it.
  if (fresh) snapshots.save(collection, rv, state);
  return {
    items,
    metadata: { resourceVersion: String(rv), continue: encodeContinue(rv, `${items.at(-1)!.metadata.name}\u0000`) },
  };
}

/** listForm reads a list call's Accept header: full objects, or metadata only (PartialObjectMetadataList). */
export function listForm(accept: string | undefined): 'full' | 'metadata' {
  for (const entry of (accept ?? '*/*').split(',')) {
    const [type, ...parameters] = entry.split(';').map((part) => part.trim());
    const params = new Map(
      parameters.map((parameter) => parameter.split('=', 2) as [string, string]).filter(([key]) => key !== 'q'),
    );
    if (type !== 'application/json' && type !== 'application/*' && type !== '*/*') continue;
    if (params.size === 0) return 'full';
    if (
      params.get('as') === 'PartialObjectMetadataList' &&
      params.get('g') === 'meta.k8s.io' &&
      params.get('v') === 'v1'
    )
      return 'metadata';
  }
  throw new ListError(
    406,
    'NotAcceptable',
    `only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf`,
  );
}
