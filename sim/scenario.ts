// Scenario: runs a scripted scenario file (scenarios/*.txt) in the simulated
// world's lockstep preset (sim/lockstep.ts on sim/cluster.ts). One command per line; `#` starts a comment. The grammar is
// documented in scenarios/README.md. A failed `expect`/`until` throws with the
// file's line number, so a scenario reads like a test and fails like one.
import { readFileSync } from 'node:fs';
import {
  AppliedReport,
  HeartbeatRequest,
  JoinRequest,
  ShipSegmentRequest,
  SnapshotRequest,
  StreamRequest,
  TimeoutNowRequest,
  VoteRequest,
} from '../proto/gen/svc/replication/v1/replication.js';
import { encodeSegmentFrame, type RpcRequest, type EngineLimits, type Compat, type Entry } from '../engine/index.js';
import { Lockstep } from './lockstep.js';
import type { EngineFactory } from './node.js';
import { condition, type ConditionState } from './scenario-conditions.js';

export interface ScenarioResult {
  name: string;
  commands: number;
  ticks: number;
  cluster: Lockstep;
}

const UNTIL_ROUNDS_DEFAULT = 1000;

export function runScenarioFile(path: string): ScenarioResult {
  return runScenario(readFileSync(path, 'utf8'), path);
}

/** ScenarioOptions: `engine` runs the script on another engine (a test's mutant: does the scenario catch it?). */
export interface ScenarioOptions {
  engine?: EngineFactory;
}

export function runScenario(text: string, name = 'scenario', options: ScenarioOptions = {}): ScenarioResult {
  const cluster = new Lockstep(options.engine);
  const state: RunState = { cluster, last: null, values: new Map(), reads: new Map(), markedMessageCount: 0 };
  const lines = text.split('\n');
  let commands = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.replace(/#.*$/, '').trim();
    if (line === '') continue;
    commands++;
    try {
      // A broken invariant throws from the world's checkers (sim/checkers/), in the command that broke it.
      runCommand(state, line);
    } catch (err) {
      throw new Error(`${name}:${i + 1}: \`${line}\`: ${(err as Error).message}`, { cause: err });
    }
  }
  return { name, commands, ticks: cluster.ticks, cluster };
}

interface RunState extends ConditionState {
  values: Map<string, number>;
}

function runCommand(state: RunState, line: string): void {
  const [verb, ...args] = line.split(/\s+/);
  const run = verb === undefined ? undefined : COMMANDS.get(verb);
  if (!run) throw new Error(`unknown command ${verb}`);
  run(state, args, line);
}

/** Runs one command verb with the words after it (and the whole line, for a JSON argument). */
type Command = (state: RunState, args: string[], line: string) => void;

const SETUP_COMMANDS: Record<string, Command> = {
  limits: ({ cluster: c }, args) => {
    for (const kv of args) {
      const [k, v] = kv.split('=');
      if (!(k! in c.limits)) throw new Error(`unknown limit ${k}`);
      (c.limits as unknown as Record<string, number>)[k!] = Number(v);
    }
  },
  compat: ({ cluster: c }, args) => {
    const [node, ...kvs] = args;
    const compat: Partial<Compat> = {};
    for (const kv of kvs) {
      const [k, v = ''] = kv.split('=');
      if (k === 'capabilities') compat.capabilities = Number(v);
      else if (k === 'sendsLeaderLastSeq') compat.sendsLeaderLastSeq = v === 'true';
      else if (k === 'buildVersion') compat.buildVersion = v;
      else throw new Error(`unknown compat field ${k}`);
    }
    c.compat.set(node!, compat);
  },
  // cluster A B C [learner D E]
  cluster: ({ cluster: c }, args) => {
    const at = args.indexOf('learner');
    c.bootstrap(at >= 0 ? args.slice(0, at) : args, at >= 0 ? args.slice(at + 1) : []);
  },
};

const CHECK_COMMANDS: Record<string, Command> = {
  tick: ({ cluster: c }, args) => c.tick(Number(args[0] ?? 1)),
  elect: ({ cluster: c }, args) => {
    if (!c.elect(args[0]!)) throw new Error(`${args[0]} did not win an election`);
  },
  until: (state, args) => {
    const withinAt = args.indexOf('within');
    const rounds = withinAt >= 0 ? Number(args[withinAt + 1]) : UNTIL_ROUNDS_DEFAULT;
    const cond = condition(state, withinAt >= 0 ? args.slice(0, withinAt) : args);
    if (!state.cluster.tickUntil(cond.test, rounds))
      throw new Error(`not reached within ${rounds} ticks: ${cond.explain()}`);
  },
  expect: (state, args) => {
    const cond = condition(state, args);
    if (!cond.test()) throw new Error(`expectation failed: ${cond.explain()}`);
  },
  // mark: `sent … since-mark` counts only what is sent from here on
  mark: (state) => {
    state.markedMessageCount = state.cluster.messages.length;
  },
};

