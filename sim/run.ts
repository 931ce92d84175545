// runSim: one whole run from options: build the cluster the seed describes,
// start the workload and the fault schedule (safety phase), then heal a core
// and demand convergence within a bound (liveness phase). Every event is
// checked; the first broken invariant ends the run.
import { Engine } from '../engine/engine.js';
import { CURRENT_COMPAT } from '../engine/limits.js';
import type { Compat } from '../engine/types.js';
import { checkLinearizability, type LinearizabilityReport } from './checkers/linearizability.js';
import { livenessGap } from './checkers/liveness.js';
import { checkLogMirror } from './checkers/log-mirror.js';
import { Cluster, type FounderSpec } from './cluster.js';
import type { CoverageCounts } from './coverage.js';
import { describeFault, faultSchedule, FaultInjector, type FaultEvent } from './faults.js';
import { describeVoprFault, voprSchedule, VoprInjector, type VoprFault } from './faults-vopr.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import type { EngineFactory } from './node.js';
import type { SimOptions } from './options.js';
import { RunObserver, type Counters } from './observer.js';
import { Prng } from './prng.js';
import { Trace } from './trace.js';
import { InvariantViolation } from './violation.js';
import { RegisterClients } from './register-clients.js';
import { Workload } from './workload.js';

export interface RunFailure {
  invariant: string;
  message: string;
  timeMs: number;
  event: number;
  node: string;
}

export interface RunResult {
  seed: number;
  ok: boolean;
  events: number;
  traceHash: string;
  simulatedMs: number;
  failure: RunFailure | null;
  /** faults: the seed's schedule (faults.ts), then its VOPR-style faults (faults-vopr.ts); indices name them. */
  faults: AnyFault[];
  /** foreignDelivered: forged calls that reached an engine; otherClusterRefused: refused at the edge for their cluster id. */
  counts: {
    writesIssued: number;
    writesAcked: number;
    faultsFired: number;
    livenessMs: number;
    foreignDelivered: number;
    otherClusterRefused: number;
    readsIssued: number;
    readsServed: number;
    followerReadsServed: number;
    /** askerReadsServed: of those, the ones whose forwarded request named its asker (WorkloadKnobs.askerAck). */
    askerReadsServed: number;
  };
  observed: Counters;
  coverage: CoverageCounts;
  /** linearizability: the end-of-run check of the clients' history; null when the run failed before it. */
  linearizability: LinearizabilityReport | null;
}

export type AnyFault = FaultEvent | VoprFault;

export function describeAnyFault(fault: AnyFault): string {
  return fault.kind === 'boundary-crash' || fault.kind === 'conf-burst' || fault.kind === 'deposed-tail'
    ? describeVoprFault(fault)
    : describeFault(fault);
}

export interface RunExtras {
  traceFile?: string;
  engineFactory?: EngineFactory;
  /** wireRoundTripEvery overrides how often a message takes the protobuf round trip (see ClusterConfig). */
  wireRoundTripEvery?: number;
  /** onCluster lets a caller (a test, a benchmark) look at the world before it runs. */
  onCluster?: (cluster: Cluster) => void;
}

const OLD_BUILD_VERSIONS = ['', '0.0.9'];

export const realEngine: EngineFactory = (config, restored) => new Engine(config, restored);

/** founderSpecs decides which founders run an older binary and which start as learners. */
export function founderSpecs(options: SimOptions): FounderSpec[] {
  const prng = new Prng(`sim:${options.seed}`).fork('shape');
  const order = prng.shuffled([...Array(options.founderCount).keys()]);
  const old = new Set(order.slice(0, options.oldPeerCount));
  const learners = new Set(order.slice(options.oldPeerCount, options.oldPeerCount + options.founderLearnerCount));
  return [...Array(options.founderCount).keys()].map((i) => {
    const compat: Compat = old.has(i)
      ? { sendsLeaderLastSeq: false, capabilities: 0, buildVersion: prng.pick(OLD_BUILD_VERSIONS) }
      : { ...CURRENT_COMPAT };
    return { compat, learner: learners.has(i) };
  });
}

