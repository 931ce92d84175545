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
import {
  encodeSegmentFrame,
  StatusCode,
  type RpcRequest,
  type EngineLimits,
  type Compat,
  type Entry,
} from '../engine/index.js';
import { Lockstep, type MessageRecord, type ScriptedRead } from './lockstep.js';

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

export function runScenario(text: string, name = 'scenario'): ScenarioResult {
  const cluster = new Lockstep();
  const state: RunState = { cluster, last: null, values: new Map(), reads: new Map() };
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

interface RunState {
  cluster: Lockstep;
  last: MessageRecord | null;
  values: Map<string, number>;
  reads: Map<string, ScriptedRead>;
}

function runCommand(state: RunState, line: string): void {
  const c = state.cluster;
  const [verb, ...args] = line.split(/\s+/);
  switch (verb) {
    case 'limits':
      for (const kv of args) {
        const [k, v] = kv.split('=');
        if (!(k! in c.limits)) throw new Error(`unknown limit ${k}`);
        (c.limits as unknown as Record<string, number>)[k!] = Number(v);
      }
      return;
    case 'compat': {
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
      return;
    }
    case 'cluster': {
      // cluster A B C [learner D E]
      const at = args.indexOf('learner');
      c.bootstrap(at >= 0 ? args.slice(0, at) : args, at >= 0 ? args.slice(at + 1) : []);
      return;
    }
    case 'tick':
      c.tick(Number(args[0] ?? 1));
      return;
    case 'elect':
      if (!c.elect(args[0]!)) throw new Error(`${args[0]} did not win an election`);
      return;
    case 'until': {
      const withinAt = args.indexOf('within');
      const rounds = withinAt >= 0 ? Number(args[withinAt + 1]) : UNTIL_ROUNDS_DEFAULT;
      const cond = condition(state, withinAt >= 0 ? args.slice(0, withinAt) : args);
      if (!c.tickUntil(cond.test, rounds)) throw new Error(`not reached within ${rounds} ticks: ${cond.explain()}`);
      return;
    }
    case 'expect': {
      const cond = condition(state, args);
      if (!cond.test()) throw new Error(`expectation failed: ${cond.explain()}`);
      return;
    }
    case 'propose': {
      const via = args[1] === 'via' ? args[2] : undefined;
      c.propose(args[0]!, via);
      return;
    }
    case 'read': {
      // read NODE as NAME: a linearizable read at NODE (a follower's goes through the leader)
      if (args[1] !== 'as' || !args[2]) throw new Error('usage: read NODE as NAME');
      state.reads.set(args[2], c.read(args[0]!));
      return;
    }
    case 'propose-many': {
      const count = Number(args[0]);
      for (let i = 0; i < count; i++) c.propose(`${args[1] ?? 'w'}${i}`);
      return;
    }
    case 'partition': {
      const groups = args
        .join(' ')
        .split('|')
        .map((g) => g.trim().split(/\s+/).filter(Boolean));
      c.partition(groups);
      return;
    }
    case 'oneway':
      c.block(args[0]!, args[2]!);
      return; // oneway A -> B
    case 'isolate':
      c.isolate(args[0]!);
      return;
    case 'heal':
      c.heal();
      return;
    case 'drop': {
      // drop FROM TO METHOD [COUNT|*] [after K]
      const afterAt = args.indexOf('after');
      c.drop(
        args[0]!,
        args[1]!,
        args[2]!,
        args[3] === undefined || args[3] === '*' || args[3] === 'after' ? -1 : Number(args[3]),
        afterAt >= 0 ? Number(args[afterAt + 1]) : 0,
      );
      return;
    }
    case 'undrop':
      c.undrop();
      return;
    case 'crash':
      c.crash(args[0]!);
      return;
    case 'restart':
      c.restart(args[0]!);
      return;
    case 'corrupt-next-snapshot':
      c.corruptNextSnapshot();
      return;
    case 'delay-next-snapshot':
      // delay-next-snapshot ROUNDS
      c.delayNextSnapshot(Number(args[0]));
      return;
    case 'corrupt-wal':
      c.corruptWal(args[0]!);
      return;
    case 'join': {
      // join NAME via SEED [SEED...]
      c.join(args[0]!, args.slice(2));
      return;
    }
    case 'admin':
      c.admin(args[0] as 'promote' | 'remove' | 'transfer', args[1]!, args[2] === 'via' ? args[3] : undefined);
      c.deliver();
      return;
    case 'send': {
      // send NODE METHOD {json}
      const request = buildRequest(args[1]!, JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>);
      state.last = null;
      c.inject(args[0]!, request, (outcome) => {
        state.last = outcome;
      });
      if (!state.last) throw new Error('the node did not answer the injected request');
      return;
    }
    default:
      throw new Error(`unknown command ${verb}`);
  }
}

interface Condition {
  test: () => boolean;
  explain: () => string;
}

function compare(actual: number, op: string, expected: number): boolean {
  switch (op) {
    case '==':
      return actual === expected;
    case '!=':
      return actual !== expected;
    case '>=':
      return actual >= expected;
    case '<=':
      return actual <= expected;
    case '>':
      return actual > expected;
    case '<':
      return actual < expected;
    default:
      throw new Error(`unknown operator ${op}`);
  }
}

function condition(state: RunState, args: string[]): Condition {
  const c = state.cluster;
  if (args[0] === 'not') {
    const inner = condition(state, args.slice(1));
    return { test: () => !inner.test(), explain: () => `not (${args.slice(1).join(' ')}) failed: it holds` };
  }
  const [what, ...rest] = args;
  const statusOf = (name: string) => c.node(name).status();
  const numeric = (label: string, read: () => number, op: string, value: string): Condition => ({
    test: () => compare(read(), op, Number(value)),
    explain: () => `${label} is ${read()}, wanted ${op} ${value}`,
  });
  const bool = (label: string, read: () => boolean, want: string): Condition => ({
    test: () => read() === (want === 'true'),
    explain: () => `${label} is ${read()}, wanted ${want}`,
  });
  switch (what) {
    case 'leader': {
      const name = rest[0];
      return {
        test: () => (name ? c.leader()?.name === name : c.leader() !== undefined),
        explain: () => `leader is ${c.leader()?.name ?? 'none'}${name ? `, wanted ${name}` : ''}`,
      };
    }
    case 'no-leader':
      return { test: () => c.leader() === undefined, explain: () => `leader is ${c.leader()?.name}` };
    case 'role':
      return {
        test: () => statusOf(rest[0]!).role === rest[1],
        explain: () => `${rest[0]} is ${statusOf(rest[0]!).role}, wanted ${rest[1]}`,
      };
    case 'term':
      return numeric(`${rest[0]} term`, () => statusOf(rest[0]!).term, rest[1]!, rest[2]!);
    case 'commit':
      return numeric(`${rest[0]} commit`, () => statusOf(rest[0]!).commitSeq, rest[1]!, rest[2]!);
    case 'applied':
      return numeric(`${rest[0]} applied`, () => statusOf(rest[0]!).appliedSeq, rest[1]!, rest[2]!);
    case 'last-seq':
      return numeric(`${rest[0]} last seq`, () => statusOf(rest[0]!).lastSeq, rest[1]!, rest[2]!);
    case 'snapshot-seq':
      return numeric(`${rest[0]} snapshot seq`, () => statusOf(rest[0]!).snapshotSeq, rest[1]!, rest[2]!);
    case 'log-base':
      return numeric(`${rest[0]} log base`, () => c.node(rest[0]!).engine.logBase().seq, rest[1]!, rest[2]!);
    case 'lag':
      return numeric(
        `${rest[0]} lag gauge`,
        () => Math.max(0, ...Object.values(statusOf(rest[0]!).lagGaugeByShard)),
        rest[1]!,
        rest[2]!,
      );
    case 'ready':
      return bool(`${rest[0]} ready`, () => statusOf(rest[0]!).ready, rest[1]!);
    case 'removed':
      return bool(`${rest[0]} removed`, () => statusOf(rest[0]!).removed, rest[1]!);
    case 'halted':
      return bool(`${rest[0]} halted`, () => statusOf(rest[0]!).halted !== '', rest[1]!);
    case 'reseed':
      return bool(`${rest[0]} reseed`, () => statusOf(rest[0]!).reseed, rest[1]!);
    case 'member': {
      // member NAME voter|learner|removed|absent (in the leader's roster)
      const roleNames = ['voter', 'learner', 'removed'];
      const read = () => {
        const roster = c.leader()?.status().roster;
        const m = roster?.members.find((x) => x.name === rest[0]);
        return m ? (roleNames[m.role] ?? `role ${m.role}`) : 'absent';
      };
      return {
        test: () => read() === rest[1],
        explain: () => `${rest[0]} is ${read()} in the leader's roster, wanted ${rest[1]}`,
      };
    }
    case 'roster': {
      // roster NODE NAME voter|learner|removed|absent (in NODE's own roster: the newest in its log)
      const roleNames = ['voter', 'learner', 'removed'];
      const read = () => {
        const m = statusOf(rest[0]!).roster.members.find((x) => x.name === rest[1]);
        return m ? (roleNames[m.role] ?? `role ${m.role}`) : 'absent';
      };
      return {
        test: () => read() === rest[2],
        explain: () => `${rest[1]} is ${read()} in ${rest[0]}'s roster, wanted ${rest[2]}`,
      };
    }
    case 'converged': {
      const read = () => {
        const live = [...c.nodes.values()].filter((n) => n.alive && !n.status().removed);
        const commits = new Set(live.map((n) => n.status().appliedSeq));
        const states = new Set(live.map((n) => n.sim.machine.stateJson()));
        return {
          ok: commits.size === 1 && states.size === 1,
          detail: live.map((n) => `${n.name}@${n.status().appliedSeq}`).join(' '),
        };
      };
      return { test: () => read().ok, explain: () => `applied frontiers: ${read().detail}` };
    }
    case 'applied-value': {
      // applied-value NAME VALUE: NAME's state machine holds the write
      const has = () => c.node(rest[0]!).holds(rest[1]!);
      return { test: has, explain: () => `${rest[0]} has${has() ? '' : ' not'} applied ${rest[1]}` };
    }
    case 'sent': {
      // sent NAME METHOD [OP N]
      const count = () =>
        c.messages.filter((m) => m.kind === 'request' && m.from === rest[0] && m.method === rest[1]).length;
      return rest[2]
        ? numeric(`${rest[0]} ${rest[1]} requests`, count, rest[2], rest[3]!)
        : { test: () => count() > 0, explain: () => `${rest[0]} sent ${count()} ${rest[1]}` };
    }
    case 'sent-vote': {
      // sent-vote NAME prevote|vote OP N
      const count = () =>
        c.messages.filter(
          (m) =>
            m.kind === 'request' &&
            m.from === rest[0] &&
            m.request?.method === 'RequestVote' &&
            m.request.body.prevote === (rest[1] === 'prevote'),
        ).length;
      return numeric(`${rest[0]} ${rest[1]} requests`, count, rest[2]!, rest[3]!);
    }
    case 'error': {
      // error FROM METHOD|* CODE [TRAILER[=VALUE]]
      const code = StatusCode[rest[2] as keyof typeof StatusCode];
      const [trailer, trailerValue] = (rest[3] ?? '').split('=');
      const found = () =>
        c.messages.some(
          (m) =>
            m.kind === 'error' &&
            m.from === rest[0] &&
            (rest[1] === '*' || m.method === rest[1]) &&
            m.status?.code === code &&
            (!trailer ||
              (m.status.trailers[trailer] !== undefined &&
                (trailerValue === undefined || m.status.trailers[trailer] === trailerValue))),
        );
      return {
        test: found,
        explain: () => `${rest[0]} answered no ${rest[1]} with ${rest[2]}${rest[3] ? ` and trailer ${rest[3]}` : ''}`,
      };
    }
    case 'effect': {
      // effect NAME TYPE [REASON|CODE] (the reason may have spaces: the rest of the line)
      const want = rest.length > 2 ? rest.slice(2).join(' ') : undefined;
      const found = () =>
        c
          .node(rest[0]!)
          .effects.some(
            (e) =>
              e.type === rest[1] &&
              (want === undefined || ('reason' in e && e.reason === want) || ('code' in e && e.code === want)),
          );
      return { test: found, explain: () => `${rest[0]} emitted no ${rest[1]} ${want ?? ''}` };
    }
    case 'no-effect': {
      const found = () =>
        c
          .node(rest[0]!)
          .effects.some(
            (e) =>
              e.type === rest[1] &&
              (rest[2] === undefined || ('code' in e && e.code === rest[2]) || ('reason' in e && e.reason === rest[2])),
          );
      return { test: () => !found(), explain: () => `${rest[0]} emitted ${rest[1]} ${rest[2] ?? ''}` };
    }
    case 'last': {
      // last FIELD=VALUE on the injected request's response body, or last status=CODE
      const contains = rest.join(' ').includes('~');
      const [field, value] = contains ? [rest[0]!.split('~')[0]!, rest.join(' ').split('~')[1]!] : rest[0]!.split('=');
      const read = (): string => {
        const l = state.last;
        if (!l) return '(no answer)';
        if (field === 'status')
          return l.kind === 'error'
            ? (Object.entries(StatusCode).find(([, v]) => v === l.status?.code)?.[0] ?? '?')
            : 'OK';
        if (field!.startsWith('trailer:'))
          return l.status?.trailers[field!.slice(8)] !== undefined ? 'present' : 'absent';
        const body = l.response?.body as unknown as Record<string, unknown> | undefined;
        return String(body?.[field!]);
      };
      return {
        test: () => (contains ? read().includes(value!) : read() === value),
        explain: () => `last ${field} is ${read()}, wanted ${contains ? 'it to contain ' : ''}${value}`,
      };
    }
    case 'read': {
      // read NAME asking|waiting|served|refused [REFUSAL]
      const read = readNamed(state, rest[0]!);
      const describe = () =>
        `read ${rest[0]} is ${read.state}${read.refusal ? ` (${read.refusal})` : ''}${read.state === 'waiting' || read.state === 'served' ? ` at index ${read.index} via ${read.askedVia}` : ''}`;
      return {
        test: () => read.state === rest[1] && (rest[2] === undefined || read.refusal === rest[2]),
        explain: () => `${describe()}, wanted ${rest.slice(1).join(' ')}`,
      };
    }
    case 'read-saw': {
      // read-saw NAME VALUE: the served read's state held VALUE
      const read = readNamed(state, rest[0]!);
      const saw = () => read.state === 'served' && read.seen.includes(rest[1]!);
      return {
        test: saw,
        explain: () =>
          read.state === 'served'
            ? `read ${rest[0]} saw [${read.seen.join(', ')}], not ${rest[1]}`
            : `read ${rest[0]} is ${read.state}, not served`,
      };
    }
    case 'coverage': {
      // coverage SITUATION OP N: how often the world reached a rare situation (sim/coverage.ts)
      const counts = c.cluster.coverage.counts as Record<string, number>;
      if (counts[rest[0]!] === undefined) throw new Error(`unknown coverage situation ${rest[0]}`);
      return numeric(`coverage ${rest[0]}`, () => counts[rest[0]!]!, rest[1]!, rest[2]!);
    }
    // The world's checkers throw the moment an invariant breaks, so reaching this line is the proof.
    case 'safe':
      return { test: () => true, explain: () => 'every checker held' };
    default:
      throw new Error(`unknown condition ${what}`);
  }
}

function readNamed(state: RunState, name: string): ScriptedRead {
  const read = state.reads.get(name);
  if (!read) throw new Error(`no read named ${name} (start one with \`read NODE as ${name}\`)`);
  return read;
}

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
