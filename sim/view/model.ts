// ViewModel: what the trace viewer draws, built from a `--trace` JSONL file:
// engine steps (roles and terms from their `role` effects), world lines (faults
// as bands), view notes (messages with their fate, the nodes, the failure).
// Lines it does not know are skipped: a file is input, never trusted.

/** MessageFate: delivered to the engine, lost on the network, or arrived where no engine took it (down, stale, run over). */
export type MessageFate = 'delivered' | 'lost' | 'undelivered';

export interface ViewMessage {
  id: number;
  from: number;
  to: number;
  sentUs: number;
  /** atUs: when it reached the engine (delivered), its planned arrival (undelivered), or -1 (lost). */
  atUs: number;
  fate: MessageFate;
  /** kind is the RPC method; answers carry the method of their call. */
  kind: string;
  answer: boolean;
  copy: boolean;
  text: string;
}

/**
 * ViewRole is one stretch of a lane in one role: the engine's (leader, candidate, precandidate, follower,
 * joiner, removed), learner (a follower its own roster lists as a learner), or down (crashed).
 */
export interface ViewRole {
  node: number;
  fromUs: number;
  toUs: number;
  role: string;
  term: number;
}

/** ViewFault is a band (crash..restart, pause..resume, partition..heal, clog) or a point (join, foreign call, others). */
export interface ViewFault {
  kind: string;
  nodes: number[];
  fromUs: number;
  toUs: number;
  label: string;
}

/** ViewStep is one engine step with effects: [timeUs, node, input, effects]. */
export type ViewStep = [number, number, string, string];

export interface ViewFailure {
  invariant: string;
  node: number;
  message: string;
  atUs: number;
  event: number;
}

export interface ViewModel {
  title: string;
  seed: number | null;
  nodes: string[];
  tickUs: number;
  electionTimeoutTicks: number;
  endUs: number;
  result: string;
  events: number;
  messages: ViewMessage[];
  roles: ViewRole[];
  faults: ViewFault[];
  steps: ViewStep[];
  failure: ViewFailure | null;
  /** linked: the file had view notes (messages); without them no arrows can be drawn. */
  linked: boolean;
  /** wallStartMs: a replayed real recording's time zero (ms since the epoch); the axis then shows wall-clock times. */
  wallStartMs: number | null;
}

/** VIEW_STEP_COUNT_MAX bounds the steps kept for the detail panel (the page stays small enough to open). */
export const VIEW_STEP_COUNT_MAX = 200_000;
/** VIEW_MESSAGE_COUNT_MAX bounds the messages kept. */
export const VIEW_MESSAGE_COUNT_MAX = 400_000;

type Line = Record<string, unknown>;