export function runSim(options: SimOptions, extras: RunExtras = {}): RunResult {
  const trace = new Trace();
  if (extras.traceFile) trace.toFile(extras.traceFile);
  const root = new Prng(`sim:${options.seed}`);
  const observer = new RunObserver();
  const cluster = buildCluster(options, extras, trace, observer);
  // The forks are taken in this order on every run: a new one goes last, or every seed's trace changes.
  const workload = new Workload(cluster, root.fork('workload'), options.workload, root.fork('burst'));
  const registers = new RegisterClients(cluster, root.fork('registers'), options.workload);
  const injector = plainInjector(cluster, workload);
  const vopr = voprInjector(cluster);
  cluster.mayRestart = (i) => !injector.excluded.has(i);
  const faults = scheduleFaults(options, cluster, injector, vopr);
  const liveness = scheduleLivenessPhase(
    options,
    { cluster, injector, vopr, workload, registers },
    root.fork('liveness'),
  );
  const { failure, linearizability } = runPhases(options, { cluster, workload, registers }, liveness);
  finishTrace(trace, cluster, failure);
  return {
    seed: options.seed,
    ok: failure === null,
    events: cluster.eventCount,
    traceHash: trace.finish(),
    simulatedMs: cluster.nowUs / 1_000,
    failure,
    faults: faults.all,
    counts: {
      writesIssued: workload.issuedCount,
      writesAcked: workload.ackedCount,
      faultsFired: faults.fired,
      livenessMs: liveness.startUs >= 0 ? (cluster.nowUs - liveness.startUs) / 1_000 : 0,
      foreignDelivered: cluster.checkers.foreignTraffic.delivered,
      otherClusterRefused: cluster.otherClusterRefusals,
      readsIssued: registers.counts.readsIssued,
      readsServed: registers.counts.readsServed,
      followerReadsServed: registers.counts.followerReadsServed,
      askerReadsServed: registers.counts.askerReadsServed,
    },
    observed: observer.counters,
    coverage: { ...cluster.coverage.counts },
    linearizability,
  };
}

/** The parts of a run its phases drive. */
interface RunParts {
  cluster: Cluster;
  injector: FaultInjector;
  vopr: VoprInjector;
  workload: Workload;
  registers: RegisterClients;
}

/** buildCluster: the world the seed describes, shown to extras.onCluster, its shape noted in the trace. */
function buildCluster(options: SimOptions, extras: RunExtras, trace: Trace, observer: RunObserver): Cluster {
  const cluster = new Cluster({
    seed: options.seed,
    founders: founderSpecs(options),
    joinerSlotCount: options.joinerCount,
    engineFactory: extras.engineFactory ?? realEngine,
    engineLimits: options.engineLimits,
    network: options.network,
    storage: options.storage,
    clockDriftFractionMax: options.clockDriftFractionMax,
    trace,
    extraCheckers: [observer],
    wireRoundTripEvery: extras.wireRoundTripEvery,
  });
  extras.onCluster?.(cluster);
  if (trace.takesNotes) {
    trace.note(
      JSON.stringify({
        v: 'meta',
        seed: options.seed,
        nodes: cluster.nodes.map((n) => n.name),
        tickUs: msToUs(cluster.tickMs),
        electionTimeoutTicks: cluster.limits.electionTimeoutTicks,
      }),
    );
  }
  return cluster;
}

/** plainInjector fires the seed's schedule of plain faults (faults.ts) on the cluster. */
function plainInjector(cluster: Cluster, workload: Workload): FaultInjector {
  return new FaultInjector({
    get nowUs() {
      return cluster.nowUs;
    },
    nodes: cluster.nodes,
    leaderRoster: () => {
      const leader = cluster.leader();
      return leader?.status ? { leaderId: leader.status.id, roster: leader.status.roster } : null;
    },
    crash: (i) => cluster.crash(i),
    restart: (i) => cluster.restart(i),
    pause: (i) => cluster.pause(i),
    resume: (i) => cluster.resume(i),
    partition: (a, b, oneWay) => cluster.partition(a, b, oneWay),
    isolate: (i) => cluster.isolate(i),
    heal: () => cluster.heal(),
    clog: (from, to, ms) => cluster.clog(from, to, ms),
    join: (i, via) => cluster.join(i, via),
    admin: (op, target) => cluster.admin(op, target),
    leavesOnly: cluster.limits.autopilotEnabled === 1,
    idle: (untilMs) => workload.idle(msToUs(untilMs)),
    clusterId: cluster.clusterId,
    foreign: (i, message) => cluster.injectForeign(i, message),
    schedule: (atMs, label, run) => cluster.schedule(msToUs(atMs), label, run),
  });
}

