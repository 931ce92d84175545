// The svc.admin.v1.Admin gRPC service (proto/svc/admin/v1/admin.proto), the server half: served on
// the node's peer server beside WalShipping, where the peer gate lets in admin certificates of this
// cluster only (docs/protocol.md, "Identity and trust"). Status answers from this node; ChangeMember
// runs on the leader, and a follower answers "not the leader" naming it (the caller retries there);
// Propose hands a store command to the node (host.propose), whose store router reaches the leader with
// the node's own peer certificate; Backup streams the state the node captures at a committed index
// (host.backup; backup-service.ts); Recording and Logs answer what `svc debug bundle` gathers.
import * as grpc from '@grpc/grpc-js';
import type { AdminOp, AdminResultCode, MemberFilter } from '../../engine/types.js';
import { filterProblem } from '../../engine/communities.js';
import * as pb from '../../proto/gen/svc/admin/v1/admin.js';
import * as storePb from '../../proto/gen/svc/store/v1/store.js';
import type { LogRingRead, LogRingWindow } from '../node/log-ring.js';
import type { NodeStatusDocument } from '../node/node-status.js';
import { UnaryCallError } from '../grpc/unary-call.js';
import { callerOf } from '../grpc/peer-identity.js';
import { AdminCallError, TRAILER_LEADER, TRAILER_REFUSAL_CODE } from './admin-client.js';
import { backupHandler, type BackupCapture, type BackupLimits } from './backup-service.js';
import { ADMIN_CALL_DEADLINE_MS, ADMIN_LOGS_BYTES_MAX, ADMIN_NAME_BYTES_MAX } from './limits.js';
import { readRecording } from './recording-reads.js';
import { adminStatusResponse, type SeenHeartbeat } from './status-response.js';

const identity = (bytes: Buffer): Buffer => bytes;

/** ADMIN_METHODS are the service's paths by implementation name. */
export const ADMIN_METHODS = {
  status: pb.AdminService.status.path,
  changeMember: pb.AdminService.changeMember.path,
  propose: pb.AdminService.propose.path,
  backup: pb.AdminService.backup.path,
  recording: pb.AdminService.recording.path,
  logs: pb.AdminService.logs.path,
} as const;

/** STREAMING_METHODS are the Admin methods that answer with a stream. */
const STREAMING_METHODS: ReadonlySet<string> = new Set(['backup']);

/** AdminRefusedError: the engine refused an admin op (its adminResult code, and the reason for people). */
export class AdminRefusedError extends Error {
  override readonly name = 'AdminRefusedError';
  constructor(
    readonly code: AdminResultCode,
    readonly reason: string,
  ) {
    super(`admin operation refused (${code}): ${reason}`);
  }
}

/** AdminHost is what the service needs from its node. */
export interface AdminHost {
  /** status is the node's /status document; it throws while the node is not running. */
  status(): NodeStatusDocument;
  /** own is this node's heartbeat measurements now and its advertised addresses. */
  own(): {
    entityCount: number;
    signalThroughputEps: number;
    diskBytes: number;
    grpcAddr: string;
    httpAddr: string;
    /** metricsAddr is the metrics listener's base, http://host:port ('' when unknown). */
    metricsAddr?: string;
  };
  lastHeartbeat(): SeenHeartbeat | null;
  /** admin runs the operation on this node's engine; it rejects with AdminRefusedError when the engine refuses it. */
  admin(op: AdminOp, timeoutMs: number): Promise<void>;
  /** handOff hands this leader's leadership to its most caught-up voter (a leader asked to leave goes first). */
  handOff(): Promise<unknown>;
  /**
   * propose gets an encoded store command committed at the leader, wherever it is (the node's store router).
   * It rejects with a UnaryCallError (its code and leader hint are answered) or anything else (INTERNAL).
   */
  propose(command: Uint8Array, deadlineAt: number): Promise<{ seq: number; result: storePb.CommandResult | undefined }>;
  /** commandBytesMax bounds a command Propose takes. */
  commandBytesMax: number;
  /**
   * backup captures the state machine at a committed index: a read index taken after the call, then the
   * state once this node has applied that far. It rejects like propose (a UnaryCallError's code is answered).
   */
  backup(deadlineAt: number): Promise<BackupCapture>;
  /** recordingDir is the node's flight recording directory, null when it records nothing. */
  recordingDir?: string | null;
  /** logs reads the node's recent log lines (its LogRing); absent when it keeps none. */
  logs?: (window: LogRingWindow) => LogRingRead;
}