const CLIENT_COMMANDS: Record<string, Command> = {
  propose: ({ cluster: c }, args) => {
    const via = args[1] === 'via' ? args[2] : undefined;
    c.propose(args[0]!, via);
  },
  // read NODE as NAME: a linearizable read at NODE (a follower's goes through the leader)
  read: (state, args) => {
    if (args[1] !== 'as' || !args[2]) throw new Error('usage: read NODE as NAME');
    state.reads.set(args[2], state.cluster.read(args[0]!));
  },
  'propose-many': ({ cluster: c }, args) => {
    const count = Number(args[0]);
    for (let i = 0; i < count; i++) c.propose(`${args[1] ?? 'w'}${i}`);
  },
  // send NODE METHOD {json}
  send: (state, args, line) => {
    const request = buildRequest(args[1]!, JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>);
    state.last = null;
    state.cluster.inject(args[0]!, request, (outcome) => {
      state.last = outcome;
    });
    if (!state.last) throw new Error('the node did not answer the injected request');
  },
};

const NETWORK_COMMANDS: Record<string, Command> = {
  partition: ({ cluster: c }, args) => {
    const groups = args
      .join(' ')
      .split('|')
      .map((g) => g.trim().split(/\s+/).filter(Boolean));
    c.partition(groups);
  },
  // oneway A -> B
  oneway: ({ cluster: c }, args) => c.block(args[0]!, args[2]!),
  isolate: ({ cluster: c }, args) => c.isolate(args[0]!),
  heal: ({ cluster: c }) => c.heal(),
  // drop FROM TO METHOD [COUNT|*] [after K]
  drop: ({ cluster: c }, args) => {
    const afterAt = args.indexOf('after');
    c.drop(
      args[0]!,
      args[1]!,
      args[2]!,
      args[3] === undefined || args[3] === '*' || args[3] === 'after' ? -1 : Number(args[3]),
      afterAt >= 0 ? Number(args[afterAt + 1]) : 0,
    );
  },
  undrop: ({ cluster: c }) => c.undrop(),
};

const FAULT_COMMANDS: Record<string, Command> = {
  crash: ({ cluster: c }, args) => c.crash(args[0]!),
  restart: ({ cluster: c }, args) => c.restart(args[0]!),
  'corrupt-next-snapshot': ({ cluster: c }) => c.corruptNextSnapshot(),
  // delay-next-snapshot ROUNDS
  'delay-next-snapshot': ({ cluster: c }, args) => c.delayNextSnapshot(Number(args[0])),
  'corrupt-wal': ({ cluster: c }, args) => c.corruptWal(args[0]!),
};

const MEMBERSHIP_COMMANDS: Record<string, Command> = {
  // join NAME via SEED [SEED...]
  join: ({ cluster: c }, args) => c.join(args[0]!, args.slice(2)),
  // admin promote|remove|transfer NODE [via NODE]; admin filter NODE PREFIX… [tenant:T …] | --clear [via NODE]
  admin: ({ cluster: c }, args) => {
    const viaAt = args.indexOf('via');
    const words = viaAt < 0 ? args : args.slice(0, viaAt);
    const via = viaAt < 0 ? undefined : args[viaAt + 1];
    if (words[0] === 'filter') {
      const items = words.slice(2);
      const filter = items.includes('--clear')
        ? null
        : {
            prefixes: items.filter((w) => !w.startsWith('tenant:')),
            tenants: items.filter((w) => w.startsWith('tenant:')).map((w) => w.slice('tenant:'.length)),
          };
      c.admin('filter', words[1]!, via, filter);
    } else c.admin(words[0] as 'promote' | 'remove' | 'transfer', words[1]!, via);
    c.deliver();
  },
};

// A Map, not an object, so that a word such as `constructor` is an unknown command.
const COMMANDS = new Map<string, Command>(
  Object.entries({
    ...SETUP_COMMANDS,
    ...CHECK_COMMANDS,
    ...CLIENT_COMMANDS,
    ...NETWORK_COMMANDS,
    ...FAULT_COMMANDS,
    ...MEMBERSHIP_COMMANDS,
  }),
);

function buildRequest(method: string, raw: Record<string, unknown>): RpcRequest {
  switch (method) {
    case 'ShipSegment': {
      const frame = raw.frame as
        | {
            prevSeq: number;
            prevTerm: number;
            commitSeq: number;
            entries: { seq: number; term: number; kind: number; data: string }[];
          }
        | undefined;
      const payload = frame
        ? encodeSegmentFrame({
            ...frame,
            entries: frame.entries.map((e): Entry => ({ ...e, data: new TextEncoder().encode(e.data) })),
          })
        : new Uint8Array(0);
      const { frame: _omit, ...rest } = raw;
      return { method, body: ShipSegmentRequest.fromPartial({ ...rest, payload }) };
    }
    case 'Heartbeat':
      return { method, body: HeartbeatRequest.fromPartial(raw) };
    case 'RequestVote':
      return { method, body: VoteRequest.fromPartial(raw) };
    case 'JoinCluster':
      return { method, body: JoinRequest.fromPartial(raw) };
    case 'StreamSegments':
      return { method, body: StreamRequest.fromPartial(raw) };
    case 'FetchSnapshot':
      return { method, body: SnapshotRequest.fromPartial(raw) };
    case 'ReportApplied':
      return { method, body: AppliedReport.fromPartial(raw) };
    case 'TimeoutNow':
      return { method, body: TimeoutNowRequest.fromPartial(raw) };
    default:
      throw new Error(`unknown method ${method}`);
  }
}

export type { EngineLimits };
