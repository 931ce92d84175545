// SimNode is one simulated machine: an engine incarnation plus the parts that
// outlive it (disk, snapshot artifacts, identity, clock). A crash drops the
// engine and the state machine's memory; a restart rebuilds both from disk.
import type {
  Compat,
  EngineConfig,
  EngineStatus,
  Entry,
  Input,
  Effect,
  RestoredState,
  SnapshotExpectation,
  SnapshotMeta,
} from '../engine/types.js';
import { emptyRestoredState } from '../engine/restored.js';
import { SimStorage, copyHardState } from './storage.js';
import { ArtifactStore, readStateText } from './artifacts.js';
import { KvStateMachine } from './state-machine.js';
import type { NodeClock } from './clock.js';
import type { SimEvent } from './events.js';

/** EngineLike is the engine's public API; tests may drive the world with a stand-in. */
export interface EngineLike {
  step(input: Input): Effect[];
  status(): EngineStatus;
  entries(): readonly Entry[];
  snapshot(): SnapshotMeta | null;
  /** snapshotExpectation: the snapshot the node may install now; a stand-in without it takes full ones only. */
  snapshotExpectation?(): SnapshotExpectation;
}

export type EngineFactory = (config: EngineConfig, restored: RestoredState) => EngineLike;

/** NodeState: unborn = not started yet (a future joiner); down = crashed. */
export type NodeState = 'unborn' | 'up' | 'paused' | 'down';

export interface NodeIdentity {
  index: number;
  name: string;
  grpcAddr: string;
  httpAddr: string;
  compat: Compat;
  isJoiner: boolean;
}

export class SimNode {
  state: NodeState = 'unborn';
  /** incarnation counts starts; events addressed to an older one are dropped. */
  incarnation = 0;
  engine: EngineLike | null = null;
  status: EngineStatus | null = null;
  readonly storage = new SimStorage();
  readonly artifacts = new ArtifactStore();
  readonly machine: KvStateMachine;
  /** inbox holds events that arrived while paused, in arrival order. */
  inbox: SimEvent[] = [];
  /** openRequests maps this incarnation's requestIds to call-table keys. */
  readonly openRequests = new Map<number, number>();
  seeds: string[] = [];
  /** config is the last config this node was started with. */
  config: EngineConfig | null = null;

  /** opaqueCommands: the state machine keeps a kind-1 entry that is no KV command as an opaque value (the lockstep world's scripts write free text). */
  constructor(
    readonly id: NodeIdentity,
    readonly clock: NodeClock,
    opaqueCommands = false,
  ) {
    this.machine = new KvStateMachine(opaqueCommands);
    this.index = id.index;
  }

  // index is a plain field copied from the identity (a slot's index never changes; nameJoiner renames it, so
  // name stays a getter): read on every event, a field load is cheaper than a getter through `id`.
  readonly index: number;

  get name(): string {
    return this.id.name;
  }

  get isLive(): boolean {
    return this.state === 'up' || this.state === 'paused';
  }

  /** memberId is the engine's permanent id for this node, 0 until it has one. */
  get memberId(): number {
    return this.status?.id ?? 0;
  }

  /**
   * restoredState reads the disk the way a restarting binary does: hard state, the newest
   * artifact (installed or staged), the WAL entries that continue it; the state machine
   * restarts from the artifact, so appliedSeq is the snapshot's seq.
   */
  restoredState(): RestoredState {
    const empty = emptyRestoredState();
    const artifact = this.artifacts.newest();
    const snapshot = artifact?.meta ?? null;
    const entries = this.storage.recover(snapshot);
    this.machine.reset();
    if (artifact) {
      const error = this.machine.load(readStateText(artifact.files) ?? '');
      if (error) throw new Error(`node ${this.name}: own artifact at seq ${artifact.meta.seq} unreadable: ${error}`);
    }
    return {
      hardState: this.storage.hardState ? copyHardState(this.storage.hardState) : empty.hardState,
      snapshot,
      snapshotHeader: artifact?.header ?? null,
      entries,
      appliedSeq: snapshot?.seq ?? 0,
    };
  }
}
