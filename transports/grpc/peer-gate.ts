// PeerGate decides, before the engine sees a call, whether the caller may make it at all: the edge half
// of the trust rules (docs/protocol.md, "Identity and trust"). The engine half (a sender that is not in
// the roster changes nothing) is the engine's; the gate makes sure the sender the engine is told about
// is the one the certificate names.
//
//   1. Role: WalShipping and svc.store.v1 take peer certificates only; svc.admin.v1 admin ones only (but the
//      server's memberMethods: ChangeMember takes a member's own certificate, for its own leave).
//   2. Cluster: the certificate's cluster id and the call's `svc-cluster-id` metadata must both be this
//      node's (an admin call may leave the metadata out: its certificate names the cluster).
//   3. Values: every term, seqno, count and id fits the engine with room to increment (engine/values.ts;
//      the engine checks again, and checks the segment frame's values when it decodes the payload).
//   4. Claims: the member ids a message names as its sender (leader_region, candidate_region,
//      reporter_shard, region_id, shard_id) must be the id of the certificate's name in this node's
//      roster; a name not in the roster may not claim an id another member holds. A JoinCluster must
//      name the certificate's holder. StreamSegments, FetchSnapshot and svc.store.v1 serve members only.
//   5. JoinCluster's names and addresses are well formed (join-fields.ts), else accepted=false.
// Identity refusals are PERMISSION_DENIED (a code the engine does not act on: to a sender it is an
// unavailable peer); bad values INVALID_ARGUMENT naming the field.
import { status as grpcStatus } from '@grpc/grpc-js';
import type { RpcRequest, RpcResponse } from '../../engine/rpc.js';
import { joinRequestProblem } from './join-fields.js';
import type { Caller, CertRole } from './peer-identity.js';
import { requestValueProblem } from '../../engine/values.js';

/** RefusalReason labels svc_peer_calls_refused_total. */
export type RefusalReason =
  | 'no-role'
  | 'wrong-role'
  | 'cluster-mismatch'
  | 'cluster-missing'
  | 'claim-mismatch'
  | 'not-member'
  | 'bad-value'
  | 'bad-join';

export const REFUSAL_REASONS: readonly RefusalReason[] = [
  'no-role',
  'wrong-role',
  'cluster-mismatch',
  'cluster-missing',
  'claim-mismatch',
  'not-member',
  'bad-value',
  'bad-join',
];

export interface Refusal {
  /** code is a grpc status code (PERMISSION_DENIED is not one the engine names, so it is not a StatusCode). */
  code: grpcStatus;
  details: string;
  reason: RefusalReason;
}

/** GateVerdict: let the call through, refuse it with a status, or answer it here (a JoinCluster refusal). */
export type GateVerdict = { pass: true } | { pass: false; refusal: Refusal; response?: RpcResponse };

export interface PeerGateOptions {
  /** clusterId is this node's cluster; '' only on a plaintext node that knows none (then nothing is compared). */
  clusterId: string;
  /**
   * requireCertificate: the node serves mutual TLS, so every call must come with a verified client certificate.
   * grpc-js reports a connection it did not verify as having no TLS at all; this keeps such a call from passing
   * as a plaintext one.
   */
  requireCertificate?: boolean;
  /** memberIdByName is the id of the member so named in this node's current roster (removed ones too), or 0. */
  memberIdByName(name: string): number;
  /** memberNameById is the name of the member with this id in this node's current roster, if any. */
  memberNameById(id: number): string | undefined;
}

const PASS: GateVerdict = { pass: true };

export class PeerGate {
  constructor(private readonly options: PeerGateOptions) {}

  get clusterId(): string {
    return this.options.clusterId;
  }

  /**
   * callerRefusal checks the caller's certificate role and cluster for a service that takes `role` certificates.
   * metadataOptional: the call may leave out svc-cluster-id (admin calls, and a member's own leave through the
   * Admin service: its certificate names the cluster, checked above).
   */
  callerRefusal(caller: Caller, role: CertRole, service: string, metadataOptional = role === 'admin'): Refusal | null {
    const ours = this.options.clusterId;
    if (!caller.tls && this.options.requireCertificate === true)
      return denied('no-role', `${service} refused: no verified client certificate`);
    if (caller.tls) {
      if (caller.identity === null) return denied('no-role', `${service} refused: ${caller.problem}`);
      const { identity } = caller;
      if (identity.role !== role) {
        return denied(
          'wrong-role',
          `${service} accepts ${role} certificates only; the caller's is an ${identity.role} certificate (${identity.name})`,
        );
      }
      if (ours !== '' && identity.clusterId !== ours) {
        return denied(
          'cluster-mismatch',
          `${service} refused: the caller's certificate is of cluster ${identity.clusterId}, this node's is ${ours}`,
        );
      }
    }
    if (ours === '') return null;
    if (caller.clusterId === '') {
      // An admin certificate names its cluster; a plaintext admin caller has nothing to name.
      if (metadataOptional) return null;
      return denied(
        'cluster-missing',
        `${service} refused: the call carries no svc-cluster-id metadata (this node is of cluster ${ours})`,
      );
    }
    if (caller.clusterId !== ours) {
      return denied(
        'cluster-mismatch',
        `${service} refused: the call names cluster ${JSON.stringify(caller.clusterId.slice(0, 64))}, this node's is ${ours}`,
      );
    }
    return null;
  }

