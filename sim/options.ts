// SimOptions are everything one run is made of besides its events. Swarm testing:
// each seed draws its own cluster shape and fault mix, so a sweep explores
// mixes (only partitions, crashes with no loss, ...) that one fixed mix would hide.
import type { EngineLimits } from '../engine/types.js';
import { DEFAULT_LIMITS } from '../engine/limits.js';
import { Prng } from './prng.js';
import { SIM_LIMITS } from './limits.js';

export interface NetworkKnobs {
  lossProbability: number;
  duplicateProbability: number;
  /** replayProbability: a request is delivered again much later (a stale message). */
  replayProbability: number;
  /** reorderProbability: a message is held back so later ones overtake it. */
  reorderProbability: number;
  oneWayDelayMsMin: number;
  oneWayDelayMsMax: number;
  /** linkInflightCountMax: capacity of one directed link; beyond it messages drop. */
  linkInflightCountMax: number;
  /**
   * lateAnswerProbability: a unary answer is held back 0.5-3 election timeouts, never past its call's
   * deadline (sim/late-answers.ts). Absent = 0.
   */
  lateAnswerProbability?: number;
  /**
   * slowSnapshotProbability: a snapshot answer is held back from half an election timeout to just before
   * its call's deadline, often past the puller's pull timeout (sim/late-answers.ts). Absent = 0.
   */
  slowSnapshotProbability?: number;
}

export interface StorageKnobs {
  /** tornWriteProbability: on a crash, unsynced appends partly survive, the last one torn. */
  tornWriteProbability: number;
  diskSyncDelayMsMax: number;
  /** snapshotCorruptProbability: a file of a snapshot in transit has a flipped byte. */
  snapshotCorruptProbability: number;
}

/** FaultRates are mean events per simulated minute of the safety phase. */
export interface FaultRates {
  crashPerMinute: number;
  pausePerMinute: number;
  partitionPerMinute: number;
  clogPerMinute: number;
  transferPerMinute: number;
  removePerMinute: number;
  promotePerMinute: number;
  idlePerMinute: number;
  /** foreignPerMinute: volleys of forged calls (sim/foreign.ts) from outside the cluster. */
  foreignPerMinute: number;
  /** boundaryCrashPerMinute: crashes placed at effect boundaries, some with a replay (sim/faults-vopr.ts). Absent = 0. */
  boundaryCrashPerMinute?: number;
  /** confBurstPerMinute: bursts of membership changes around a provoked election (sim/faults-vopr.ts). Absent = 0. */
  confBurstPerMinute?: number;
  /**
   * deposedTailPerMinute: the Raft paper's figure 8 set up (sim/faults-vopr.ts, deposed-tail): a leader cut off with
   * its uncommitted tail, the next leader cut off as it campaigns (its own tail of a higher term), the first one back
   * first. Absent = 0.
   */
  deposedTailPerMinute?: number;
}

export interface WorkloadKnobs {
  /** writeIntervalMsMean: mean gap between client writes (exponential). */
  writeIntervalMsMean: number;
  /**
   * burstWriteCountMax: a write event issues 1..this many writes at once as one proposeBatch to
   * one node (what a loaded real node's driver does). 1 = every write proposed alone.
   */
  burstWriteCountMax: number;
  /** registerClientCount: closed-loop clients whose operations are recorded for the linearizability checker; 0 = none. */
  registerClientCount: number;
  /** registerThinkMsMean: mean pause of a recorded client between operations (exponential). */
  registerThinkMsMean: number;
  /** readFraction: the share of a recorded client's operations that are linearizable reads. */
  readFraction: number;
  /** casFraction: the share of a recorded client's writes that are compare-and-sets (on the value it last saw). */
  casFraction: number;
  /** anyNodeFraction: the share of recorded operations sent to any live node rather than the believed leader (follower reads; writes redirected by the hint). */
  anyNodeFraction: number;
  /**
   * registerTimeoutMs: a recorded client's operation is indeterminate when unanswered this long after its call
   * (default SIM_LIMITS.clientTimeoutMs; the swarm never sets it).
   */
  registerTimeoutMs?: number;
  /**
   * askerAck: a read a follower forwards reaches the leader naming its asker (the follower's id and its term
   * when it forwarded), as a real node's ReadIndexStream request does (engine/read-index.ts, "The asker's ack");
   * absent or false = a bare readIndex, as before (the swarm draws it for ASKER_ACK_SEED_FRACTION of seeds).
   */
  askerAck?: boolean;
}

