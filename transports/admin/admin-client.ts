// The client half of svc.admin.v1.Admin: the `svc` command's way into a running node, with an admin
// certificate. One channel per address; every call runs under a deadline.
//
// Members' host names are looked up as a node looks its peers' up: with c-ares (PeerNames, through the `svc-peer`
// grpc-js resolver, transports/grpc/peer-resolver.ts), cancelled by close(). grpc-js's own resolver calls
// getaddrinfo in libuv's threadpool, which cannot be cancelled and which process.exit waits for: a command that
// gave up at its deadline on a name the DNS did not answer lived on until the system resolver gave up too.
import * as grpc from '@grpc/grpc-js';
import type { AdminResultCode } from '../../engine/types.js';
import * as pb from '../../proto/gen/svc/admin/v1/admin.js';
import * as storePb from '../../proto/gen/svc/store/v1/store.js';
import { TRAILER_LEADER, TRAILER_REFUSAL_CODE, UnaryCallError, UnaryChannels } from '../grpc/unary-call.js';
import { DEFAULT_GRPC_LIMITS } from '../grpc/limits.js';
import { PEER_NAMES_OPTION } from '../grpc/peer-resolver.js';
import { PeerNames } from '../node/peer-names.js';
import { ADMIN_MESSAGE_BYTES_MAX } from './limits.js';

export { TRAILER_LEADER, TRAILER_REFUSAL_CODE };

/**
 * RETRYABLE_ADMIN_CODES: the refusals (AdminResultCode, sent as TRAILER_REFUSAL_CODE) that waiting
 * and asking again can cure: no leader here, the leader's term not committed yet, another change or
 * a learner's catch-up still under way. 'leadership-lost' is not one: the op may have happened.
 */
export const RETRYABLE_ADMIN_CODES: ReadonlySet<string> = new Set<AdminResultCode>([
  'not-leader',
  'term-not-committed',
  'change-in-flight',
  'learner-behind',
]);

/** AdminCallError is an Admin call's failure: a grpc status code, its details, and a leader hint when known. */
export class AdminCallError extends UnaryCallError {}

export interface AdminClientPoolOptions {
  credentials: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
  /**
   * nameLookupTimeoutMs bounds one DNS query attempt for a member's host name (default: the node's,
   * DEFAULT_GRPC_LIMITS.nameLookupTimeoutMs); the call's deadline bounds the whole lookup.
   */
  nameLookupTimeoutMs?: number;
}

export class AdminClientPool {
  private readonly channels: UnaryChannels;
  private readonly names: PeerNames;

  constructor(options: AdminClientPoolOptions) {
    this.names = new PeerNames(options.nameLookupTimeoutMs ?? DEFAULT_GRPC_LIMITS.nameLookupTimeoutMs);
    this.channels = new UnaryChannels({
      credentials: options.credentials,
      channelOptions: {
        'grpc.max_receive_message_length': ADMIN_MESSAGE_BYTES_MAX,
        [PEER_NAMES_OPTION]: this.names,
        ...options.channelOptions,
      },
      poolName: 'admin client pool',
      errorOf: (code, details, leaderHint, refusalCode) => new AdminCallError(code, details, leaderHint, refusalCode),
    });
  }

  async status(to: string, deadlineAt: number): Promise<pb.StatusResponse> {
    const bytes = await this.channels.call(
      to,
      pb.AdminService.status.path,
      Buffer.from(pb.StatusRequest.encode({}).finish()),
      deadlineAt,
    );
    try {
      return pb.StatusResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed StatusResponse from ${to}: ${String(err)}`);
    }
  }

  async changeMember(
    to: string,
    request: pb.ChangeMemberRequest,
    deadlineAt: number,
  ): Promise<pb.ChangeMemberResponse> {
    const bytes = await this.channels.call(
      to,
      pb.AdminService.changeMember.path,
      Buffer.from(pb.ChangeMemberRequest.encode(request).finish()),
      deadlineAt,
    );
    try {
      return pb.ChangeMemberResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed ChangeMemberResponse from ${to}: ${String(err)}`);
    }
  }

  /** propose commits an encoded store command through the member at `to` (which reaches the leader itself). */
  async propose(to: string, command: Uint8Array, deadlineAt: number): Promise<storePb.ProposeResponse> {
    const bytes = await this.channels.call(
      to,
      pb.AdminService.propose.path,
      // No request id beside it: the member decodes the operator's command to check it anyway (store-link.ts).
      Buffer.from(storePb.ProposeRequest.encode({ command, requestId: '' }).finish()),
      deadlineAt,
    );
    try {
      return storePb.ProposeResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed ProposeResponse from ${to}: ${String(err)}`);
    }
  }

  /**
   * backup reads an Admin.Backup stream from the member at `to`: the header, then the file chunks, each
   * decoded. A failure is thrown as AdminCallError (with the leader hint and refusal code it carried).
   */
  async *backup(to: string, deadlineAt: number): AsyncGenerator<pb.BackupChunk> {
    const call = this.channels.openServerStream(
      to,
      pb.AdminService.backup.path,
      Buffer.from(pb.BackupRequest.encode({}).finish()),
      deadlineAt,
    );
    try {
      for await (const bytes of call as AsyncIterable<Buffer>) {
        let chunk: pb.BackupChunk;
        try {
          chunk = pb.BackupChunk.decode(bytes);
        } catch (err) {
          throw new AdminCallError(grpc.status.INTERNAL, `malformed BackupChunk from ${to}: ${String(err)}`);
        }
        yield chunk;
      }
    } catch (err) {
      if (err instanceof AdminCallError) throw err;
      throw this.channels.callErrorOf(err);
    } finally {
      call.cancel();
    }
  }

  /** recording lists the node's flight recording segments (name '') or reads a chunk of one. */
  async recording(to: string, request: pb.RecordingRequest, deadlineAt: number): Promise<pb.RecordingResponse> {
    const bytes = await this.channels.call(
      to,
      pb.AdminService.recording.path,
      Buffer.from(pb.RecordingRequest.encode(request).finish()),
      deadlineAt,
    );
    try {
      return pb.RecordingResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed RecordingResponse from ${to}: ${String(err)}`);
    }
  }

  /** logs reads the node's recent log lines in a time window (its in-memory ring). */
  async logs(to: string, request: pb.LogsRequest, deadlineAt: number): Promise<pb.LogsResponse> {
    const bytes = await this.channels.call(
      to,
      pb.AdminService.logs.path,
      Buffer.from(pb.LogsRequest.encode(request).finish()),
      deadlineAt,
    );
    try {
      return pb.LogsResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed LogsResponse from ${to}: ${String(err)}`);
    }
  }

  /** close closes the channels and cancels the name lookups still waiting. */
  close(): void {
    this.channels.close();
    this.names.close();
  }
}
