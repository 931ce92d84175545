// gRPC unary calls over connection.ts: one length-prefixed message in, one answer out as HEADERS + DATA +
// trailers HEADERS(END_STREAM) in one socket write; a refusal or an error status trailers-only. The same
// answers lean-serve.ts gives (transports/grpc/README.md, "Lean unary serving"): a message above
// `messageBytesMax` RESOURCE_EXHAUSTED at its prefix, none or two UNIMPLEMENTED, a compressed one decompressed as
// grpc-js does (gzip or deflate, bounded by `messageBytesMax`; another encoding UNIMPLEMENTED),
// `grpc-timeout` honoured (DEADLINE_EXCEEDED, the handler told by `onCancel`), a handler that throws INTERNAL.
import { status as Status } from '@grpc/grpc-js';
import { gunzip, inflate } from 'node:zlib';
import { grpcTimeoutMs } from '../grpc/grpc-timeout.js';
import type { H2Stream } from './connection.js';
import { ErrorCode } from './frames.js';
import { encodeHeaderBlock, type HeaderField } from './hpack.js';
import { headerValue } from './request-head.js';

/** What a unary handler reads of its call. */
export interface UnaryCall {
  readonly stream: H2Stream;
  /** Set once the caller cancelled, the deadline passed or the connection went; the answer is then dropped. */
  cancelled: boolean;
  /** Called once on cancellation (set it to stop work). */
  onCancel: (() => void) | null;
  /** answer gives the call's answer (once; dropped after a cancel): for a handler that returned undefined. */
  answer(answer: UnaryAnswer): void;
}

export type UnaryAnswer =
  | { message: Buffer; trailers?: readonly HeaderField[] }
  | { code: number; details: string; trailers?: readonly HeaderField[] };

/**
 * UnaryHandler answers a call by returning its answer (or a promise of it), or returns undefined and answers
 * later through `call.answer` (a callback-style handler without a promise per call).
 */
export type UnaryHandler = (request: Buffer, call: UnaryCall) => UnaryAnswer | Promise<UnaryAnswer> | undefined;

const MESSAGE_PREFIX_BYTES = 5;
const OK_HEADERS = encodeHeaderBlock([
  [':status', '200'],
  ['content-type', 'application/grpc'],
]);
// The trailers and texts below are grpc-js's, so that a caller cannot tell this server from a grpc-js one.
const OK_TRAILERS = encodeHeaderBlock([
  ['grpc-status', '0'],
  ['grpc-message', 'OK'],
]);

/**
 * percentEncode is grpc-message's encoding as grpc-js writes it (encodeURI: gRPC's PROTOCOL-HTTP2 asks that bytes
 * outside 0x20..0x7e and '%' be encoded; encodeURI also encodes a few more, which every decoder reads back alike).
 * A lone surrogate, which encodeURI refuses, goes as U+FFFD, as Buffer.from would encode it.
 */
function percentEncode(text: string): string {
  return encodeURI(Buffer.from(text, 'utf8').toString('utf8'));
}

const PRINTABLE = /^[ -~]*$/;
const asIs = (text: string): string => text;

class UnaryCallState implements UnaryCall {
  cancelled = false;
  onCancel: (() => void) | null = null;
  answered = false;
  private chunks: Buffer[] = [];
  private received = 0;
  private messageBytes = -1;
  private deadline: NodeJS.Timeout | null = null;

  constructor(
    readonly stream: H2Stream,
    private readonly handler: UnaryHandler,
    private readonly messageBytesMax: number,
  ) {}

  start(): void {
    const timeout = headerValue(this.stream.head, 'grpc-timeout');
    if (timeout !== undefined) {
      const ms = grpcTimeoutMs(timeout);
      if (ms === null) return this.fail(Status.INTERNAL, `Invalid grpc-timeout value "${timeout}"`);
      this.deadline = setTimeout(() => {
        this.fail(Status.DEADLINE_EXCEEDED, 'Deadline exceeded');
        this.cancel();
      }, ms);
    }
    this.stream.onData = (chunk) => this.onData(chunk);
    this.stream.onEnd = () => this.onEnd();
    this.stream.onAbort = () => this.cancel();
  }

  private onData(chunk: Buffer): void {
    if (this.answered) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    if (this.messageBytes < 0 && this.received >= MESSAGE_PREFIX_BYTES) {
      const head = this.chunks.length === 1 ? chunk : Buffer.concat(this.chunks);
      this.messageBytes = head.readUInt32BE(1);
      if (this.messageBytes > this.messageBytesMax)
        return this.fail(
          Status.RESOURCE_EXHAUSTED,
          `Received message larger than max (${this.messageBytes} vs ${this.messageBytesMax})`,
        );
    }
    if (this.messageBytes >= 0 && this.received > MESSAGE_PREFIX_BYTES + this.messageBytes)
      this.fail(
        Status.UNIMPLEMENTED,
        `Received a second request message for server streaming method ${this.stream.head.path}`,
      );
  }