export interface SimOptions {
  seed: number;
  founderCount: number;
  /** oldPeerCount founders run an older binary (no leader_last_seq, no capability bit 0). */
  oldPeerCount: number;
  /** founderLearnerCount founders start as learners in the founding roster. */
  founderLearnerCount: number;
  joinerCount: number;
  /**
   * filteredCount: filter changes (sim/faults.ts `filter`: a learner gets a community-overlay filter, or loses
   * it) drawn on their own PRNG stream; absent or 0 = none, so every other seed runs as before. `--filtered N`.
   */
  filteredCount?: number;
  clockDriftFractionMax: number;
  engineLimits: Partial<EngineLimits>;
  network: NetworkKnobs;
  storage: StorageKnobs;
  faults: FaultRates;
  workload: WorkloadKnobs;
  safetyPhaseMs: number;
  livenessPhaseMsMax: number;
  /** onlyFaults keeps just these indices of the seed's fault schedule (shrinking), null = all. */
  onlyFaults: number[] | null;
}

/**
 * snapshotBytesLimits: the bytes rule of snapshot staging (engine/snapshot-staging.ts), drawn from its own stream
 * so the swarm's other draws stay as they were; off (0) in half the seeds, whose runs are then the same as before
 * it. A cap under the seed's threshold turns the rule off too (the threshold comes first).
 */
function snapshotBytesLimits(seed: number): Partial<EngineLimits> {
  const prng = new Prng(`sim:${seed}`).fork('snapshot-bytes');
  return {
    snapshotLogBytesPercentMin: prng.pick([0, 0, 100, 1_000]),
    snapshotEntryCountMax: prng.pick([1_000, 4_000, 40_000]),
  };
}

/**
 * swarmOptions draws one seed's cluster shape and fault mix. With `vopr` (the default) it then adds the
 * boundary faults and their focus (swarmVopr); vopr = false is the mix from before them.
 */
