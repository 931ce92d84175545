// Foreign traffic: the attacker of issue 10 as a fault class. Every message here is one
// that no member of this cluster would send: a sender id no roster holds, another cluster's
// node (its cluster id differs on the wire), an "old-version leader" with zero-valued newer
// fields, absurd terms, forged TimeoutNow, pulls at terms nobody holds. The checker
// `foreign-traffic` proves none of them changed a term, vote, leader, log or readiness.
import { encodeSegmentFrame } from '../engine/segment-frame.js';
import type { RpcRequest } from '../engine/rpc.js';
import type { EngineStatus } from '../engine/types.js';
import { VALUE_ROOM_MAX } from '../engine/values.js';
import type { Prng } from './prng.js';

/** OTHER_CLUSTER_ID is the cluster id another cluster's nodes put on the wire. */
export const OTHER_CLUSTER_ID = 'sim-other-cluster';

/** ForeignMessage is one forged call: where it claims to come from and what it says. */
export interface ForeignMessage {
  /** kind names the forgery (trace and counters). */
  kind: ForeignKind;
  request: RpcRequest;
  /** clusterId is the id on the wire: the target's own, or OTHER_CLUSTER_ID. */
  clusterId: string;
}

export const FOREIGN_KINDS = [
  'absurd-term-heartbeat',
  'zero-prev-heartbeat',
  'heartbeat-term-bump',
  'report-applied',
  'pull-higher-term',
  'ship-segment',
  'vote',
  'timeout-now',
  'other-cluster',
] as const;
export type ForeignKind = (typeof FOREIGN_KINDS)[number];

/**
 * FOREIGN_ID_BASE: forged sender ids start here (the simulator never hands out more than ten member
 * ids), plus the largest uint32 and 0.
 */
const FOREIGN_ID_BASE = 90;
const UINT32_MAX = 0xffff_ffff;

/**
 * FORGED: spread first into every forged body, so each has hidden classes of its own. A forged body's absurd
 * numbers (2^53 - 1, 2^32 - 1) are not small integers: stored into a hidden class the engine's own messages share
 * (a literal with the same keys in the same order), they would turn that class's fields into double fields, and every
 * later read of a real message's term from one boxes a number that then spreads the same way into the engine's state
 * (sim/README.md, "Whole numbers stored as doubles"). A symbol key: JSON, Object.keys and the trace never see it.
 */
const FORGED_TAG = Symbol('forged');
const FORGED: { readonly [FORGED_TAG]: true } = { [FORGED_TAG]: true };

/** TERM_FAR_AHEAD: a term offset no run reaches, so a forged claim can never coincide with a real term. */
const TERM_FAR_AHEAD = 1_000_000;

/**
 * forgeForeignMessage makes one forged call for a target whose status (term, leader, log) it
 * may read, as an attacker watching the cluster might; `ownClusterId` is the cluster's wire id.
 */