const num = (v: unknown, fallback = 0): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** buildViewModel reads the lines of a trace file (written by `npm run sim -- --trace FILE`). */
export function buildViewModel(text: string, title = 'sim run'): ViewModel {
  const model: ViewModel = {
    title,
    seed: null,
    nodes: [],
    tickUs: 100_000,
    electionTimeoutTicks: 10,
    endUs: 0,
    result: 'unknown',
    events: 0,
    messages: [],
    roles: [],
    faults: [],
    steps: [],
    failure: null,
    linked: false,
    wallStartMs: null,
  };
  const messagesById = new Map<number, ViewMessage>();
  const open = new RoleTracker(model);
  const bands = new BandTracker(model);
  let failureNode = '';
  for (const raw of text.split('\n')) {
    if (raw.length === 0 || raw[0] !== '{') continue;
    let line: Line;
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) continue;
      line = parsed as Line;
    } catch {
      continue;
    }
    const t = num(line.t, -1);
    if (t > model.endUs) model.endUs = t;
    if (line.v !== undefined) {
      if (line.v === 'meta') {
        model.seed = num(line.seed, 0);
        model.nodes = Array.isArray(line.nodes) ? line.nodes.map(String) : [];
        model.tickUs = num(line.tickUs, model.tickUs);
        model.electionTimeoutTicks = num(line.electionTimeoutTicks, model.electionTimeoutTicks);
        if (typeof line.wallStartMs === 'number' && Number.isFinite(line.wallStartMs))
          model.wallStartMs = line.wallStartMs;
      } else if (line.v === 'm' && model.messages.length < VIEW_MESSAGE_COUNT_MAX) {
        model.linked = true;
        const at = num(line.at, -1);
        const message: ViewMessage = {
          id: num(line.m),
          from: num(line.f),
          to: num(line.to),
          sentUs: t,
          atUs: at,
          fate: at < 0 ? 'lost' : 'undelivered',
          kind: str(line.k) || '?',
          answer: line.a === 1,
          copy: line.c === 1,
          text: str(line.d),
        };
        messagesById.set(message.id, message);
        model.messages.push(message);
        noteNode(model, Math.max(message.from, message.to));
      } else if (line.v === 'r') {
        const message = messagesById.get(num(line.m));
        if (message) {
          message.fate = 'delivered';
          message.atUs = t;
        }
      } else if (line.v === 'l') {
        open.learner(num(line.n), t, line.learner === 1);
      } else if (line.v === 'fail') {
        failureNode = str(line.node);
        model.failure = {
          invariant: str(line.invariant),
          node: -1,
          message: str(line.message),
          atUs: t,
          event: num(line.i),
        };
      }
      continue;
    }
    model.events++;
    if (typeof line.end === 'string') {
      model.result = line.end;
      continue;
    }
    if (typeof line.w === 'string') {
      bands.world(t, line.w, open);
      continue;
    }
    const node = num(line.n, -1);
    if (node < 0 || t < 0) continue;
    noteNode(model, node);
    const effects = Array.isArray(line.fx) ? line.fx.map(String) : [];
    // Engines start as followers without saying so; a joiner's lane starts at its join line.
    if (!open.has(node)) open.set(node, t, 'follower', open.lastTerm(node));
    for (const effect of effects) {
      const role = /^role (\w+) t(\d+)/.exec(effect);
      if (role) open.set(node, t, role[1]!, Number(role[2]));
      const hardState = /^hs t(\d+)/.exec(effect);
      if (hardState) open.term(node, t, Number(hardState[1]));
    }
    if (effects.length > 0 && model.steps.length < VIEW_STEP_COUNT_MAX)
      model.steps.push([t, node, str(line.in), effects.join(', ')]);
  }
  open.closeAll(model.endUs);
  bands.closeAll(model.endUs);
  if (model.failure) {
    const match = /^n(\d+)$/.exec(failureNode);
    model.failure.node = match ? Number(match[1]) - 1 : -1;
  } else if (model.result.startsWith('fail ')) {
    model.failure = { invariant: model.result.slice(5), node: -1, message: '', atUs: model.endUs, event: model.events };
  }
  return model;
}

function noteNode(model: ViewModel, index: number): void {
  while (model.nodes.length <= index) model.nodes.push(`n${model.nodes.length + 1}`);
}

/** RoleTracker turns role effects, crashes and restarts into stretches of each lane. */
class RoleTracker {
  private readonly current = new Map<number, ViewRole>();
  /** learners: nodes whose own roster entry is a learner (view note "l"); their follower stretches show as learner. */
  private readonly learners = new Set<number>();

  constructor(private readonly model: ViewModel) {}

  set(node: number, atUs: number, engineRole: string, term: number): void {
    const role = engineRole === 'follower' && this.learners.has(node) ? 'learner' : engineRole;
    const now = this.current.get(node);
    if (now && now.role === role && now.term === term) return;
    if (now && now.fromUs === atUs) {
      // Two changes in one step (a new term, then a role): one stretch, the last word.
      now.role = role;
      now.term = term;
      return;
    }
    this.close(node, atUs);
    const next: ViewRole = { node, fromUs: atUs, toUs: atUs, role, term };
    this.current.set(node, next);
    this.model.roles.push(next);
  }

  /** term: a saved hard state with a newer term starts a new stretch (same role) so its label shows. */
  term(node: number, atUs: number, term: number): void {
    const now = this.current.get(node);
    if (now && term > now.term && now.role !== 'down')
      this.set(node, atUs, now.role === 'learner' ? 'follower' : now.role, term);
  }

  learner(node: number, atUs: number, learner: boolean): void {
    if (learner) this.learners.add(node);
    else this.learners.delete(node);
    const now = this.current.get(node);
    if (now && (now.role === 'follower' || now.role === 'learner')) this.set(node, atUs, 'follower', now.term);
  }