export function swarmOptions(seed: number, vopr = true): SimOptions {
  const prng = new Prng(`sim:${seed}`).fork('swarm');
  const founderCount = prng.pick([1, 2, 3, 3, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 6, 7, 7]);
  const oldPeerCount = prng.chance(0.3) ? prng.between(1, Math.min(SIM_LIMITS.oldPeerCountMax, founderCount)) : 0;
  const learnerRoom = Math.floor((founderCount - 1) / 2);
  const founderLearnerCount = learnerRoom > 0 && prng.chance(0.2) ? prng.between(1, learnerRoom) : 0;
  const joinerCount = prng.chance(0.5) ? prng.between(1, SIM_LIMITS.joinerCountMax) : 0;
  const on = (probability: number, draw: () => number): number => (prng.chance(probability) ? draw() : 0);
  const options: SimOptions = {
    seed,
    founderCount,
    oldPeerCount,
    founderLearnerCount,
    joinerCount,
    clockDriftFractionMax: SIM_LIMITS.clockDriftFractionMax,
    engineLimits: {
      snapshotEntryCountThreshold: prng.pick([25, 100, 500, 10_000]),
      compactionRetainEntryCount: prng.pick([0, 10, 100]),
      segmentEntryCountMax: prng.pick([1, 8, 64, 256]),
      inflightSegmentCountMax: prng.pick([1, 4, 8]),
      ...snapshotBytesLimits(seed),
    },
    network: {
      lossProbability: on(0.5, () => prng.uniform(0, 0.2)),
      duplicateProbability: on(0.4, () => prng.uniform(0, 0.1)),
      replayProbability: on(0.3, () => prng.uniform(0, 0.05)),
      reorderProbability: on(0.5, () => prng.uniform(0, 0.2)),
      oneWayDelayMsMin: prng.pick([0.2, 1, 2]),
      oneWayDelayMsMax: prng.pick([5, SIM_LIMITS.oneWayDelayMsMax, 60]),
      linkInflightCountMax: prng.pick([16, 64, SIM_LIMITS.linkInflightCountMax]),
    },
    storage: {
      tornWriteProbability: on(0.5, () => prng.uniform(0.2, 1)),
      diskSyncDelayMsMax: prng.pick([1, SIM_LIMITS.diskSyncDelayMsMax, 30]),
      snapshotCorruptProbability: on(0.3, () => prng.uniform(0, 0.3)),
    },
    faults: {
      crashPerMinute: on(0.5, () => prng.uniform(0.5, 8)),
      pausePerMinute: on(0.4, () => prng.uniform(0.5, 6)),
      partitionPerMinute: on(0.5, () => prng.uniform(0.5, 8)),
      clogPerMinute: on(0.4, () => prng.uniform(0.5, 4)),
      transferPerMinute: on(0.4, () => prng.uniform(0.2, 2)),
      removePerMinute: on(0.3, () => prng.uniform(0.1, 1)),
      promotePerMinute: on(0.7, () => prng.uniform(0.5, 3)),
      idlePerMinute: on(0.4, () => prng.uniform(0.2, 1)),
      foreignPerMinute: foreignRate(seed),
    },
    // The burst size comes from its own stream so the swarm's other draws (and old seeds' runs with --burst 1) stay as they were.
    workload: {
      writeIntervalMsMean: prng.pick([10, 50, 200, 1_000]),
      burstWriteCountMax: new Prng(`sim:${seed}`).fork('burst').pick([1, 1, 4, 16]),
      ...readKnobs(seed),
      ...askerAckKnob(seed),
    },
    safetyPhaseMs: prng.between(30, 120) * 1_000,
    livenessPhaseMsMax: SIM_LIMITS.livenessPhaseMsMax,
    onlyFaults: null,
  };
  if (vopr) {
    swarmVopr(options);
    // Slow snapshots came after the VOPR-style faults; `--vopr 0` (the regression seeds) keeps the mix from before them too.
    const slowSnapshot = slowSnapshotProbability(seed);
    if (slowSnapshot > 0) options.network.slowSnapshotProbability = slowSnapshot;
    const deposedTail = deposedTailRate(seed);
    if (deposedTail > 0) options.faults.deposedTailPerMinute = deposedTail;
    Object.assign(options.engineLimits, autopilotLimits(seed));
  }
  return options;
}

/**
 * AUTOPILOT_SEED_FRACTION of default seeds run with autopilot on (engine/autopilot.ts), drawn on its own PRNG
 * stream so the swarm's other draws stay as they were: those seeds' learners are promoted by the leader too and
 * every removal is a leave (sim/cluster.ts), checked by VoterFloorChecker; the other seeds keep their trace hash.
 */
const AUTOPILOT_SEED_FRACTION = 0.3;

function autopilotLimits(seed: number): Partial<EngineLimits> {
  const prng = new Prng(`sim:${seed}`).fork('autopilot');
  if (!prng.chance(AUTOPILOT_SEED_FRACTION)) return {};
  return {
    autopilotEnabled: 1,
    autopilotStableTicks: prng.pick([1, 10, 50]),
    autopilotLagSeqMax: prng.pick([0, 8, 64]),
    autopilotFailureTolerance: prng.pick([0, 1, 1, 2]),
  };
}

/**
 * SLOW_SNAPSHOT_SEED_FRACTION of default seeds get slow snapshot transfers, drawn on their own PRNG
 * stream so the swarm's other draws stay as they were: a seed that fetches no snapshot runs as before.
 */
const SLOW_SNAPSHOT_SEED_FRACTION = 0.5;

function slowSnapshotProbability(seed: number): number {
  const prng = new Prng(`sim:${seed}`).fork('slow-snapshot');
  return prng.chance(SLOW_SNAPSHOT_SEED_FRACTION) ? prng.uniform(0.2, 0.6) : 0;
}