  /** memberRefusal refuses a certificate whose name is not in this node's roster (a service for members only). */
  memberRefusal(caller: Caller, service: string): Refusal | null {
    if (!caller.tls || caller.identity === null || this.options.memberIdByName(caller.identity.name) !== 0) return null;
    return denied('not-member', `${service} serves members only; ${caller.identity.name} is not in this node's roster`);
  }

  /** walShipping is the verdict on one decoded WalShipping request from a caller callerRefusal passed. */
  walShipping(request: RpcRequest, caller: Caller): GateVerdict {
    const valueProblem = requestValueProblem(request);
    if (valueProblem !== null)
      return {
        pass: false,
        refusal: { code: grpcStatus.INVALID_ARGUMENT, details: valueProblem, reason: 'bad-value' },
      };
    if (caller.tls) {
      const claim = this.claimRefusal(request, caller.identity!.name);
      if (claim) return { pass: false, refusal: claim };
    }
    if (request.method === 'JoinCluster') {
      const problem = joinRequestProblem(request.body);
      if (problem !== null) {
        const refusalReason = `invalid: ${problem}`;
        return {
          pass: false,
          refusal: { code: grpcStatus.OK, details: refusalReason, reason: 'bad-join' },
          response: {
            method: 'JoinCluster',
            body: {
              accepted: false,
              refusalReason,
              assignedId: 0,
              term: 0,
              leaderRegion: '',
              leaderGrpcAddr: '',
              leaderHttpAddr: '',
              members: [],
              membershipVersion: 0,
            },
          },
        };
      }
    }
    return PASS;
  }

  /** claimRefusal matches the sender a message names against the certificate's holder. */
  private claimRefusal(request: RpcRequest, certName: string): Refusal | null {
    const certId = this.options.memberIdByName(certName);
    if (request.method === 'JoinCluster') {
      return request.body.name === certName
        ? null
        : denied(
            'claim-mismatch',
            `JoinCluster names ${JSON.stringify(request.body.name.slice(0, 64))}, but the certificate is ${certName}'s`,
          );
    }
    if (request.method === 'StreamSegments' || request.method === 'FetchSnapshot') {
      return certId !== 0
        ? null
        : denied('not-member', `${request.method} serves members only; ${certName} is not in this node's roster`);
    }
    for (const [field, id] of senderClaims(request)) {
      if (id === 0 || id === certId) continue;
      if (certId !== 0) {
        return denied(
          'claim-mismatch',
          `${request.method} ${field} ${id} is not the sender: the certificate is ${certName}'s, member ${certId}`,
        );
      }
      const holder = this.options.memberNameById(id);
      if (holder !== undefined) {
        return denied(
          'claim-mismatch',
          `${request.method} ${field} ${id} is member ${holder}, but the certificate is ${certName}'s`,
        );
      }
    }
    return null;
  }
}

/** senderClaims are the fields in which a message names its sender's member id. */
function senderClaims(request: RpcRequest): Array<[string, number]> {
  switch (request.method) {
    case 'ShipSegment':
      return [
        ['leader_region', request.body.leaderRegion],
        ['id.region_id', request.body.id?.regionId ?? 0],
        ['id.shard_id', request.body.id?.shardId ?? 0],
      ];
    case 'Heartbeat':
      return [
        ['leader_region', request.body.leaderRegion],
        ['region_id', request.body.regionId],
        ['shard_id', request.body.shardId],
      ];
    case 'ReportApplied':
      return [['reporter_shard', request.body.reporterShard]];
    case 'RequestVote':
      return [['candidate_region', request.body.candidateRegion]];
    case 'TimeoutNow':
      return [['leader_region', request.body.leaderRegion]];
    default:
      return [];
  }
}

function denied(reason: RefusalReason, details: string): Refusal {
  return { code: grpcStatus.PERMISSION_DENIED, details, reason };
}