export interface AdminServiceOptions {
  host: AdminHost;
  onWarning?: (message: string) => void;
  /** backupLimits override the named backup limits (limits.ts), for tests. */
  backupLimits?: Partial<BackupLimits>;
}

/** adminServiceDefinition registers the Admin paths with byte-for-byte serializers (decoding happens here). */
export function adminServiceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, path] of Object.entries(ADMIN_METHODS)) {
    definition[name] = {
      path,
      requestStream: false,
      responseStream: STREAMING_METHODS.has(name),
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  return definition;
}

/** ADMIN_MEMBER_METHODS take a member's peer certificate too (the server's memberMethods): only for its own leave. */
export const ADMIN_MEMBER_METHODS: readonly string[] = ['changeMember'];

const CHANGE_OPS: Partial<Record<pb.MemberChange, Exclude<AdminOp['op'], 'filter'>>> = {
  [pb.MemberChange.MEMBER_CHANGE_PROMOTE]: 'promote',
  [pb.MemberChange.MEMBER_CHANGE_REMOVE]: 'remove',
  [pb.MemberChange.MEMBER_CHANGE_TRANSFER]: 'transfer',
  [pb.MemberChange.MEMBER_CHANGE_LEAVE]: 'leave',
};

type AdminHandler = (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => void;

/** failAdminCall answers a handler's failure: an AdminCallError as it says (with its trailers), anything else INTERNAL. */
function failAdminCall(
  options: AdminServiceOptions,
  respond: grpc.sendUnaryData<Buffer>,
  err: unknown,
  method: string,
): void {
  const known = err instanceof AdminCallError ? err : null;
  if (!known) options.onWarning?.(`Admin ${method} failed: ${String(err)}`);
  const code = known?.code ?? grpc.status.INTERNAL;
  const metadata = new grpc.Metadata();
  if (known && known.leaderHint !== '') metadata.set(TRAILER_LEADER, known.leaderHint);
  if (known && known.refusalCode !== '') metadata.set(TRAILER_REFUSAL_CODE, known.refusalCode);
  respond({ code, details: known?.details ?? 'admin handler failed', metadata }, null);
}

/** deadlineOf is a call's deadline as epoch ms, at most ADMIN_CALL_DEADLINE_MS away. */
function deadlineOf(call: { getDeadline(): grpc.Deadline }): number {
  const deadline = call.getDeadline();
  const asked = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  const fallback = Date.now() + ADMIN_CALL_DEADLINE_MS;
  return Number.isFinite(asked) && asked > 0 ? Math.min(asked, fallback) : fallback;
}

/** runningStatus is the node's status, or UNAVAILABLE while it is not running. */
function runningStatus(host: AdminServiceOptions['host']): NodeStatusDocument {
  try {
    return host.status();
  } catch (err) {
    throw new AdminCallError(grpc.status.UNAVAILABLE, `node is not running: ${(err as Error).message}`);
  }
}

/** changeMember carries out one membership change at the leader (a follower names the leader to retry at). */
async function changeMember(
  host: AdminServiceOptions['host'],
  request: pb.ChangeMemberRequest,
  deadlineAt: number,
): Promise<pb.ChangeMemberResponse> {
  const filtering = request.change === pb.MemberChange.MEMBER_CHANGE_FILTER;
  const op = filtering ? 'filter' : CHANGE_OPS[request.change];
  if (op === undefined)
    throw new AdminCallError(
      grpc.status.INVALID_ARGUMENT,
      `change must be promote, remove, transfer, leave or filter, got ${request.change}`,
    );
  const filter = filtering ? filterOfRequest(request) : null;
  if (request.name === '' || Buffer.byteLength(request.name) > ADMIN_NAME_BYTES_MAX) {
    throw new AdminCallError(grpc.status.INVALID_ARGUMENT, `member name must be 1..${ADMIN_NAME_BYTES_MAX} bytes`);
  }
  const status = runningStatus(host);
  if (status.role !== 'leader') {
    if (status.leaderGrpcAddr === '' || status.leaderId === status.id) {
      throw new AdminCallError(grpc.status.UNAVAILABLE, `${status.name} is ${status.role} and knows no leader; retry`);
    }
    throw new AdminCallError(
      grpc.status.FAILED_PRECONDITION,
      `${status.name} is not the leader; retry at ${status.leaderGrpcAddr}`,
      status.leaderGrpcAddr,
      'not-leader' satisfies AdminResultCode,
    );
  }
  const member = status.members.find((m) => m.name === request.name);
  if (!member) throw new AdminCallError(grpc.status.NOT_FOUND, `no member named ${JSON.stringify(request.name)}`);
  if (member.role === 'removed')
    throw new AdminCallError(grpc.status.FAILED_PRECONDITION, `member ${request.name} (id ${member.id}) was removed`);
  if (op === 'leave' && member.id === status.id) {
    // The leader cannot remove itself: it hands leadership over, and the caller retries at the new leader.
    await host.handOff();
    const after = runningStatus(host);
    throw new AdminCallError(
      grpc.status.FAILED_PRECONDITION,
      `${status.name} was the leader and handed leadership over before leaving; retry at ${after.leaderGrpcAddr || 'the new leader'}`,
      after.role === 'leader' ? '' : after.leaderGrpcAddr,
      'not-leader' satisfies AdminResultCode,
    );
  }
  const timeoutMs = Math.max(1, deadlineAt - Date.now());
  try {
    await host.admin(op === 'filter' ? { op, memberId: member.id, filter } : { op, memberId: member.id }, timeoutMs);
  } catch (err) {
    throw adminRefusal(err as Error, status.leaderGrpcAddr);
  }
  return { memberId: member.id, leaderName: status.name, detail: '' };
}

/**
 * filterOfRequest reads a MEMBER_CHANGE_FILTER's filter (null: `clear`), refusing a malformed one with
 * INVALID_ARGUMENT before anything reaches the leader (the engine checks it again: bad-filter).
 */
function filterOfRequest(request: pb.ChangeMemberRequest): MemberFilter | null {
  if (request.clear) {
    if (request.prefixes.length > 0 || request.tenants.length > 0)
      throw new AdminCallError(grpc.status.INVALID_ARGUMENT, 'a filter clear takes no prefixes or tenants');
    return null;
  }
  const filter: MemberFilter = { prefixes: request.prefixes, tenants: request.tenants };
  const problem = filterProblem(filter);
  if (problem !== null) throw new AdminCallError(grpc.status.INVALID_ARGUMENT, `bad filter: ${problem}`);
  return filter;
}

/** Status: the node's status document. */
function statusHandler(options: AdminServiceOptions): AdminHandler {
  const { host } = options;
  const fail = (respond: grpc.sendUnaryData<Buffer>, err: unknown, method: string): void =>
    failAdminCall(options, respond, err, method);
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
    try {
      pb.StatusRequest.decode(call.request);
    } catch (err) {
      respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed StatusRequest: ${String(err)}` }, null);
      return;
    }
    try {
      const response = adminStatusResponse(runningStatus(host), host.own(), host.lastHeartbeat());
      respond(null, Buffer.from(pb.StatusResponse.encode(response).finish()));
    } catch (err) {
      fail(respond, err, 'Status');
    }
  };
}

/** Propose: an admin proposal of a store command (`svc keys create`), bounded by commandBytesMax. */
function proposeHandler(options: AdminServiceOptions): AdminHandler {
  const { host } = options;
  const fail = (respond: grpc.sendUnaryData<Buffer>, err: unknown, method: string): void =>
    failAdminCall(options, respond, err, method);
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
    let request: storePb.ProposeRequest;
    try {
      request = storePb.ProposeRequest.decode(call.request);
    } catch (err) {
      respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ProposeRequest: ${String(err)}` }, null);
      return;
    }
    if (request.command.length > host.commandBytesMax) {
      respond(
        {
          code: grpc.status.INVALID_ARGUMENT,
          details: `command is ${request.command.length} bytes, above commandBytesMax ${host.commandBytesMax}`,
        },
        null,
      );
      return;
    }
    host.propose(request.command, deadlineOf(call)).then(
      (answer) => respond(null, Buffer.from(storePb.ProposeResponse.encode(answer).finish())),
      (err: unknown) =>
        fail(
          respond,
          err instanceof UnaryCallError && !(err instanceof AdminCallError)
            ? new AdminCallError(err.code, err.details, err.leaderHint, err.refusalCode)
            : err,
          'Propose',
        ),
    );
  };
}