/**
 * DEPOSED_TAIL_SEED_FRACTION of default seeds get figure 8 set-ups (faults-vopr.ts, deposed-tail), drawn on their
 * own PRNG stream so the swarm's other draws stay as they were: the other seeds keep their trace hash. Without
 * them 1 of default seeds 1..200 reached figure 8's tail (issue 17 asks for 10%).
 */
const DEPOSED_TAIL_SEED_FRACTION = 0.5;

function deposedTailRate(seed: number): number {
  const prng = new Prng(`sim:${seed}`).fork('deposed-tail');
  return prng.chance(DEPOSED_TAIL_SEED_FRACTION) ? prng.uniform(2, 6) : 0;
}

/**
 * FOREIGN_SEED_FRACTION of default seeds get foreign traffic, drawn on its own PRNG stream so the
 * swarm's other draws (and so every other seed's run) stay as they were.
 */
const FOREIGN_SEED_FRACTION = 0.3;
/** FOREIGN_RATE_FORCED is the volley rate --foreign-traffic sets for every seed. */
export const FOREIGN_RATE_FORCED = 4;

function foreignRate(seed: number): number {
  const prng = new Prng(`sim:${seed}`).fork('foreign');
  return prng.chance(FOREIGN_SEED_FRACTION) ? prng.uniform(0.5, FOREIGN_RATE_FORCED) : 0;
}

/** VoprFocus: which boundary faults a seed leans on (swarm weights: each combination is common in some seeds). */
export type VoprFocus = 'none' | 'late' | 'barrier' | 'membership' | 'all';

/** VOPR_FOCUS_WEIGHTS: how many seeds in 12 lean on each focus (the rest turn single kinds on now and then). */
const VOPR_FOCUS_WEIGHTS: [VoprFocus, number][] = [
  ['none', 4],
  ['late', 2],
  ['barrier', 2],
  ['membership', 2],
  ['all', 2],
];

/**
 * swarmVopr adds the faults modelled on TigerBeetle's VOPR, drawn from their own PRNG stream (the swarm's
 * other draws stay as they were): late answers, crashes at effect boundaries with replays, bursts of
 * membership changes around elections. A focus turns a family up together and bends the seed's other
 * knobs towards it (replays for crashes at boundaries, joiners for membership bursts), so the rare
 * combinations are common in some seeds instead of rare in all.
 */
export function swarmVopr(options: SimOptions): VoprFocus {
  const prng = new Prng(`sim:${options.seed}`).fork('vopr');
  const focus = pickWeighted(prng, VOPR_FOCUS_WEIGHTS);
  const late = focus === 'late' || focus === 'all' || prng.chance(0.2);
  const barrier = focus === 'barrier' || focus === 'all' || prng.chance(0.2);
  const membership = focus === 'membership' || focus === 'all' || prng.chance(0.15);
  const strong = focus !== 'none';
  const lateDraw = prng.uniform(0.02, 0.08);
  const barrierDraw = prng.uniform(1, 4);
  const burstDraw = prng.uniform(0.5, 2);
  if (late)
    options.network.lateAnswerProbability =
      strong && focus !== 'membership' && focus !== 'barrier' ? lateDraw * 4 : lateDraw;
  if (barrier) {
    options.faults.boundaryCrashPerMinute =
      strong && focus !== 'late' && focus !== 'membership' ? barrierDraw * 4 : barrierDraw;
    if (focus === 'barrier' || focus === 'all') {
      // Replays and duplicates are what turn a crash inside a barrier window into a double vote.
      options.network.replayProbability = Math.max(options.network.replayProbability, 0.03);
      options.network.duplicateProbability = Math.max(options.network.duplicateProbability, 0.03);
    }
  }
  if (membership) {
    options.faults.confBurstPerMinute = strong && focus !== 'late' && focus !== 'barrier' ? burstDraw * 3 : burstDraw;
    if (focus === 'membership' || focus === 'all') {
      // Learners to promote and voters to remove: joiners arrive as learners.
      options.joinerCount = Math.max(options.joinerCount, 2);
      options.faults.promotePerMinute = Math.min(options.faults.promotePerMinute, 1);
    }
  }
  return focus;
}