/** voprInjector fires the seed's VOPR-style faults (faults-vopr.ts) on the cluster. */
function voprInjector(cluster: Cluster): VoprInjector {
  // Watches run after every event until they return true (a deposed-tail waiting for a candidate).
  let watches: (() => boolean)[] = [];
  cluster.onAfterEvent(() => {
    if (watches.length > 0) watches = watches.filter((w) => !w());
  });
  return new VoprInjector({
    get nowUs() {
      return cluster.nowUs;
    },
    nodes: cluster.nodes,
    leader: () => {
      const leader = cluster.leader();
      return leader?.status ? { index: leader.index, id: leader.status.id, roster: leader.status.roster } : null;
    },
    armCrash: (trap) => cluster.crashPoints.arm(trap),
    isolate: (i) => cluster.isolate(i),
    healNode: (i) => cluster.healNode(i),
    blockLink: (from, to) => cluster.network.block(from, to),
    watch: (check) => {
      watches.push(check);
    },
    admin: (op, target) => cluster.admin(op, target),
    noteConfChangeInElection: () => cluster.coverage.add('conf-change-in-election'),
    schedule: (atMs, label, run) => cluster.schedule(msToUs(atMs), label, run),
  });
}

/** scheduleFaults puts every fault of the seed (or only options.onlyFaults) on the cluster's clock; fired counts them. */
function scheduleFaults(
  options: SimOptions,
  cluster: Cluster,
  injector: FaultInjector,
  vopr: VoprInjector,
): { all: AnyFault[]; fired: number } {
  // The VOPR-style faults come after the plain ones, so the plain ones keep their indices.
  const faults = { all: [...faultSchedule(options), ...voprSchedule(options)] as AnyFault[], fired: 0 };
  const keep = options.onlyFaults ? new Set(options.onlyFaults) : null;
  faults.all.forEach((fault, index) => {
    if (keep && !keep.has(index)) return;
    cluster.schedule(msToUs(fault.atMs), `fault #${index}: ${describeAnyFault(fault)}`, () => {
      faults.fired++;
      if (fault.kind === 'boundary-crash' || fault.kind === 'conf-burst' || fault.kind === 'deposed-tail')
        vopr.fire(fault);
      else injector.fire(fault);
    });
  });
  return faults;
}

/** Where the liveness phase stands: startUs is -1 until the core is healed; done once it converged. */
interface LivenessPhase {
  startUs: number;
  done: boolean;
}

/**
 * scheduleLivenessPhase: at the end of the safety phase, stop the faults and the load, heal a core and
 * probe it until it converges (done) or the bound passes (a liveness violation).
 */
function scheduleLivenessPhase(options: SimOptions, parts: RunParts, livenessPrng: Prng): LivenessPhase {
  const { cluster, injector, vopr, workload, registers } = parts;
  const phase: LivenessPhase = { startUs: -1, done: false };
  const core = (): typeof cluster.nodes =>
    cluster.nodes.filter((n) => n.state !== 'unborn' && !injector.excluded.has(n.index));
  const probe = (): void => {
    // Statuses are read after steps with effects; read them fresh for the verdict.
    for (const node of cluster.nodes) if (node.state === 'up' && node.engine) node.status = node.engine.status();
    const gap = livenessGap({
      core: core(),
      maxAckedSeq: cluster.checkers.durability.maxAckedSeq,
      nodeByMemberId: (id) => cluster.nodeByMemberId(id),
    });
    if (gap === null) {
      for (const node of core()) checkLogMirror(node);
      phase.done = true;
      return;
    }
    if (cluster.nowUs - phase.startUs >= msToUs(options.livenessPhaseMsMax)) {
      throw new InvariantViolation('liveness', `not converged ${options.livenessPhaseMsMax} ms after healing: ${gap}`);
    }
    cluster.schedule(cluster.nowUs + msToUs(SIM_LIMITS.livenessProbeIntervalMs), 'liveness probe', probe);
  };
  cluster.schedule(msToUs(options.safetyPhaseMs), 'liveness phase: heal the core', () => {
    phase.startUs = cluster.nowUs;
    injector.active = false;
    vopr.active = false;
    cluster.crashPoints.disarmAll();
    workload.stop();
    registers.stop();
    cluster.heal();
    cluster.network.calm();
    excludeMinority(cluster, injector.excluded, livenessPrng);
    for (const node of cluster.nodes) {
      if (injector.excluded.has(node.index)) continue;
      if (node.state === 'paused') cluster.resume(node.index);
      if (node.state === 'down') cluster.restart(node.index);
    }
    probe();
  });
  return phase;
}