/** Recording: the node's flight recording segments, or a chunk of one. */
function recordingHandler(options: AdminServiceOptions): AdminHandler {
  const { host } = options;
  const fail = (respond: grpc.sendUnaryData<Buffer>, err: unknown, method: string): void =>
    failAdminCall(options, respond, err, method);
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
    let request: pb.RecordingRequest;
    try {
      request = pb.RecordingRequest.decode(call.request);
    } catch (err) {
      respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed RecordingRequest: ${String(err)}` }, null);
      return;
    }
    readRecording(host.recordingDir ?? null, request).then(
      (response) => respond(null, Buffer.from(pb.RecordingResponse.encode(response).finish())),
      (err: unknown) => fail(respond, err, 'Recording'),
    );
  };
}

/** Logs: the node's recent log lines in a time window, from its bounded in-memory ring. */
function logsHandler(options: AdminServiceOptions): AdminHandler {
  const { host } = options;
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
    let request: pb.LogsRequest;
    try {
      request = pb.LogsRequest.decode(call.request);
    } catch (err) {
      respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed LogsRequest: ${String(err)}` }, null);
      return;
    }
    if (!host.logs) {
      respond({ code: grpc.status.FAILED_PRECONDITION, details: 'this node keeps no log lines' }, null);
      return;
    }
    try {
      const read = host.logs({
        sinceMs: request.sinceUnixMs,
        untilMs: request.untilUnixMs,
        bytesMax: ADMIN_LOGS_BYTES_MAX,
      });
      const response: pb.LogsResponse = { lines: read.lines, dropped: read.dropped, oldestUnixMs: read.oldestMs };
      respond(null, Buffer.from(pb.LogsResponse.encode(response).finish()));
    } catch (err) {
      failAdminCall(options, respond, err, 'Logs');
    }
  };
}