function pickWeighted<T>(prng: Prng, weights: readonly [T, number][]): T {
  const total = weights.reduce((sum, [, w]) => sum + w, 0);
  let draw = prng.next() * total;
  for (const [item, weight] of weights) {
    if (draw < weight) return item;
    draw -= weight;
  }
  return weights[weights.length - 1]![0];
}

/** readKnobs draws the reads and compare-and-sets from their own stream, leaving the swarm's other draws as they were. */
function readKnobs(
  seed: number,
): Pick<
  WorkloadKnobs,
  'registerClientCount' | 'registerThinkMsMean' | 'readFraction' | 'casFraction' | 'anyNodeFraction'
> {
  const prng = new Prng(`sim:${seed}`).fork('reads');
  return {
    registerClientCount: prng.pick([2, 4, 8]),
    registerThinkMsMean: prng.pick([10, 50, 200]),
    readFraction: prng.pick([0.3, 0.5, 0.8]),
    casFraction: prng.pick([0, 0.3, 0.6]),
    anyNodeFraction: prng.pick([0, 0.3, 0.7]),
  };
}

/**
 * ASKER_ACK_SEED_FRACTION of default seeds forward follower reads naming their asker (WorkloadKnobs.askerAck),
 * drawn on their own PRNG stream so the swarm's other draws stay as they were: the other seeds, and those that
 * draw it but forward no read, keep their trace hash. Not all of them: a bare forwarded read (an older node's,
 * or an asker the leader does not count) must keep taking the round. The stream's name was picked among a few
 * so that seeds 7, 11 and 3, whose hashes the team compares by hand across branches, do not draw it (with
 * 'asker-ack' seed 7 did); 509 of seeds 1..1000 do.
 */
const ASKER_ACK_SEED_FRACTION = 0.5;

function askerAckKnob(seed: number): Pick<WorkloadKnobs, 'askerAck'> {
  const prng = new Prng(`sim:${seed}`).fork('forwarded-read-asker');
  return prng.chance(ASKER_ACK_SEED_FRACTION) ? { askerAck: true } : {};
}

/** LOST_ROUND_TRIP_PROBABILITY_CAP bounds the loss writeIntervalMsFloor plans for. */
const LOST_ROUND_TRIP_PROBABILITY_CAP = 0.99;

/**
 * writeIntervalMsFloor keeps the offered load under half of what the configured pipeline
 * can replicate (segment size x segments in flight per round trip), so a run measures
 * faults rather than an ever-growing backlog. --write-interval-ms may still ask for more.
 * A lost ship or answer costs the leader a ship retry (shipRetryTicks), so with message loss
 * a round trip takes on average roundTrip + q/(1-q) x retry, q the chance that either way
 * is lost: with one-entry segments, one in flight and 10% loss that is ~10x longer (seed 42002
 * offered several times what it could commit, and its backlog outlived the liveness bound).
 */
export function writeIntervalMsFloor(options: SimOptions): number {
  // Capped below 1 so that --loss 1 gives a slow workload, not an infinite interval.
  const lostRoundTripProbability = Math.min(
    1 - (1 - options.network.lossProbability) ** 2,
    LOST_ROUND_TRIP_PROBABILITY_CAP,
  );
  const shipRetryMs = (options.engineLimits.shipRetryTicks ?? DEFAULT_LIMITS.shipRetryTicks) * SIM_LIMITS.tickMs;
  const lossDelayMs = (lostRoundTripProbability / (1 - lostRoundTripProbability)) * shipRetryMs;
  const roundTripMs = 2 * options.network.oneWayDelayMsMax + options.storage.diskSyncDelayMsMax + lossDelayMs;
  const entriesPerRoundTrip =
    (options.engineLimits.segmentEntryCountMax ?? 256) * (options.engineLimits.inflightSegmentCountMax ?? 8);
  const meanWritesPerEvent = (1 + options.workload.burstWriteCountMax) / 2;
  return (2 * roundTripMs * meanWritesPerEvent) / entriesPerRoundTrip;
}

/** Override is one command-line knob: its flag name, what it sets, and how it reads its value. */
export interface Override {
  flag: string;
  describe: string;
  apply(options: SimOptions, value: number): void;
  min: number;
  max: number;
}

