// Requests are decoded and checked against GrpcLimits before any handler sees
// them: a peer's bad input becomes INVALID_ARGUMENT with a reason, never a throw.
import { StatusCode, type RpcMethod, type RpcRequest, type RpcStatus } from '../../engine/rpc.js';
import type { GrpcLimits } from './limits.js';
import { decodeRequest } from './methods.js';

export type CheckedRequest = { ok: true; request: RpcRequest } | { ok: false; status: RpcStatus };

export function decodeCheckedRequest(method: RpcMethod, bytes: Uint8Array, limits: GrpcLimits): CheckedRequest {
  let request: RpcRequest;
  try {
    request = decodeRequest(method, bytes);
  } catch (err) {
    return invalid(`malformed ${method} request: ${err instanceof Error ? err.message : String(err)}`);
  }
  const problem = requestProblem(request, limits);
  return problem === null ? { ok: true, request } : invalid(problem);
}

/** requestProblem names the first limit a decoded request breaks, or returns null. */
export function requestProblem(request: RpcRequest, limits: GrpcLimits): string | null {
  // for-in and the UTF-16 length first: no array per call, and no UTF-8 count for a string that cannot be too long
  // (a UTF-16 code unit is at most 3 UTF-8 bytes).
  const body = request.body as unknown as Record<string, unknown>;
  for (const field in body) {
    const value = body[field];
    if (
      typeof value === 'string' &&
      value.length * 3 > limits.stringFieldBytesMax &&
      Buffer.byteLength(value) > limits.stringFieldBytesMax
    ) {
      return (
        `${request.method} field ${field} is ${Buffer.byteLength(value)} bytes, above stringFieldBytesMax ` +
        `${limits.stringFieldBytesMax}`
      );
    }
  }
  if (request.method === 'Heartbeat') {
    const entryCount = Object.keys(request.body.replicationLag).length;
    if (entryCount > limits.replicationLagEntryCountMax) {
      return (
        `Heartbeat replication_lag has ${entryCount} entries, above replicationLagEntryCountMax ` +
        `${limits.replicationLagEntryCountMax}`
      );
    }
  }
  return null;
}

function invalid(details: string): CheckedRequest {
  return { ok: false, status: { code: StatusCode.INVALID_ARGUMENT, details, trailers: {} } };
}