  has(node: number): boolean {
    return this.current.has(node);
  }

  close(node: number, atUs: number): void {
    const now = this.current.get(node);
    if (now) now.toUs = atUs;
    this.current.delete(node);
  }

  closeAll(endUs: number): void {
    for (const node of [...this.current.keys()]) this.close(node, endUs);
  }

  /** lastTerm is the term a node last showed (a restarted node keeps it until its engine says more). */
  lastTerm(node: number): number {
    return this.current.get(node)?.term ?? [...this.model.roles].reverse().find((r) => r.node === node)?.term ?? 0;
  }
}

/** BandTracker turns world lines (sim/cluster.ts recordWorld) into fault bands and markers. */
class BandTracker {
  private readonly openBands = new Map<string, ViewFault>();

  constructor(private readonly model: ViewModel) {}

  world(atUs: number, label: string, roles: RoleTracker): void {
    if (label.startsWith('client ') || label === 'liveness probe' || label.startsWith('fault #')) return;
    const nodes = (text: string): number[] => [...text.matchAll(/n(\d+)/g)].map((m) => Number(m[1]) - 1);
    let match: RegExpExecArray | null;
    if ((match = /^crash (n\d+)/.exec(label))) {
      const node = nodes(match[1]!)[0]!;
      const term = roles.lastTerm(node);
      roles.set(node, atUs, 'down', term);
      this.start(`down ${node}`, { kind: 'crash', nodes: [node], fromUs: atUs, toUs: atUs, label });
    } else if ((match = /^restart (n\d+)/.exec(label))) {
      const node = nodes(match[1]!)[0]!;
      roles.set(node, atUs, 'follower', roles.lastTerm(node));
      this.end(`down ${node}`, atUs);
    } else if ((match = /^pause (n\d+)/.exec(label))) {
      const node = nodes(match[1]!)[0]!;
      this.start(`pause ${node}`, { kind: 'pause', nodes: [node], fromUs: atUs, toUs: atUs, label });
    } else if ((match = /^resume (n\d+)/.exec(label))) {
      this.end(`pause ${nodes(match[1]!)[0]!}`, atUs);
    } else if (label.startsWith('partition ') || label.startsWith('isolate ')) {
      const key = `partition ${this.openBands.size} ${atUs}`;
      this.start(key, { kind: 'partition', nodes: nodes(label), fromUs: atUs, toUs: atUs, label });
    } else if (label === 'heal' || label.startsWith('liveness phase')) {
      for (const key of [...this.openBands.keys()]) if (key.startsWith('partition ')) this.end(key, atUs);
      if (label !== 'heal') this.point('phase', [], atUs, label);
    } else if ((match = /^clog (n\d+)->(n\d+) (\d+(?:\.\d+)?)ms/.exec(label))) {
      const from = nodes(match[1]!)[0]!;
      const to = nodes(match[2]!)[0]!;
      this.model.faults.push({
        kind: 'clog',
        nodes: [from, to],
        fromUs: atUs,
        toUs: atUs + Number(match[3]) * 1_000,
        label,
      });
    } else if (label.startsWith('join ')) {
      const joiner = nodes(label.split(' via ')[0]!);
      for (const node of joiner) roles.set(node, atUs, 'joiner', 0);
      this.point('join', joiner, atUs, label);
    } else if (label.startsWith('foreign ')) {
      this.point('foreign', nodes(label.split('->')[1] ?? ''), atUs, label);
    } else {
      this.point('other', [], atUs, label);
    }
  }

  private point(kind: string, nodes: number[], atUs: number, label: string): void {
    this.model.faults.push({ kind, nodes, fromUs: atUs, toUs: atUs, label });
  }

  private start(key: string, fault: ViewFault): void {
    this.end(key, fault.fromUs);
    this.openBands.set(key, fault);
    this.model.faults.push(fault);
  }

  private end(key: string, atUs: number): void {
    const band = this.openBands.get(key);
    if (!band) return;
    band.toUs = atUs;
    this.openBands.delete(key);
  }

  closeAll(endUs: number): void {
    for (const key of [...this.openBands.keys()]) this.end(key, endUs);
  }
}