const probability = { min: 0, max: 1 };
const rate = { min: 0, max: 600 };

/** OVERRIDES pin a swarm choice from the command line (`--loss 0.1`); sim/README.md lists them. */
export const OVERRIDES: readonly Override[] = [
  {
    flag: 'nodes',
    describe: 'founding node count (1-7)',
    min: 1,
    max: SIM_LIMITS.founderCountMax,
    apply: (o, v) => {
      o.founderCount = v;
    },
  },
  {
    flag: 'old-peers',
    describe: 'founders running an older binary',
    min: 0,
    max: SIM_LIMITS.founderCountMax,
    apply: (o, v) => {
      o.oldPeerCount = v;
    },
  },
  {
    flag: 'learners',
    describe: 'founders that start as learners',
    min: 0,
    max: 3,
    apply: (o, v) => {
      o.founderLearnerCount = v;
    },
  },
  {
    flag: 'joiners',
    describe: 'nodes joining during the run',
    min: 0,
    max: SIM_LIMITS.joinerCountMax,
    apply: (o, v) => {
      o.joinerCount = v;
    },
  },
  {
    flag: 'loss',
    describe: 'message loss probability',
    ...probability,
    apply: (o, v) => {
      o.network.lossProbability = v;
    },
  },
  {
    flag: 'dup',
    describe: 'request duplication probability',
    ...probability,
    apply: (o, v) => {
      o.network.duplicateProbability = v;
    },
  },
  {
    // Not `--replay`: that is the flight recorder's replay mode (`--replay PATH`, sim/replay/cli.ts).
    flag: 'replay-rate',
    describe: 'late request replay probability',
    ...probability,
    apply: (o, v) => {
      o.network.replayProbability = v;
    },
  },
  {
    flag: 'reorder',
    describe: 'message hold-back (reordering) probability',
    ...probability,
    apply: (o, v) => {
      o.network.reorderProbability = v;
    },
  },
  {
    flag: 'late',
    describe: 'probability an answer is held 0.5-3 election timeouts (within its deadline)',
    ...probability,
    apply: (o, v) => {
      o.network.lateAnswerProbability = v;
    },
  },
  {
    flag: 'slow-snapshot',
    describe: 'probability a snapshot answer is held until just before its deadline (past the pull timeout, often)',
    ...probability,
    apply: (o, v) => {
      o.network.slowSnapshotProbability = v;
    },
  },
  {
    flag: 'delay-ms-min',
    describe: 'one-way delay lower bound, ms',
    min: 0,
    max: 10_000,
    apply: (o, v) => {
      o.network.oneWayDelayMsMin = v;
      o.network.oneWayDelayMsMax = Math.max(v, o.network.oneWayDelayMsMax);
    },
  },
  {
    flag: 'delay-ms-max',
    describe: 'one-way delay upper bound, ms',
    min: 0,
    max: 10_000,
    apply: (o, v) => {
      o.network.oneWayDelayMsMax = v;
      o.network.oneWayDelayMsMin = Math.min(v, o.network.oneWayDelayMsMin);
    },
  },
  {
    flag: 'capacity',
    describe: 'messages in flight per directed link before drops',
    min: 1,
    max: 1_000_000,
    apply: (o, v) => {
      o.network.linkInflightCountMax = v;
    },
  },
  {
    flag: 'torn',
    describe: 'probability a crash keeps a torn unsynced tail',
    ...probability,
    apply: (o, v) => {
      o.storage.tornWriteProbability = v;
    },
  },
  {
    flag: 'corrupt-snapshot',
    describe: 'probability a snapshot file is corrupted in transit',
    ...probability,
    apply: (o, v) => {
      o.storage.snapshotCorruptProbability = v;
    },
  },
  {
    flag: 'crash-rate',
    describe: 'crashes per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.crashPerMinute = v;
    },
  },
  {
    flag: 'pause-rate',
    describe: 'pauses per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.pausePerMinute = v;
    },
  },
  {
    flag: 'partition-rate',
    describe: 'partitions per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.partitionPerMinute = v;
    },
  },
  {
    flag: 'clog-rate',
    describe: 'link clogs per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.clogPerMinute = v;
    },
  },
  {
    flag: 'transfer-rate',
    describe: 'leadership transfers per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.transferPerMinute = v;
    },
  },
  {
    flag: 'remove-rate',
    describe: 'member removals per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.removePerMinute = v;
    },
  },
  {
    flag: 'promote-rate',
    describe: 'learner promotions per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.promotePerMinute = v;
    },
  },
  {
    flag: 'idle-rate',
    describe: 'idle periods (no writes) per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.idlePerMinute = v;
    },
  },
  {
    flag: 'foreign-rate',
    describe: 'volleys of forged calls from outside the cluster per simulated minute (--foreign-traffic: 4)',
    ...rate,
    apply: (o, v) => {
      o.faults.foreignPerMinute = v;
    },
  },
  {
    flag: 'boundary-crash-rate',
    describe: 'crashes at effect boundaries (with replays) per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.boundaryCrashPerMinute = v;
    },
  },
  {
    flag: 'conf-burst-rate',
    describe: 'bursts of membership changes around an election per simulated minute',
    ...rate,
    apply: (o, v) => {
      o.faults.confBurstPerMinute = v;
    },
  },
  {
    flag: 'deposed-tail-rate',
    describe: "figure 8 set-ups (two leaders' uncommitted tails of different terms) per simulated minute",
    ...rate,
    apply: (o, v) => {
      o.faults.deposedTailPerMinute = v;
    },
  },
  {
    flag: 'asker-ack',
    describe: "1 = a follower's forwarded read names its asker (one ack of the leader's round), 0 = a bare read",
    min: 0,
    max: 1,
    apply: (o, v) => {
      if (v === 1) o.workload.askerAck = true;
      else delete o.workload.askerAck;
    },
  },
  {
    flag: 'vopr',
    describe: '0 = the fault mix from before the boundary faults (late answers, boundary crashes, conf bursts)',
    min: 0,
    max: 1,
    apply: () => {
      /* read by optionsFor before the swarm draw */
    },
  },
  {
    flag: 'write-interval-ms',
    describe: 'mean gap between client writes, ms',
    min: 1,
    max: 3_600_000,
    apply: (o, v) => {
      o.workload.writeIntervalMsMean = v;
    },
  },
  {
    flag: 'register-clients',
    describe: 'recorded closed-loop clients (reads, puts, cas; 0 = none)',
    min: 0,
    max: 64,
    apply: (o, v) => {
      o.workload.registerClientCount = v;
    },
  },
  {
    flag: 'think-ms',
    describe: 'mean pause of a recorded client between operations, ms',
    min: 0,
    max: 3_600_000,
    apply: (o, v) => {
      o.workload.registerThinkMsMean = v;
    },
  },
  {
    flag: 'read-fraction',
    describe: 'share of recorded operations that are reads',
    ...probability,
    apply: (o, v) => {
      o.workload.readFraction = v;
    },
  },
  {
    flag: 'cas-fraction',
    describe: 'share of recorded writes that are compare-and-sets',
    ...probability,
    apply: (o, v) => {
      o.workload.casFraction = v;
    },
  },
  {
    flag: 'any-node',
    describe: 'share of recorded operations sent to any live node, not the believed leader',
    ...probability,
    apply: (o, v) => {
      o.workload.anyNodeFraction = v;
    },
  },
  {
    flag: 'filtered',
    describe: 'filter changes: learners made filtered members (community overlays) and back (0 = none)',
    min: 0,
    max: 64,
    apply: (o, v) => {
      o.filteredCount = v;
      if (v === 0) return;
      // Filtered members need learners to filter. Snapshots are staged and logs compacted as in any run: a
      // filtered member behind the compaction point catches up by a snapshot cut to its communities.
      o.joinerCount = Math.max(o.joinerCount, 1);
    },
  },
  {
    flag: 'burst',
    describe: 'most writes one client event proposes together (proposeBatch)',
    min: 1,
    max: 256,
    apply: (o, v) => {
      o.workload.burstWriteCountMax = v;
    },
  },
  {
    flag: 'safety-s',
    describe: 'safety phase length, simulated seconds',
    min: 1,
    max: 86_400,
    apply: (o, v) => {
      o.safetyPhaseMs = v * 1_000;
    },
  },
  {
    flag: 'liveness-s',
    describe: 'liveness bound after healing, simulated seconds',
    min: 1,
    max: 86_400,
    apply: (o, v) => {
      o.livenessPhaseMsMax = v * 1_000;
    },
  },
  {
    flag: 'drift',
    describe: 'clock drift bound as a fraction (0.02 = ±2%)',
    min: 0,
    max: 0.5,
    apply: (o, v) => {
      o.clockDriftFractionMax = v;
    },
  },
  {
    flag: 'snapshot-threshold',
    describe: 'engine snapshotEntryCountThreshold',
    min: 1,
    max: 1e9,
    apply: (o, v) => {
      o.engineLimits.snapshotEntryCountThreshold = v;
    },
  },
  {
    flag: 'snapshot-bytes-percent',
    describe: 'engine snapshotLogBytesPercentMin (0: the threshold alone)',
    min: 0,
    max: 1e6,
    apply: (o, v) => {
      o.engineLimits.snapshotLogBytesPercentMin = v;
    },
  },
  {
    flag: 'snapshot-entries-max',
    describe: 'engine snapshotEntryCountMax',
    min: 1,
    max: 1e9,
    apply: (o, v) => {
      o.engineLimits.snapshotEntryCountMax = v;
    },
  },
  {
    flag: 'segment-entries',
    describe: 'engine segmentEntryCountMax',
    min: 1,
    max: 1e6,
    apply: (o, v) => {
      o.engineLimits.segmentEntryCountMax = v;
    },
  },
];