/** ChangeMember: promote, remove, transfer or leave; a peer certificate may only make its own member leave. */
function changeMemberHandler(options: AdminServiceOptions): AdminHandler {
  const { host } = options;
  const fail = (respond: grpc.sendUnaryData<Buffer>, err: unknown, method: string): void =>
    failAdminCall(options, respond, err, method);
  return (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
    let request: pb.ChangeMemberRequest;
    try {
      request = pb.ChangeMemberRequest.decode(call.request);
    } catch (err) {
      respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ChangeMemberRequest: ${String(err)}` }, null);
      return;
    }
    // A member's own peer certificate (the server let it through: ADMIN_MEMBER_METHODS) may only make that
    // member leave: a pod going away needs no admin credential, and can remove nobody else.
    const caller = callerOf(call);
    if (
      caller.identity?.role === 'peer' &&
      (request.change !== pb.MemberChange.MEMBER_CHANGE_LEAVE || request.name !== caller.identity.name)
    ) {
      respond(
        {
          code: grpc.status.PERMISSION_DENIED,
          details: `a peer certificate (${caller.identity.name}) may only make its own member leave`,
        },
        null,
      );
      return;
    }
    changeMember(host, request, deadlineOf(call)).then(
      (response) => respond(null, Buffer.from(pb.ChangeMemberResponse.encode(response).finish())),
      (err: unknown) => fail(respond, err, 'ChangeMember'),
    );
  };
}

/** backupHandlerOf is Backup's streaming handler (backup-service.ts) on this node's capture. */
function backupHandlerOf(options: AdminServiceOptions): ReturnType<typeof backupHandler> {
  const { host } = options;
  return backupHandler({
    capture: (deadlineAt) => host.backup(deadlineAt),
    deadlineOf,
    limits: options.backupLimits,
    refusal: (err) => {
      if (err instanceof AdminCallError) return err;
      if (err instanceof UnaryCallError)
        return new AdminCallError(err.code, err.details, err.leaderHint, err.refusalCode);
      options.onWarning?.(`Admin Backup failed: ${String(err)}`);
      return new AdminCallError(
        grpc.status.INTERNAL,
        `backup failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    },
  });
}

export function adminServiceImplementation(options: AdminServiceOptions): grpc.UntypedServiceImplementation {
  return {
    backup: backupHandlerOf(options),
    status: statusHandler(options),
    propose: proposeHandler(options),
    recording: recordingHandler(options),
    logs: logsHandler(options),
    changeMember: changeMemberHandler(options),
  };
}

/**
 * adminRefusal names how Node.admin's rejection reads on the wire: the engine's refusal is
 * FAILED_PRECONDITION with its reason (the leader says "retry" where retrying helps), a missing
 * answer DEADLINE_EXCEEDED, a node that stopped or failed UNAVAILABLE.
 */
function adminRefusal(err: Error, leaderHint: string): AdminCallError {
  if (err instanceof AdminRefusedError)
    return new AdminCallError(grpc.status.FAILED_PRECONDITION, err.reason, leaderHint, err.code);
  if (/got no answer within/.test(err.message)) return new AdminCallError(grpc.status.DEADLINE_EXCEEDED, err.message);
  return new AdminCallError(grpc.status.UNAVAILABLE, err.message);
}
