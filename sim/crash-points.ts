// Crash points: crashes placed at effect boundaries, where a barrier bug shows (VOPR-style). A
// boundary-crash fault arms a trap; the next matching engine step (on its node, or on any node) is
// carried out only up to the boundary and the node crashes there:
//  - after-hard-state: right after the step's hard state is saved, before its messages leave;
//  - after-reply: right after a reply leaves (optionally only a vote grant);
//  - after-append: right after a WAL append is written, before it syncs (it is lost, or torn).
// The trap may also replay the request the step served, to arrive again after the restart: a vote
// granted, lost to the crash and asked again is how a double vote shows.
import type { Effect } from '../engine/types.js';

export type CrashBoundary = 'after-hard-state' | 'after-reply' | 'after-append';

export const CRASH_BOUNDARIES: readonly CrashBoundary[] = ['after-hard-state', 'after-reply', 'after-append'];

export interface CrashTrap {
  boundary: CrashBoundary;
  /** nodeIndex: the node it waits for, -1 = the first node to reach the boundary. */
  nodeIndex: number;
  /** untilUs: the trap disarms unsprung after this time. */
  untilUs: number;
  /** votesOnly: spring only on a step that grants or asks for a vote. */
  votesOnly: boolean;
  /** replayDelayMs: the served request arrives again this long after the restart; < 0 = no replay. */
  replayDelayMs: number;
  /** downMs: how long the node stays down. */
  downMs: number;
}

/** Sprung: a trap that fired, and how many of the step's effects were carried out before the crash. */
export interface Sprung {
  trap: CrashTrap;
  carryCount: number;
}

export class CrashPoints {
  private traps: CrashTrap[] = [];

  arm(trap: CrashTrap): void {
    this.traps.push(trap);
  }

  get armedCount(): number {
    return this.traps.length;
  }

  /** spring: the first armed trap this step reaches (it is used up), or null. */
  spring(nodeIndex: number, effects: readonly Effect[], nowUs: number): Sprung | null {
    if (this.traps.length === 0) return null;
    for (let i = 0; i < this.traps.length; i++) {
      const trap = this.traps[i]!;
      if (trap.untilUs < nowUs) {
        this.traps.splice(i--, 1);
        continue;
      }
      if (trap.nodeIndex >= 0 && trap.nodeIndex !== nodeIndex) continue;
      const carryCount = carryCountFor(trap, effects);
      if (carryCount < 0) continue;
      this.traps.splice(i, 1);
      return { trap, carryCount };
    }
    return null;
  }

  /** disarmAll drops every trap (the liveness phase). */
  disarmAll(): void {
    this.traps = [];
  }
}

function carryCountFor(trap: CrashTrap, effects: readonly Effect[]): number {
  if (trap.votesOnly && !effects.some(isVote)) return -1;
  switch (trap.boundary) {
    case 'after-hard-state':
      // Only worth it when something was to follow the save.
      return effects.length > 1 && effects[0]!.type === 'saveHardState' ? 1 : -1;
    case 'after-reply': {
      const i = effects.findIndex((e) => e.type === 'reply' && (!trap.votesOnly || isVote(e)));
      return i < 0 ? -1 : i + 1;
    }
    case 'after-append': {
      const i = effects.findIndex((e) => e.type === 'append' && e.entries.length > 0);
      return i < 0 ? -1 : i + 1;
    }
  }
}

/** isVote: a vote granted (reply) or asked for (a candidate's RequestVote, not a pre-vote). */
function isVote(e: Effect): boolean {
  if (e.type === 'reply' && e.response.method === 'RequestVote') return e.response.body.granted;
  if (e.type === 'send' && e.request.method === 'RequestVote') return !e.request.body.prevote;
  return false;
}
