// The client half of svc.admin.v1.Admin: the `svc` command's way into a running node, and a
// follower's way to pass a ChangeMember on to the leader. One channel per address; every call
// runs under a deadline.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/admin/v1/admin.js';
import { ADMIN_MESSAGE_BYTES_MAX } from './limits.js';

/** TRAILER_LEADER names the leader's gRPC address on a refusal from a member that is not the leader. */
export const TRAILER_LEADER = 'x-svc-leader';

const identity = (bytes: Buffer): Buffer => bytes;

/** AdminCallError is an Admin call's failure: a grpc status code, its details, and a leader hint when known. */
export class AdminCallError extends Error {
  constructor(readonly code: grpc.status, readonly details: string, readonly leaderHint = '') {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.name = 'AdminCallError';
  }
}

export interface AdminClientPoolOptions {
  credentials: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
}

export class AdminClientPool {
  private readonly clients = new Map<string, grpc.Client>();
  private closed = false;

  constructor(private readonly options: AdminClientPoolOptions) {}

  async status(to: string, deadlineAt: number): Promise<pb.StatusResponse> {
    const bytes = await this.call(to, pb.AdminService.status.path, Buffer.from(pb.StatusRequest.encode({}).finish()), deadlineAt);
    try {
      return pb.StatusResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed StatusResponse from ${to}: ${String(err)}`);
    }
  }

  async changeMember(to: string, request: pb.ChangeMemberRequest, deadlineAt: number): Promise<pb.ChangeMemberResponse> {
    const bytes = await this.call(to, pb.AdminService.changeMember.path, Buffer.from(pb.ChangeMemberRequest.encode(request).finish()), deadlineAt);
    try {
      return pb.ChangeMemberResponse.decode(bytes);
    } catch (err) {
      throw new AdminCallError(grpc.status.INTERNAL, `malformed ChangeMemberResponse from ${to}: ${String(err)}`);
    }
  }

  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer> {
    if (this.closed) return Promise.reject(new AdminCallError(grpc.status.UNAVAILABLE, 'admin client pool is closed'));
    let client = this.clients.get(to);
    if (!client) {
      try {
        client = new grpc.Client(to, this.options.credentials, {
          'grpc.max_receive_message_length': ADMIN_MESSAGE_BYTES_MAX, ...this.options.channelOptions,
        });
      } catch (err) {
        return Promise.reject(new AdminCallError(grpc.status.UNAVAILABLE, `cannot dial ${JSON.stringify(to)}: ${String(err)}`));
      }
      this.clients.set(to, client);
    }
    const channel = client;
    return new Promise<Buffer>((resolve, reject) => {
      channel.makeUnaryRequest<Buffer, Buffer>(path, identity, identity, request, new grpc.Metadata(), { deadline: deadlineAt },
        (err, value) => {
          if (err) {
            const hint = err.metadata?.get(TRAILER_LEADER)[0];
            reject(new AdminCallError(err.code, err.details, typeof hint === 'string' ? hint : ''));
            return;
          }
          resolve(value ?? Buffer.alloc(0));
        });
    });
  }
}
