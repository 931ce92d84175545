// Read quorum: every read index a leader hands out is vouched for by a majority of the voters of its current
// configuration (engine/read-index.ts): the leader itself, each voter that accepted, at the leader's term, a
// Heartbeat the leader sent after the read arrived, and the read's asker when its request counts as an ack ("The
// asker's ack": the asker is a voter, not the leader, and the term its request names equals the leader's). The
// stale-read checker (linearizability) catches a wrong count only when the swarm also makes a newer leader commit
// and acknowledge a write in the window; this one judges the count itself, at the step that answers.
//
// The checker keeps its own tally from what crosses the engine's boundary (the inputs a leader steps and the
// Heartbeat sends among its effects), never from the engine's round numbers, so a wrong engine cannot vouch for
// itself. "Sent after the read arrived" is taken from the step the read came in (a round sent in that same step
// counts: the read's admission starts it); that is looser than the engine's rule for a read admitted later, after
// the leader's first commit of its term (its round must start after the admission), so an honest engine never
// trips it. The lease fast path (limits.readLeaseEnabled, off in the simulator) answers with no round and is not
// judged.
import { majority } from '../../engine/quorum.js';
import { voterIds } from '../../engine/roster.js';
import type { ReadIndexAsker } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, StepRecord } from './checker.js';

/** LeaderTally is one leadership's view (one node, one incarnation, one term). */
interface LeaderTally {
  incarnation: number;
  term: number;
  /** heartbeatSentStep: Heartbeat requestId -> [toId, the checker's step number when it was sent]. */
  heartbeatSentStep: Map<number, [number, number]>;
  /** ackedSentStep: voter id -> the latest send step among its accepted Heartbeats. */
  ackedSentStep: Map<number, number>;
  /** reads: readId -> the step it arrived at and its asker. */
  reads: Map<number, { arrivedStep: number; asker: ReadIndexAsker | undefined }>;
}

export class ReadQuorumChecker implements Checker {
  readonly name = 'read-quorum';
  private stepNo = 0;
  private readonly tallies = new Map<SimNode, LeaderTally>();

  afterStep(step: StepRecord): void {
    this.stepNo++;
    const { node, input, after } = step;
    // A read refused by a follower needs no tally; only a leader's steps (or its last one as leader) are read.
    if (after.role !== 'leader' && step.before?.role !== 'leader') {
      if (this.tallies.size > 0) this.tallies.delete(node);
      return;
    }
    if (node.config?.limits.readLeaseEnabled === 1) return;
    const tally = this.tallyFor(node, after.term);
    if (input.type === 'readIndex') tally.reads.set(input.readId, { arrivedStep: this.stepNo, asker: input.asker });
    else if (input.type === 'response' && input.response.method === 'Heartbeat') {
      const sent = tally.heartbeatSentStep.get(input.requestId);
      tally.heartbeatSentStep.delete(input.requestId);
      const body = input.response.body;
      if (sent && body.accepted && body.term === tally.term) {
        const [toId, sentStep] = sent;
        if ((tally.ackedSentStep.get(toId) ?? -1) < sentStep) tally.ackedSentStep.set(toId, sentStep);
      }
    } else if (input.type === 'callFailed') tally.heartbeatSentStep.delete(input.requestId);
    for (const e of step.effects) {
      if (e.type === 'send' && e.request.method === 'Heartbeat' && e.request.body.term === tally.term)
        tally.heartbeatSentStep.set(e.requestId, [e.toId, this.stepNo]);
      else if (e.type === 'readIndexResult') this.judge(node, tally, e.readId, e.refusal === null, after);
    }
  }

  onCrash(node: SimNode): void {
    this.tallies.delete(node);
  }

  private tallyFor(node: SimNode, term: number): LeaderTally {
    const had = this.tallies.get(node);
    if (had && had.incarnation === node.incarnation && had.term === term) return had;
    const fresh: LeaderTally = {
      incarnation: node.incarnation,
      term,
      heartbeatSentStep: new Map(),
      ackedSentStep: new Map(),
      reads: new Map(),
    };
    this.tallies.set(node, fresh);
    return fresh;
  }

  private judge(
    node: SimNode,
    tally: LeaderTally,
    readId: number,
    answered: boolean,
    after: StepRecord['after'],
  ): void {
    const read = tally.reads.get(readId);
    tally.reads.delete(readId);
    if (!answered || read === undefined) return;
    const self = after.id;
    const voters = voterIds(after.roster);
    const asker = read.asker;
    const askerCounts =
      asker !== undefined && asker.term === tally.term && asker.id !== self && voters.includes(asker.id);
    let count = 0;
    for (const id of voters) {
      if (id === self || (askerCounts && id === asker.id) || (tally.ackedSentStep.get(id) ?? -1) >= read.arrivedStep)
        count++;
    }
    if (count >= majority(voters.length)) return;
    const who = asker
      ? `asker n${asker.id} at term ${asker.term} (${askerCounts ? 'counted' : 'not counted'}: ${asker.term !== tally.term ? 'another term' : !voters.includes(asker.id) ? 'no voter' : asker.id === self ? 'the leader itself' : 'a voter of this term'})`
      : 'no asker';
    violate(
      this.name,
      `${node.name} leader of term ${tally.term} answered read q${readId} with ${count} of ${voters.length} voters vouching (majority ${majority(voters.length)}; ${who}; voters ${voters.join(',')} acked heartbeats sent after it arrived: ${voters.filter((id) => id !== self && (tally.ackedSentStep.get(id) ?? -1) >= read.arrivedStep).join(',') || 'none'})`,
      node.index,
    );
  }
}
