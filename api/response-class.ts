// The response class a server hosting the API may give node:http (`createServer({ServerResponse})`), beside
// request-class.ts: headers that are the same on every answer (helmet's, the API's own no-store and nosniff, the
// rate limit's limit and policy) are kept as one precomputed block, written into the head in one piece, instead
// of a setHeader call each (a name check, a value check, a lower-cased copy and a two-slot array per header, then
// the same headers walked, checked and concatenated again when the head is written). node:http's own work for the
// API's ~18 more headers than bare Express was ~8 µs per answer (bench/api-cluster.ts --cpu-prof).
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';

/** ConstantHeaders is a list of headers the same on every answer that carries it: one constant array, reused. */
export type ConstantHeaders = ReadonlyArray<readonly [string, string]>;

/**
 * headerBlockNamesRefused are the headers node:http reads while it writes a head (framing, connection, date):
 * a block never holds them, so the head node writes is framed as if the block were not there.
 */
const headerBlockNamesRefused = new Set([
  'connection',
  'content-length',
  'content-type',
  'date',
  'expect',
  'keep-alive',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** headerTokenPattern is node:http's check of a header name (RFC 9110 token). */
const headerTokenPattern = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
/** headerValueRefusedPattern is node:http's check of a header value (no control characters but tab). */
const headerValueRefusedPattern = /[^\t\x20-\x7e\x80-\xff]/;

/** constantNames are the lower-cased names of every header any block holds (a few dozen: the lists are constants). */
const constantNames = new Set<string>();
/** constantNamesGeneration counts the times constantNames grew (a block of new names was made). */
let constantNamesGeneration = 0;
/** constantNameCacheEntriesMax bounds the header names (as written, any case) isConstantName remembers. */
const constantNameCacheEntriesMax = 256;
const constantNameCache = new Map<string, boolean>();

/**
 * isConstantName: whether a header of this name (any case) may be in some block. Remembered per name as written (the
 * names a response sets are a few literals), so the usual answer costs a lookup and no lower-cased copy.
 */
function isConstantName(name: string): boolean {
  const known = constantNameCache.get(name);
  if (known !== undefined) return known;
  const answer = constantNames.has(name.toLowerCase());
  if (constantNameCache.size < constantNameCacheEntriesMax) constantNameCache.set(name, answer);
  return answer;
}

/** headerBlockCombinationsMax bounds the blocks one block remembers having been extended into. */
const headerBlockCombinationsMax = 16;

/**
 * HeaderBlock is an immutable set of constant headers and their text in a head (`Name: value\r\n` each, as
 * node:http writes them), checked once when made. A later header of the same name (any case) replaces an
 * earlier one, as setHeader would.
 */
export class HeaderBlock {
  readonly text: string;
  /** lowerNames are the block's names, lower-cased, once each. */
  readonly lowerNames: readonly string[];
  /** byName maps each name, as given and lower-cased, to its value. */
  private readonly byName = new Map<string, string>();
  private readonly extended = new Map<ConstantHeaders, HeaderBlock>();
  private lastMore: ConstantHeaders | null = null;
  private lastExtended: HeaderBlock | null = null;

  constructor(readonly headers: ConstantHeaders) {
    const lastOf = new Map<string, readonly [string, string]>();
    for (const header of headers) {
      const [name, value] = header;
      const lower = name.toLowerCase();
      if (!headerTokenPattern.test(name)) throw new Error(`header block: invalid header name ${JSON.stringify(name)}`);
      if (headerValueRefusedPattern.test(value))
        throw new Error(`header block: invalid value of ${name}: ${JSON.stringify(value)}`);
      if (headerBlockNamesRefused.has(lower)) throw new Error(`header block: ${name} is node:http's to write`);
      lastOf.delete(lower);
      lastOf.set(lower, header);
    }
    let text = '';
    for (const [lower, [name, value]] of lastOf) {
      text += `${name}: ${value}\r\n`;
      this.byName.set(lower, value);
      this.byName.set(name, value);
    }
    this.text = text;
    this.lowerNames = [...lastOf.keys()];
    let added = false;
    for (const lower of this.lowerNames) {
      if (constantNames.has(lower)) continue;
      constantNames.add(lower);
      added = true;
    }
    // A name remembered as not constant may be one now.
    if (added) {
      constantNameCache.clear();
      constantNamesGeneration++;
    }
  }

  /** valueOf is the block's value of a header (any case), or undefined when the block does not hold it. */
  valueOf(name: string): string | undefined {
    return this.byName.get(name) ?? this.byName.get(name.toLowerCase());
  }

  /** uniqueHeaders are the block's headers, one per name (the last given), in the order they are written. */
  uniqueHeaders(): ConstantHeaders {
    const seen = new Map<string, readonly [string, string]>();
    for (const header of this.headers) {
      const lower = header[0].toLowerCase();
      seen.delete(lower);
      seen.set(lower, header);
    }
    return [...seen.values()];
  }

  /** with is this block followed by `more` (remembered per list: the lists are constants). */
  with(more: ConstantHeaders): HeaderBlock {
    // A block is nearly always followed by the same list (the next step of the same path): checked first.
    if (more === this.lastMore) return this.lastExtended!;
    let block = this.extended.get(more);
    if (block === undefined) {
      block = new HeaderBlock([...this.headers, ...more]);
      if (this.extended.size < headerBlockCombinationsMax) this.extended.set(more, block);
    }
    this.lastMore = more;
    this.lastExtended = block;
    return block;
  }
}

/**
 * blockSlot holds, on a constant list (an array), the block of that list given on its own: a property load rather
 * than a WeakMap lookup per answer. blocksByList holds it for a frozen list.
 */
const blockSlot = Symbol('svc.headerBlock');
const blocksByList = new WeakMap<ConstantHeaders, HeaderBlock>();

function blockOf(headers: ConstantHeaders): HeaderBlock {
  const slotted = (headers as { [blockSlot]?: HeaderBlock })[blockSlot];
  if (slotted !== undefined) return slotted;
  let block = blocksByList.get(headers);
  if (block === undefined) {
    block = new HeaderBlock(headers);
    if (Object.isExtensible(headers))
      Object.defineProperty(headers, blockSlot, { value: block, enumerable: false, writable: false });
    else blocksByList.set(headers, block);
  }
  return block;
}

/**
 * ApiServerResponse holds the constant headers given to it (addConstantHeaders) as one block until the head is
 * written, where the block follows the status line as one string. Every other use of the headers behaves as if
 * they had been set one by one: getHeader and hasHeader read the block; setting, appending or removing a header the
 * block holds, listing the headers, or writeHead with headers of its own first sets the block's headers one by one
 * (as before this class) and goes on without the block.
 */
export class ApiServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  /**
   * headerBlock is undefined, not null, on a response node made with its own class whose prototype an Express app
   * set to one inheriting this class's (answersWithHeaderBlocks): its constructor never ran.
   */
  private headerBlock: HeaderBlock | null | undefined = null;
  /** constantNameSetOneByOne: a header some block could hold was set one by one (addConstantHeaders must look). */
  private constantNameSetOneByOne: boolean | undefined = false;
  /**
   * otherNameSetAtGeneration is constantNamesGeneration when a header no block held was first set one by one: if
   * blocks of new names were made since, it may be in one now (addConstantHeaders must look).
   */
  private otherNameSetAtGeneration: number | undefined = undefined;

  /** addConstantHeaders adds these headers (a constant list: the same array on every answer) to the block. */
  addConstantHeaders(headers: ConstantHeaders): void {
    if (this.headersSent) throw new Error('constant headers added after the head was sent');
    if (storeHeader === undefined) {
      // A node:http without the internal this class writes the block through: the headers one by one, as before it.
      for (const [name, value] of headers) this.setHeader(name, value);
      return;
    }
    const added = blockOf(headers);
    // A header of the list already set one by one is replaced, as setHeader would: then the list is set so.
    const setBefore =
      this.constantNameSetOneByOne === true ||
      (this.otherNameSetAtGeneration !== undefined && this.otherNameSetAtGeneration !== constantNamesGeneration);
    if (setBefore)
      for (const name of added.lowerNames) {
        if (super.hasHeader(name)) {
          this.setBlockHeadersOneByOne();
          for (const [listed, value] of added.uniqueHeaders()) super.setHeader(listed, value);
          return;
        }
      }
    const block = this.headerBlock;
    this.headerBlock = block === null || block === undefined ? added : block.with(headers);
  }

  /** setBlockHeadersOneByOne leaves the block: its headers are set as setHeader would have (before `name`'s). */
  private setBlockHeadersOneByOne(): void {
    const block = this.headerBlock;
    if (block === null || block === undefined || this.headersSent) return;
    this.headerBlock = null;
    this.constantNameSetOneByOne = true;
    for (const [name, value] of block.uniqueHeaders()) super.setHeader(name, value);
  }

  private holds(name: string): boolean {
    return isConstantName(name) && this.headerBlock?.valueOf(name) !== undefined;
  }

  /** settingOneByOne: a header of this name is about to be set one by one (setHeader, appendHeader). */
  private settingOneByOne(name: string): void {
    if (!isConstantName(name)) {
      // The earliest such set: any block of new names made after it may hold its name.
      this.otherNameSetAtGeneration ??= constantNamesGeneration;
      return;
    }
    this.constantNameSetOneByOne = true;
    if (this.headerBlock?.valueOf(name) !== undefined) this.setBlockHeadersOneByOne();
  }

  override setHeader(name: string, value: number | string | readonly string[]): this {
    this.settingOneByOne(name);
    return super.setHeader(name, value);
  }

  override appendHeader(name: string, value: string | readonly string[]): this {
    this.settingOneByOne(name);
    return super.appendHeader(name, value);
  }

  override removeHeader(name: string): void {
    if (this.holds(name)) this.setBlockHeadersOneByOne();
    super.removeHeader(name);
  }

  override getHeader(name: string): number | string | string[] | undefined {
    return (this.holds(name) ? this.headerBlock!.valueOf(name) : undefined) ?? super.getHeader(name);
  }

  override hasHeader(name: string): boolean {
    return this.holds(name) || super.hasHeader(name);
  }

  override getHeaders(): OutgoingHttpHeaders {
    this.setBlockHeadersOneByOne();
    return super.getHeaders();
  }

  override getHeaderNames(): string[] {
    this.setBlockHeadersOneByOne();
    return super.getHeaderNames();
  }

  /** getRawHeaderNames is node's (since 15.13; not in @types/node's ServerResponse). */
  getRawHeaderNames(): string[] {
    this.setBlockHeadersOneByOne();
    return (
      ServerResponse.prototype as unknown as { getRawHeaderNames(this: ServerResponse): string[] }
    ).getRawHeaderNames.call(this);
  }

  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    // Headers given here are merged with those set before (or written alone when none were): the block's are set
    // first so that the merge sees them.
    if ((reasonOrHeaders !== undefined && typeof reasonOrHeaders !== 'string') || headers !== undefined)
      this.setBlockHeadersOneByOne();
    return super.writeHead(statusCode, reasonOrHeaders as string, headers);
  }

  /** writeHeader is node's older name of writeHead (its prototype's alias would skip the override above). */
  writeHeader(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    return this.writeHead(statusCode, reasonOrHeaders, headers);
  }

  /** _storeHeader (node:http's, internal) composes the head: the block goes right after the status line. */
  _storeHeader(firstLine: string, headers: unknown): void {
    const block = this.headerBlock;
    storeHeader!.call(this, block === null || block === undefined ? firstLine : firstLine + block.text, headers);
  }
}