/**
 * runPhases starts the world and runs both phases; the first broken invariant becomes the failure, and a run
 * that passed has its clients' history checked for linearizability.
 */
function runPhases(
  options: SimOptions,
  parts: Pick<RunParts, 'cluster' | 'workload' | 'registers'>,
  liveness: LivenessPhase,
): { failure: RunFailure | null; linearizability: LinearizabilityReport | null } {
  const { cluster, workload, registers } = parts;
  try {
    cluster.start();
    workload.start();
    registers.start();
    const endUs = msToUs(options.safetyPhaseMs + options.livenessPhaseMsMax + 10 * SIM_LIMITS.livenessProbeIntervalMs);
    cluster.runUntil(endUs, () => liveness.done);
    if (!liveness.done) throw new InvariantViolation('liveness', 'the run ended before the liveness phase concluded');
    return { failure: null, linearizability: checkLinearizability(registers.history.operations()) };
  } catch (error) {
    if (!(error instanceof InvariantViolation)) throw error;
    const failure: RunFailure = {
      invariant: error.invariant,
      message: error.message,
      timeMs: cluster.nowUs / 1_000,
      event: cluster.eventCount,
      node: error.nodeIndex >= 0 ? `n${error.nodeIndex + 1}` : '-',
    };
    return { failure, linearizability: null };
  }
}

/** finishTrace notes the failure (if any) and records the run's end, the trace's last event. */
function finishTrace(trace: Trace, cluster: Cluster, failure: RunFailure | null): void {
  if (failure) {
    trace.note(
      JSON.stringify({
        v: 'fail',
        invariant: failure.invariant,
        node: failure.node,
        message: failure.message,
        t: cluster.nowUs,
        i: failure.event,
      }),
    );
  }
  trace.record(
    JSON.stringify({ i: cluster.eventCount, t: cluster.nowUs, end: failure ? `fail ${failure.invariant}` : 'pass' }),
  );
}

/**
 * excludeMinority sometimes leaves one voter outside the healed core (kept down), so
 * convergence must not depend on every node coming back. Never a node a joiner dialled,
 * and never while a joiner awaits admission.
 */
export function excludeMinority(cluster: Cluster, excluded: Set<number>, prng: Prng): void {
  if (!prng.chance(0.25)) return;
  // A joiner still waiting for admission needs a conf change, which the leader refuses until
  // every voter has reported capability bit 0: a voter kept down would block it for good. A joiner
  // that is down now counts too: the liveness phase restarts it into the core (seed 54484).
  if (cluster.nodes.some((n) => n.id.isJoiner && n.state !== 'unborn' && (n.status?.id ?? 0) === 0)) return;
  const leader = cluster.leader();
  const roster = leader?.status?.roster;
  if (!roster) return;
  const voters = roster.members.filter((m) => m.role === 0);
  if (voters.length < 3) return;
  const seeds = new Set(cluster.nodes.flatMap((n) => n.seeds));
  const candidates = voters
    .map((m) => cluster.nodeByMemberId(m.id))
    .filter((n) => n !== undefined && n !== leader && !seeds.has(n.id.grpcAddr) && !n.id.isJoiner);
  const victim = candidates.length > 0 ? prng.pick(candidates) : undefined;
  if (!victim) return;
  excluded.add(victim.index);
  cluster.crash(victim.index);
}
