// Roster replay: each node's roster (status) equals the one replayed from its own log and snapshot:
// the newest kind-4 record in its log, else the roster at its log's base (the snapshot's, or the one
// in force where it compacted), else the roster it was admitted with (hard state), else the founding
// roster. Raft's rule that the newest configuration in the log is in force, committed or not, and
// goes away when that record is truncated. Checked after each step that carried all its effects.
import { decodeRoster } from '../../engine/roster.js';
import { EntryKind, type Effect, type Entry, type Roster } from '../../engine/types.js';
import type { MemberInfo } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

const EMPTY_ROSTER: Roster = { membershipVersion: 0, nextMemberId: 1, members: [] };

interface Replay {
  /** kind4Seqs: ascending seqs of kind-4 records in the node's written log. */
  kind4Seqs: number[];
  /** base: the roster at the log's base (snapshot or compaction point), null when the log starts at 0 or was wiped. */
  base: Roster | null;
  /**
   * replayed: the roster the log replays to, kept while nothing it depends on changes (an append, a
   * compaction, a reseed, a hard-state save, a snapshot install); null = replay again. Replaying and
   * comparing after every step was a twelfth of a sweep's time (sim/README.md, "Speed").
   */
  replayed: Roster | null;
}

export class RosterReplayChecker implements Checker {
  readonly name = 'roster-replay';
  private readonly replays = new Map<number, Replay>();

  onStart(node: SimNode): void {
    const log = node.storage.written;
    this.replays.set(node.index, {
      kind4Seqs: log.entries.filter((e) => e.kind === EntryKind.Membership).map((e) => e.seq),
      base: node.artifacts.newest()?.meta.roster ?? null,
      replayed: null,
    });
  }

  onAppend(node: SimNode, fromSeq: number, entries: readonly Entry[]): void {
    const r = this.replays.get(node.index);
    if (!r) return;
    while (r.kind4Seqs.length > 0 && r.kind4Seqs[r.kind4Seqs.length - 1]! >= fromSeq) r.kind4Seqs.pop();
    const base = node.storage.written.base;
    for (const e of entries) if (e.kind === EntryKind.Membership && e.seq > base) r.kind4Seqs.push(e.seq);
    r.replayed = null;
  }

  readonly beforeEffectTypes: readonly Effect['type'][] = ['compact', 'resetStateMachine', 'saveHardState'];

  beforeEffect(node: SimNode, effect: Effect): void {
    const r = this.replays.get(node.index);
    if (!r) return;
    if (effect.type === 'compact') {
      const through = Math.min(effect.throughSeq, node.storage.written.lastSeq);
      if (through > node.storage.written.base) {
        r.base = this.replayAt(node, r, through);
        r.kind4Seqs = r.kind4Seqs.filter((s) => s > through);
      }
      r.replayed = null;
    } else if (effect.type === 'resetStateMachine' || effect.type === 'saveHardState') {
      if (effect.type === 'resetStateMachine') r.base = null; // a reseed wipes the log; the hard state keeps the roster
      r.replayed = null;
    }
  }

  afterStep(step: StepRecord): void {
    const { node, input, after } = step;
    const r = this.replays.get(node.index);
    if (!r) return;
    if (input.type === 'snapshotInstalled') {
      r.base = input.meta.roster;
      r.kind4Seqs = node.storage.written.entries.filter((e) => e.kind === EntryKind.Membership).map((e) => e.seq);
      r.replayed = null;
    }
    if (step.cutShort) return;
    const replayed = (r.replayed ??= this.replayAt(node, r, node.storage.written.lastSeq));
    if (!sameRoster(after.roster, replayed)) {
      violate(
        this.name,
        `${node.name}'s roster is ${describe(after.roster)} but its log (ending at ${node.storage.written.lastSeq}, kind-4 at ` +
          `[${r.kind4Seqs.join(',')}], base ${node.storage.written.base}) replays to ${describe(replayed)}`,
        node.index,
      );
    }
  }

  /** replayAt: the roster in force at seq of this node's log (the engine's rosterAt, derived independently). */
  private replayAt(node: SimNode, r: Replay, seq: number): Roster {
    let recordSeq = 0;
    for (let i = r.kind4Seqs.length - 1; i >= 0; i--) {
      if (r.kind4Seqs[i]! <= seq) {
        recordSeq = r.kind4Seqs[i]!;
        break;
      }
    }
    const record = recordSeq > 0 ? node.storage.written.entryAt(recordSeq) : undefined;
    const decoded = record ? decodedRoster(record.data) : null;
    return decoded ?? r.base ?? node.storage.hardState?.rosterBase ?? node.config?.bootstrapRoster ?? EMPTY_ROSTER;
  }
}

/**
 * decoded: kind-4 bodies already decoded, by their bytes' identity (a written entry keeps its bytes, so
 * a replay after each hard-state save, which moves no record, parses no JSON). Rosters are read only.
 */
const decoded = new WeakMap<Uint8Array, Roster | null>();

function decodedRoster(bytes: Uint8Array): Roster | null {
  let roster = decoded.get(bytes);
  if (roster === undefined) {
    roster = decodeRoster(bytes);
    decoded.set(bytes, roster);
  }
  return roster;
}

/**
 * sameRoster: the two rosters encode to the same kind-4 body (engine/roster.ts encodeRoster: version, next
 * id, and each member's id, name, addresses and role, members in id order), compared field by field
 * instead of encoding both.
 */
export function sameRoster(a: Roster, b: Roster): boolean {
  if (a === b) return true;
  if (a.membershipVersion !== b.membershipVersion || a.nextMemberId !== b.nextMemberId) return false;
  if (a.members.length !== b.members.length) return false;
  const left = byId(a.members);
  const right = byId(b.members);
  for (let i = 0; i < left.length; i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (
      x.id !== y.id ||
      x.name !== y.name ||
      x.grpcAddr !== y.grpcAddr ||
      x.httpAddr !== y.httpAddr ||
      x.role !== y.role
    )
      return false;
  }
  return true;
}

/** byId: the members in id order (the array itself when already in order, as rosters usually are). */
function byId(members: readonly MemberInfo[]): readonly MemberInfo[] {
  for (let i = 1; i < members.length; i++) {
    if (members[i - 1]!.id > members[i]!.id) return [...members].sort((a, b) => a.id - b.id);
  }
  return members;
}

function describe(roster: Roster): string {
  return `v${roster.membershipVersion} [${roster.members.map((m) => `${m.id}:${['voter', 'learner', 'removed'][m.role] ?? m.role}`).join(' ')}]`;
}
