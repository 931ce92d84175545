// The conditions a scenario's `expect` and `until` test (grammar in scenarios/README.md): one parser per
// condition word, grouped by what it reads (a node's status, the roster, the messages sent, the effects
// emitted, the scripted reads). A parser reads its arguments once, when the line is run, and returns a test the
// world can poll tick by tick plus the sentence a failure prints.
import { StatusCode } from '../engine/index.js';
import { inCommunities } from '../engine/communities.js';
import type { Lockstep, MessageRecord, ScriptedRead } from './lockstep.js';

/** What a condition reads of a running scenario. */
export interface ConditionState {
  cluster: Lockstep;
  last: MessageRecord | null;
  reads: Map<string, ScriptedRead>;
  /** markedMessageCount: how many messages were sent at the script's last `mark` (0 before any). */
  markedMessageCount: number;
}

export interface Condition {
  test: () => boolean;
  explain: () => string;
}

/** Parses one condition word's arguments (the words after it) into a condition. */
type ConditionParser = (state: ConditionState, rest: string[]) => Condition;

export function condition(state: ConditionState, args: string[]): Condition {
  if (args[0] === 'not') {
    const inner = condition(state, args.slice(1));
    return { test: () => !inner.test(), explain: () => `not (${args.slice(1).join(' ')}) failed: it holds` };
  }
  const [what, ...rest] = args;
  const parse = what === undefined ? undefined : CONDITIONS.get(what);
  if (!parse) throw new Error(`unknown condition ${what}`);
  return parse(state, rest);
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

function numeric(label: string, read: () => number, op: string, value: string): Condition {
  return {
    test: () => compare(read(), op, Number(value)),
    explain: () => `${label} is ${read()}, wanted ${op} ${value}`,
  };
}

function bool(label: string, read: () => boolean, want: string): Condition {
  return {
    test: () => read() === (want === 'true'),
    explain: () => `${label} is ${read()}, wanted ${want}`,
  };
}

const statusOf = (state: ConditionState, name: string) => state.cluster.node(name).status();

type Status = ReturnType<typeof statusOf>;

/** `WHAT NAME OP N` on a number of NAME's status. */
const numericStatus =
  (label: string, read: (s: Status) => number): ConditionParser =>
  (state, rest) =>
    numeric(`${rest[0]} ${label}`, () => read(statusOf(state, rest[0]!)), rest[1]!, rest[2]!);

/** `WHAT NAME true|false` on a flag of NAME's status. */
const boolStatus =
  (label: string, read: (s: Status) => boolean): ConditionParser =>
  (state, rest) =>
    bool(`${rest[0]} ${label}`, () => read(statusOf(state, rest[0]!)), rest[1]!);

const NODE_CONDITIONS: Record<string, ConditionParser> = {
  leader: ({ cluster: c }, rest) => {
    const name = rest[0];
    return {
      test: () => (name ? c.leader()?.name === name : c.leader() !== undefined),
      explain: () => `leader is ${c.leader()?.name ?? 'none'}${name ? `, wanted ${name}` : ''}`,
    };
  },
  'no-leader': ({ cluster: c }) => ({
    test: () => c.leader() === undefined,
    explain: () => `leader is ${c.leader()?.name}`,
  }),
  role: (state, rest) => ({
    test: () => statusOf(state, rest[0]!).role === rest[1],
    explain: () => `${rest[0]} is ${statusOf(state, rest[0]!).role}, wanted ${rest[1]}`,
  }),
  term: numericStatus('term', (s) => s.term),
  commit: numericStatus('commit', (s) => s.commitSeq),
  applied: numericStatus('applied', (s) => s.appliedSeq),
  'last-seq': numericStatus('last seq', (s) => s.lastSeq),
  'snapshot-seq': numericStatus('snapshot seq', (s) => s.snapshotSeq),
  'log-base': ({ cluster: c }, rest) =>
    numeric(`${rest[0]} log base`, () => c.node(rest[0]!).engine.logBase().seq, rest[1]!, rest[2]!),
  lag: numericStatus('lag gauge', (s) => Math.max(0, ...Object.values(s.lagGaugeByShard))),
  ready: boolStatus('ready', (s) => s.ready),
  removed: boolStatus('removed', (s) => s.removed),
  halted: boolStatus('halted', (s) => s.halted !== ''),
  reseed: boolStatus('reseed', (s) => s.reseed),
};

const ROSTER_ROLE_NAMES = ['voter', 'learner', 'removed'];

const ROSTER_CONDITIONS: Record<string, ConditionParser> = {
  // member NAME voter|learner|removed|absent (in the leader's roster)
  member: ({ cluster: c }, rest) => {
    const read = () => {
      const roster = c.leader()?.status().roster;
      const m = roster?.members.find((x) => x.name === rest[0]);
      return m ? (ROSTER_ROLE_NAMES[m.role] ?? `role ${m.role}`) : 'absent';
    };
    return {
      test: () => read() === rest[1],
      explain: () => `${rest[0]} is ${read()} in the leader's roster, wanted ${rest[1]}`,
    };
  },
  // roster NODE NAME voter|learner|removed|absent (in NODE's own roster: the newest in its log)
  roster: (state, rest) => {
    const read = () => {
      const m = statusOf(state, rest[0]!).roster.members.find((x) => x.name === rest[1]);
      return m ? (ROSTER_ROLE_NAMES[m.role] ?? `role ${m.role}`) : 'absent';
    };
    return {
      test: () => read() === rest[2],
      explain: () => `${rest[1]} is ${read()} in ${rest[0]}'s roster, wanted ${rest[2]}`,
    };
  },
  converged: ({ cluster: c }) => {
    const read = () => {
      const live = [...c.nodes.values()].filter((n) => n.alive && !n.status().removed);
      const commits = new Set(live.map((n) => n.status().appliedSeq));
      // A filtered member holds its communities only: it must hold exactly the others' state restricted to them.
      const full = live.filter((n) => !n.status().filteredData);
      const states = new Set(full.map((n) => n.sim.machine.stateJson()));
      const reference = full[0]?.sim.machine.pairs() ?? [];
      const overlaysHold = live
        .filter((n) => n.status().filteredData)
        .every((n) => {
          const filter = n.status().dataFilter;
          const keep = reference.filter(([key]) => filter !== undefined && inCommunities(filter, { key, tenant: '' }));
          return JSON.stringify(n.sim.machine.pairs()) === JSON.stringify(keep);
        });
      return {
        ok: commits.size === 1 && states.size === 1 && overlaysHold,
        detail: live.map((n) => `${n.name}@${n.status().appliedSeq}`).join(' '),
      };
    };
    return { test: () => read().ok, explain: () => `applied frontiers: ${read().detail}` };
  },
  // applied-value NAME VALUE: NAME's state machine holds the write
  'applied-value': ({ cluster: c }, rest) => {
    const has = () => c.node(rest[0]!).holds(rest[1]!);
    return { test: has, explain: () => `${rest[0]} has${has() ? '' : ' not'} applied ${rest[1]}` };
  },
  // coverage SITUATION OP N: how often the world reached a rare situation (sim/coverage.ts)
  coverage: ({ cluster: c }, rest) => {
    const counts = c.cluster.coverage.counts as Record<string, number>;
    if (counts[rest[0]!] === undefined) throw new Error(`unknown coverage situation ${rest[0]}`);
    return numeric(`coverage ${rest[0]}`, () => counts[rest[0]!]!, rest[1]!, rest[2]!);
  },
  // The world's checkers throw the moment an invariant breaks, so reaching this line is the proof.
  safe: () => ({ test: () => true, explain: () => 'every checker held' }),
};

const MESSAGE_CONDITIONS: Record<string, ConditionParser> = {
  // sent NAME METHOD [to NODE] [since-mark] [OP N]
  sent: (state, rest) => {
    const [from, method, ...more] = rest;
    const toAt = more.indexOf('to');
    const to = toAt >= 0 ? more.splice(toAt, 2)[1] : undefined;
    const sinceAt = more.indexOf('since-mark');
    if (sinceAt >= 0) more.splice(sinceAt, 1);
    const start = sinceAt >= 0 ? state.markedMessageCount : 0;
    const count = () => {
      let n = 0;
      const messages = state.cluster.messages;
      for (let i = start; i < messages.length; i++) {
        const m = messages[i]!;
        if (m.kind === 'request' && m.from === from && m.method === method && (to === undefined || m.to === to)) n++;
      }
      return n;
    };
    const what = `${from} ${method} requests${to === undefined ? '' : ` to ${to}`}${sinceAt >= 0 ? ' since the mark' : ''}`;
    return more[0]
      ? numeric(what, count, more[0], more[1]!)
      : { test: () => count() > 0, explain: () => `${what}: ${count()}` };
  },
  // sent-vote NAME prevote|vote OP N
  'sent-vote': ({ cluster: c }, rest) => {
    const count = () =>
      c.messages.filter(
        (m) =>
          m.kind === 'request' &&
          m.from === rest[0] &&
          m.request?.method === 'RequestVote' &&
          m.request.body.prevote === (rest[1] === 'prevote'),
      ).length;
    return numeric(`${rest[0]} ${rest[1]} requests`, count, rest[2]!, rest[3]!);
  },
  // error FROM METHOD|* CODE [TRAILER[=VALUE]]
  error: ({ cluster: c }, rest) => {
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
  },
  // last FIELD=VALUE on the injected request's response body, or last status=CODE
  last: (state, rest) => {
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
  },
};

const EFFECT_CONDITIONS: Record<string, ConditionParser> = {
  // effect NAME TYPE [REASON|CODE] (the reason may have spaces: the rest of the line)
  effect: ({ cluster: c }, rest) => {
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
  },
  'no-effect': ({ cluster: c }, rest) => {
    const found = () =>
      c
        .node(rest[0]!)
        .effects.some(
          (e) =>
            e.type === rest[1] &&
            (rest[2] === undefined || ('code' in e && e.code === rest[2]) || ('reason' in e && e.reason === rest[2])),
        );
    return { test: () => !found(), explain: () => `${rest[0]} emitted ${rest[1]} ${rest[2] ?? ''}` };
  },
};

const READ_CONDITIONS: Record<string, ConditionParser> = {
  // read NAME asking|waiting|served|refused [REFUSAL]
  read: (state, rest) => {
    const read = readNamed(state, rest[0]!);
    const describe = () =>
      `read ${rest[0]} is ${read.state}${read.refusal ? ` (${read.refusal})` : ''}${read.state === 'waiting' || read.state === 'served' ? ` at index ${read.index} via ${read.askedVia}` : ''}`;
    return {
      test: () => read.state === rest[1] && (rest[2] === undefined || read.refusal === rest[2]),
      explain: () => `${describe()}, wanted ${rest.slice(1).join(' ')}`,
    };
  },
  // read-saw NAME VALUE: the served read's state held VALUE
  'read-saw': (state, rest) => {
    const read = readNamed(state, rest[0]!);
    const saw = () => read.state === 'served' && read.seen.includes(rest[1]!);
    return {
      test: saw,
      explain: () =>
        read.state === 'served'
          ? `read ${rest[0]} saw [${read.seen.join(', ')}], not ${rest[1]}`
          : `read ${rest[0]} is ${read.state}, not served`,
    };
  },
};

// A Map, not an object, so that a word such as `constructor` is an unknown condition.
const CONDITIONS = new Map<string, ConditionParser>(
  Object.entries({
    ...NODE_CONDITIONS,
    ...ROSTER_CONDITIONS,
    ...MESSAGE_CONDITIONS,
    ...EFFECT_CONDITIONS,
    ...READ_CONDITIONS,
  }),
);

function readNamed(state: ConditionState, name: string): ScriptedRead {
  const read = state.reads.get(name);
  if (!read) throw new Error(`no read named ${name} (start one with \`read NODE as ${name}\`)`);
  return read;
}