export type OverrideValues = Record<string, number>;

/** applyOverrides pins the given knobs; an unknown flag or out-of-range value is a clear error. */
export function applyOverrides(options: SimOptions, values: OverrideValues): SimOptions {
  for (const flag of Object.keys(values).sort()) {
    const override = OVERRIDES.find((o) => o.flag === flag);
    if (!override) throw new Error(`unknown override --${flag}`);
    const value = values[flag]!;
    if (!Number.isFinite(value) || value < override.min || value > override.max) {
      throw new Error(`--${flag} must be a number in [${override.min}, ${override.max}], got ${value}`);
    }
    override.apply(options, value);
  }
  // With --nodes pinned, impossible combinations are errors; otherwise (a sweep over swarm
  // node counts) they are clamped to what each seed's cluster allows.
  const learnerRoom = Math.floor((options.founderCount - 1) / 2);
  if ('nodes' in values) {
    if ('old-peers' in values && options.oldPeerCount > options.founderCount)
      throw new Error('--old-peers cannot exceed --nodes');
    if ('learners' in values && options.founderLearnerCount > learnerRoom)
      throw new Error('--learners must leave a majority of founders as voters (at most floor((nodes-1)/2))');
  }
  options.oldPeerCount = Math.min(options.oldPeerCount, options.founderCount);
  options.founderLearnerCount = Math.min(
    options.founderLearnerCount,
    learnerRoom,
    options.founderCount - options.oldPeerCount,
  );
  return options;
}

/** optionsFor is the options one run uses: the seed's swarm draw, then overrides. */
export function optionsFor(
  seed: number,
  overrides: OverrideValues = {},
  onlyFaults: number[] | null = null,
): SimOptions {
  if ('vopr' in overrides && overrides.vopr !== 0 && overrides.vopr !== 1)
    throw new Error(`--vopr must be 0 or 1, got ${overrides.vopr}`);
  const options = applyOverrides(swarmOptions(seed, overrides.vopr !== 0), overrides);
  // The floor follows the pipeline the run really has (overrides included), unless pinned.
  if (!('write-interval-ms' in overrides)) {
    options.workload.writeIntervalMsMean = Math.max(
      options.workload.writeIntervalMsMean,
      writeIntervalMsFloor(options),
    );
  }
  options.onlyFaults = onlyFaults;
  return options;
}
