// Effects collects what one step asks of the driver and hands it back in the
// order the contract requires: hard state first (a barrier: durable before
// anything after it is carried out), then a state-machine reset, log appends,
// messages, applies, and the rest (results, readiness, snapshots, warnings).
import type { Effect, Entry, HardState } from './types.js';

type MessageEffect = Extract<
  Effect,
  { type: 'send' | 'reply' | 'replyError' | 'streamChunk' | 'streamEnd' | 'serveSnapshot' | 'fetchSnapshot' }
>;
type OtherEffect = Exclude<
  Effect,
  MessageEffect | { type: 'saveHardState' | 'append' | 'apply' | 'resetStateMachine' }
>;

export class Effects {
  private hardStateEffect: Effect | null = null;
  private reset = false;
  private readonly appends: Effect[] = [];
  private readonly messages: Effect[] = [];
  private applies: Effect[] = [];
  private others: Effect[] = [];
  /**
   * logGeneration: how many times the engine wiped its log (wipeLog) since it started; every append carries it
   * (when above 0) and a sync notice echoing an older one is not news. A wipe re-writes entries of the same
   * (seq, term) that an earlier append wrote, so (seq, term) alone cannot tell a notice from before the wipe
   * from one after (sim --filtered seeds 54, 39: a learner reported entries durable that its WAL no longer held).
   * In memory only: a restarted engine hears no notice of the appends before it.
   */
  logGeneration = 0;

  hardState(hardState: HardState): void {
    this.hardStateEffect = { type: 'saveHardState', hardState: { ...hardState } };
  }

  /** resetStateMachine also drops applies queued earlier in this step: they are wiped anyway. */
  resetStateMachine(): void {
    this.reset = true;
    this.applies = [];
    this.others = this.others.filter((e) => e.type !== 'stageSnapshot');
  }

  append(fromSeq: number, entries: Entry[]): void {
    this.appends.push(
      this.logGeneration > 0
        ? { type: 'append', fromSeq, entries, generation: this.logGeneration }
        : { type: 'append', fromSeq, entries },
    );
  }

  message(effect: MessageEffect): void {
    this.messages.push(effect);
  }

  apply(entries: Entry[]): void {
    this.applies.push({ type: 'apply', entries });
  }

  other(effect: OtherEffect): void {
    this.others.push(effect);
  }

  /** drain hands back this step's effects in contract order; the queues are emptied in place, not reallocated (once per step). */
  drain(): Effect[] {
    const out: Effect[] = [];
    if (this.hardStateEffect) out.push(this.hardStateEffect);
    if (this.reset) out.push({ type: 'resetStateMachine' });
    moveAll(this.appends, out);
    moveAll(this.messages, out);
    moveAll(this.applies, out);
    moveAll(this.others, out);
    this.hardStateEffect = null;
    this.reset = false;
    return out;
  }
}

/** moveAll appends `from`'s effects to `to` and empties `from`. */
function moveAll(from: Effect[], to: Effect[]): void {
  if (from.length === 0) return;
  for (let i = 0; i < from.length; i++) to.push(from[i]!);
  from.length = 0;
}