/**
 * storeHeader is node:http's own (OutgoingMessage#_storeHeader, internal): present in every Node this project
 * supports (20, 22). Should a later node:http drop it, no block is ever made (addConstantHeaders sets the headers
 * one by one) and the answers are as they were before this class: slower, never wrong.
 */
const storeHeaderFound = (
  ServerResponse.prototype as unknown as { _storeHeader?: (first: string, headers: unknown) => void }
)._storeHeader;
const storeHeader = typeof storeHeaderFound === 'function' ? storeHeaderFound : undefined;

/**
 * answersWithHeaderBlocks puts ApiServerResponse's methods under an Express app's responses: Express sets every
 * response's prototype to its app's (`app.response`, whose prototype is Express's methods over node's
 * ServerResponse), which would drop the class the server made it with. The app's responses get Express's methods
 * over ApiServerResponse's instead; other apps in the process are untouched. Express's methods are copied as they
 * are when the app is made (a library that added methods to express.response later would not reach this app's
 * responses; none of this app's does: express-openapi-validator wraps `res.json` on each response).
 */
export function answersWithHeaderBlocks(app: { response: object }): void {
  const expressMethods = Object.getPrototypeOf(app.response) as object;
  if (expressMethods instanceof ApiServerResponse) return;
  const overBlocks = Object.create(
    ApiServerResponse.prototype,
    Object.getOwnPropertyDescriptors(expressMethods),
  ) as object;
  Object.setPrototypeOf(app.response, overBlocks);
}

/**
 * setConstantHeaders adds constant headers to an answer: as one block on an ApiServerResponse, else one by one
 * (a server that does not use the class, such as a test's).
 */
export function setConstantHeaders(res: ServerResponse, headers: ConstantHeaders): void {
  // The method, not instanceof: an Express response's prototype chain is one link longer (answersWithHeaderBlocks).
  const target = res as ServerResponse & Partial<Pick<ApiServerResponse, 'addConstantHeaders'>>;
  if (target.addConstantHeaders !== undefined) target.addConstantHeaders(headers);
  else for (const [name, value] of headers) res.setHeader(name, value);
}
