// RpcStatus (the engine's view of a non-OK outcome) to and from grpc-js's
// {code, details, metadata}. Trailers such as x-svc-catchup and x-svc-term
// travel as the status's trailing metadata.
import { Metadata, status as grpcStatus, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { StatusCode, type RpcStatus } from '../../engine/rpc.js';

/** RpcStatusError is a thrown RpcStatus, e.g. from the FetchSnapshot iterable. */
export class RpcStatusError extends Error implements RpcStatus {
  readonly code: StatusCode;
  readonly details: string;
  readonly trailers: Record<string, string>;

  constructor(status: RpcStatus) {
    super(`${statusName(status.code)}: ${status.details}`);
    this.name = 'RpcStatusError';
    this.code = status.code;
    this.details = status.details;
    this.trailers = { ...status.trailers };
  }
}

export function rpcStatus(code: StatusCode, details: string, trailers: Record<string, string> = {}): RpcStatus {
  return { code, details, trailers };
}

/** statusName is the gRPC name of a status code, e.g. FAILED_PRECONDITION. */
export function statusName(code: number): string {
  return grpcStatus[code] ?? `STATUS_${code}`;
}

/**
 * trailersToMetadata copies trailers into grpc Metadata. A key or value grpc
 * cannot carry is reported in `rejected` rather than thrown: one bad trailer
 * must not turn a protocol answer into a crash.
 */
export function trailersToMetadata(trailers: Record<string, string>): { metadata: Metadata; rejected: string[] } {
  const metadata = new Metadata();
  const rejected: string[] = [];
  for (const [key, value] of Object.entries(trailers)) {
    try {
      if (key.endsWith('-bin') || key.startsWith('grpc-')) throw new Error('reserved key');
      metadata.set(key, value);
    } catch {
      rejected.push(key);
    }
  }
  return { metadata, rejected };
}

/** toServiceError shapes an RpcStatus the way grpc-js's server reads an error: code, details, metadata. */
export function toServiceError(status: RpcStatus): { error: Partial<ServiceError>; rejected: string[] } {
  const { metadata, rejected } = trailersToMetadata(status.trailers);
  const error = Object.assign(new Error(status.details), { code: status.code, details: status.details, metadata });
  return { error, rejected };
}

const ENGINE_CODES: ReadonlySet<number> = new Set(Object.values(StatusCode));

/** PROTOCOL_TRAILER_PREFIX marks our protocol's trailers; HTTP/2 and grpc headers around them are not passed on. */
export const PROTOCOL_TRAILER_PREFIX = 'x-svc-';

/** metadataTrailers reads the protocol's (x-svc-*) string-valued entries of a status's trailing metadata. */
export function metadataTrailers(metadata: Metadata | undefined | null): Record<string, string> {
  const trailers: Record<string, string> = {};
  if (!metadata) return trailers;
  for (const [key, value] of Object.entries(metadata.getMap())) {
    if (typeof value === 'string' && key.startsWith(PROTOCOL_TRAILER_PREFIX)) trailers[key] = value;
  }
  return trailers;
}

/**
 * fromStatusObject turns a grpc-js status (or ServiceError) into an RpcStatus. A code the engine
 * does not name (UNAUTHENTICATED, UNKNOWN, ...) becomes UNAVAILABLE, the engine's "this peer
 * cannot answer now", and keeps its original name in the details.
 */
export function fromStatusObject(
  status: Pick<StatusObject, 'code' | 'details'> & { metadata?: Metadata | null },
): RpcStatus {
  return statusFromCode(status.code, status.details, metadataTrailers(status.metadata));
}

/** statusFromCode is fromStatusObject's mapping for a status read off the wire by other means (lean-unary.ts). */
export function statusFromCode(code: number, details: string, trailers: Record<string, string>): RpcStatus {
  if (ENGINE_CODES.has(code) && code !== StatusCode.OK) return { code: code as StatusCode, details, trailers };
  return { code: StatusCode.UNAVAILABLE, details: `${statusName(code)}: ${details}`, trailers };
}