export function forgeForeignMessage(prng: Prng, target: EngineStatus, ownClusterId: string): ForeignMessage {
  const kind = prng.pick(FOREIGN_KINDS);
  const stranger = (): number => prng.pick([FOREIGN_ID_BASE + prng.int(900), UINT32_MAX, FOREIGN_ID_BASE + 9]);
  const absurdTerm = (): number => prng.pick([Number.MAX_SAFE_INTEGER, VALUE_ROOM_MAX, VALUE_ROOM_MAX - 1, 2 ** 52]);
  const term = target.term;
  const wire = (request: RpcRequest): ForeignMessage => ({ kind, request, clusterId: ownClusterId });
  switch (kind) {
    case 'absurd-term-heartbeat': {
      const from = stranger();
      return wire({
        method: 'Heartbeat',
        body: heartbeat(from, absurdTerm(), {
          prevLogTerm: absurdTerm(),
          prevLogSeq: target.lastSeq + 1,
          leaderLastSeq: prng.pick([0, 1, target.lastSeq]),
        }),
      });
    }
    case 'zero-prev-heartbeat': {
      // An "old-version leader": every newer field zero (prev position, leader_last_seq, build_version).
      const from = stranger();
      return wire({
        method: 'Heartbeat',
        body: heartbeat(from, term + 1, { prevLogTerm: 0, prevLogSeq: 0, leaderLastSeq: 0, buildVersion: '' }),
      });
    }
    case 'heartbeat-term-bump': {
      const from = stranger();
      return wire({
        method: 'Heartbeat',
        body: heartbeat(from, term + prng.pick([0, 1, 5, 1_000]), {
          prevLogTerm: target.lastTerm,
          prevLogSeq: target.lastSeq,
          leaderLastSeq: target.lastSeq + prng.int(10),
        }),
      });
    }
    case 'report-applied':
      return wire({
        method: 'ReportApplied',
        body: {
          ...FORGED,
          reporterShard: stranger(),
          sourceShard: prng.chance(0.5) ? target.id : target.leaderId,
          appliedSeqno: target.lastSeq + prng.int(100),
          reporterTerm: term + prng.pick([1, 1_000, TERM_FAR_AHEAD]),
          capabilities: prng.pick([0, 1]),
        },
      });
    case 'pull-higher-term': {
      // A pull names no sender; its term is either far ahead, or absurd: never one a member holds.
      const pullTerm = prng.chance(0.7) ? term + TERM_FAR_AHEAD : absurdTerm();
      const body = { ...FORGED, shardId: target.id, fromSeqno: prng.pick([1, target.lastSeq]), term: pullTerm };
      return wire(prng.chance(0.5) ? { method: 'StreamSegments', body } : { method: 'FetchSnapshot', body });
    }
    case 'ship-segment': {
      // A stranger "leader" ships: from the start (it would truncate everything), or past the end.
      const fromStart = prng.chance(0.5);
      const prevSeq = fromStart ? 0 : target.lastSeq;
      const prevTerm = fromStart ? 0 : target.lastTerm;
      const shipTerm = term + prng.pick([0, 1, 3]);
      const entries = [1, 2].map((i) => ({
        seq: prevSeq + i,
        term: shipTerm,
        kind: 1,
        data: new TextEncoder().encode(`{"op":"put","key":"forged","value":"x","writeId":0}`),
      }));
      const payload = encodeSegmentFrame({ prevSeq, prevTerm, commitSeq: prevSeq + 2, entries });
      const from = stranger();
      return wire({
        method: 'ShipSegment',
        body: {
          ...FORGED,
          id: { ...FORGED, regionId: from, shardId: from, seqno: prevSeq + 1 },
          payload,
          eventCount: entries.length,
          leaderLastSeq: prevSeq + 2,
          streamBaseline: 0,
          term: shipTerm,
          leaderRegion: from,
        },
      });
    }
    case 'vote':
      return wire({
        method: 'RequestVote',
        body: {
          ...FORGED,
          term: term + prng.pick([1, 2, 1_000]),
          candidateRegion: stranger(),
          lastLogTerm: term + 1_000,
          lastLogSeq: target.lastSeq + 1_000,
          prevote: prng.chance(0.5),
          transfer: prng.chance(0.5),
        },
      });
    case 'timeout-now': {
      // From a stranger at any term, or naming a real member (the target's leader, say) at a term
      // that member never leads: only the leader of the target's current term is obeyed.
      const member = target.roster.members.length > 0 ? prng.pick(target.roster.members).id : 1;
      const forged = prng.pick([
        { ...FORGED, term, leaderRegion: stranger() },
        { ...FORGED, term: term + TERM_FAR_AHEAD, leaderRegion: target.leaderId || member },
        { ...FORGED, term: 0, leaderRegion: member },
        { ...FORGED, term: absurdTerm(), leaderRegion: member },
      ]);
      return wire({ method: 'TimeoutNow', body: forged });
    }
    case 'other-cluster': {
      // Another cluster's node 1..n: real-looking ids and terms, but the wrong cluster id.
      const from = target.roster.members.length > 0 ? prng.pick(target.roster.members).id : 1;
      const request: RpcRequest = prng.pick<RpcRequest>([
        { method: 'Heartbeat', body: heartbeat(from, term + 1, { prevLogTerm: 0, prevLogSeq: 0, leaderLastSeq: 1 }) },
        {
          method: 'RequestVote',
          body: {
            ...FORGED,
            term: term + 1,
            candidateRegion: from,
            lastLogTerm: term + 1,
            lastLogSeq: target.lastSeq + 5,
            prevote: false,
            transfer: true,
          },
        },
        { method: 'TimeoutNow', body: { ...FORGED, term, leaderRegion: target.leaderId || from } },
        {
          method: 'ReportApplied',
          body: {
            ...FORGED,
            reporterShard: from,
            sourceShard: target.id,
            appliedSeqno: target.lastSeq,
            reporterTerm: term,
            capabilities: 1,
          },
        },
      ]);
      return { kind, request, clusterId: OTHER_CLUSTER_ID };
    }
  }
}

function heartbeat(
  from: number,
  term: number,
  fields: { prevLogTerm: number; prevLogSeq: number; leaderLastSeq: number; buildVersion?: string },
) {
  return {
    ...FORGED,
    shardId: from,
    regionId: from,
    entityCount: 0,
    signalThroughputEps: 0,
    diskBytes: 0,
    replicationLag: {},
    lastHeartbeatNs: '0',
    term,
    leaderRegion: from,
    streamBaseline: fields.prevLogSeq,
    prevLogTerm: fields.prevLogTerm,
    prevLogSeq: fields.prevLogSeq,
    buildVersion: fields.buildVersion ?? '9.9.9',
    leaderLastSeq: fields.leaderLastSeq,
  };
}