  private onEnd(): void {
    if (this.answered) return;
    if (this.messageBytes < 0 || this.received !== MESSAGE_PREFIX_BYTES + this.messageBytes)
      return this.fail(
        Status.UNIMPLEMENTED,
        `Received no request message for server streaming method ${this.stream.head.path}`,
      );
    const whole = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = [];
    const request = whole.subarray(MESSAGE_PREFIX_BYTES);
    // As grpc-js: the compressed flag means the request's grpc-encoding (identity when it names none).
    const encoding = whole[0] === 0 ? 'identity' : (headerValue(this.stream.head, 'grpc-encoding') ?? 'identity');
    if (encoding === 'identity') return this.handle(request);
    if (encoding !== 'gzip' && encoding !== 'deflate')
      return this.fail(Status.UNIMPLEMENTED, `Received message compressed with unsupported encoding "${encoding}"`);
    const inflated = (error: Error | null, result: Buffer): void => {
      if (error === null) return this.handle(result);
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        return this.fail(
          Status.RESOURCE_EXHAUSTED,
          `Received message that decompresses to a size larger than ${this.messageBytesMax}`,
        );
      this.fail(Status.INTERNAL, 'Failed to decompress message');
    };
    const bound = { maxOutputLength: this.messageBytesMax };
    if (encoding === 'gzip') gunzip(request, bound, inflated);
    else inflate(request, bound, inflated);
  }

  private handle(request: Buffer): void {
    if (this.answered || this.cancelled) return;
    let answer: UnaryAnswer | Promise<UnaryAnswer> | undefined;
    try {
      answer = this.handler(request, this);
    } catch (error) {
      return this.fail(Status.INTERNAL, (error as Error).message ?? 'handler failed');
    }
    if (answer === undefined) return;
    if (answer instanceof Promise)
      answer.then(
        (value) => this.answer(value),
        (error: unknown) => this.fail(Status.INTERNAL, (error as Error)?.message ?? 'handler failed'),
      );
    else this.answer(answer);
  }

  answer(answer: UnaryAnswer): void {
    if ('message' in answer) {
      if (this.answered || this.cancelled) return;
      this.answered = true;
      this.clearDeadline();
      const body = Buffer.allocUnsafe(MESSAGE_PREFIX_BYTES + answer.message.length);
      body[0] = 0;
      body.writeUInt32BE(answer.message.length, 1);
      answer.message.copy(body, MESSAGE_PREFIX_BYTES);
      const trailers =
        answer.trailers === undefined
          ? OK_TRAILERS
          : encodeHeaderBlock([['grpc-status', '0'], ['grpc-message', 'OK'], ...answer.trailers]);
      this.stream.respond(OK_HEADERS, body, trailers);
    } else this.fail(answer.code, answer.details, answer.trailers);
  }

  /** fail answers trailers-only with a status (once; nothing after a cancel). */
  fail(code: number, details: string, trailers: readonly HeaderField[] = [], encoding = percentEncode): void {
    if (this.answered || this.cancelled) return;
    this.answered = true;
    this.clearDeadline();
    this.stream.respond(null, Buffer.alloc(0), [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-status', String(code)],
      ['grpc-message', encoding(details)],
      ...trailers,
    ]);
  }

  private cancel(): void {
    this.clearDeadline();
    if (this.cancelled) return;
    this.cancelled = true;
    if (!this.stream.closed) this.stream.reset(ErrorCode.CANCEL);
    this.onCancel?.();
  }

  private clearDeadline(): void {
    if (this.deadline !== null) clearTimeout(this.deadline);
    this.deadline = null;
  }
}

export interface GrpcUnaryRoutes {
  /** Handlers by path (`/package.Service/Method`). */
  handlers: ReadonlyMap<string, UnaryHandler>;
  messageBytesMax: number;
}

/** serveGrpcUnary is a connection's `onStream`: each request stream answered as a gRPC unary call. */
export function serveGrpcUnary(routes: GrpcUnaryRoutes): (stream: H2Stream) => void {
  return (stream) => {
    const head = stream.head;
    const call = new UnaryCallState(stream, routes.handlers.get(head.path) ?? unimplemented, routes.messageBytesMax);
    if (head.tooLarge)
      return call.fail(Status.RESOURCE_EXHAUSTED, `header list of ${head.listBytes} bytes above its bound`);
    if (head.method !== 'POST') return stream.respond(null, Buffer.alloc(0), [[':status', '405']]);
    const contentType = headerValue(head, 'content-type');
    if (contentType === undefined || !contentType.startsWith('application/grpc'))
      return stream.respond(null, Buffer.alloc(0), [[':status', '415']]);
    // grpc-js sends this one text as it is (the path printable, which the header-list check does not ask).
    if (!routes.handlers.has(head.path))
      return call.fail(
        Status.UNIMPLEMENTED,
        `The server does not implement the method ${head.path}`,
        [],
        PRINTABLE.test(head.path) ? asIs : percentEncode,
      );
    call.start();
  };
}

const unimplemented: UnaryHandler = () => ({ code: Status.UNIMPLEMENTED, details: 'unknown method' });
