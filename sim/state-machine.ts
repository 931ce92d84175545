// KvStateMachine is what committed entries drive on every node: kind-1 entries
// carry one client command (JSON put or compare-and-set), kind 2 and kind 4 only move appliedSeq.
import { inCommunities, inCommunitiesOf } from '../engine/communities.js';
import { EntryKind, type Entry, type MemberFilter } from '../engine/types.js';

export interface PutCommand {
  op: 'put';
  key: string;
  value: string;
  writeId: number;
}

/** CasCommand sets `value` only when the key holds `expected` (null = the key is absent). */
export interface CasCommand {
  op: 'cas';
  key: string;
  expected: string | null;
  value: string;
  writeId: number;
}

export type KvCommand = PutCommand | CasCommand;

/** CAS_OUTCOME_RETAIN_COUNT bounds the compare-and-set outcomes a machine remembers (clients read them at once). */
const CAS_OUTCOME_RETAIN_COUNT = 4_096;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeCommand(command: KvCommand): Uint8Array {
  if (command.op === 'cas') {
    return encoder.encode(
      JSON.stringify({
        op: 'cas',
        key: command.key,
        expected: command.expected,
        value: command.value,
        writeId: command.writeId,
      }),
    );
  }
  return encoder.encode(
    JSON.stringify({ op: command.op, key: command.key, value: command.value, writeId: command.writeId }),
  );
}

/** decodeCommand returns null for bytes that are not a put or cas command. */
export function decodeCommand(bytes: Uint8Array): KvCommand | null {
  try {
    const raw = JSON.parse(decoder.decode(bytes)) as Record<string, unknown>;
    if (typeof raw.key !== 'string' || typeof raw.value !== 'string' || typeof raw.writeId !== 'number') return null;
    if (raw.op === 'put') return { op: 'put', key: raw.key, value: raw.value, writeId: raw.writeId };
    if (raw.op === 'cas' && (raw.expected === null || typeof raw.expected === 'string')) {
      return { op: 'cas', key: raw.key, expected: raw.expected, value: raw.value, writeId: raw.writeId };
    }
    return null;
  } catch {
    return null;
  }
}

/** commandTakesEffect: a put always sets its value; a cas only when the key holds what it expects. */
export function commandTakesEffect(command: KvCommand, current: string | undefined): boolean {
  return command.op === 'put' || (current ?? null) === command.expected;
}

/** opaqueCommand reads free text as a put of the text under itself (KvStateMachine's opaqueCommands). */
export function opaqueCommand(bytes: Uint8Array): PutCommand {
  const text = decoder.decode(bytes);
  return { op: 'put', key: text, value: text, writeId: 0 };
}

/**
 * simCommunityOf: the community of a seeded run's or a script's write (engine/communities.ts): its key
 * (free text is its own key, as KvStateMachine's opaqueCommands keeps it); the simulator's records have
 * no tenant field.
 */
export function simCommunityOf(data: Uint8Array): { key: string; tenant: string } {
  const command = decodeCommand(data) ?? opaqueCommand(data);
  return { key: command.key, tenant: '' };
}

/** simCommunityOfKey: the community of a key the state holds — the one its writes have (simCommunityOf). */
export function simCommunityOfKey(key: string): { key: string; tenant: string } {
  return { key, tenant: '' };
}

/**
 * restrictStateJson: a stateJson text cut to `filter`'s communities (a filtered snapshot, sim/artifacts.ts);
 * null when the text is not a state.
 */
export function restrictStateJson(text: string, filter: MemberFilter): string | null {
  const machine = new KvStateMachine();
  if (machine.load(text) !== null) return null;
  const kv = inCommunitiesOf(machine.pairs(), filter, ([key]) => simCommunityOfKey(key));
  return JSON.stringify({ appliedSeq: machine.appliedSeq, kv });
}

/** strayKey: a key of a stateJson text outside `filter`'s communities (a filtered snapshot must hold none), else null. */
export function strayKey(text: string, filter: MemberFilter): string | null {
  const machine = new KvStateMachine();
  if (machine.load(text) !== null) return null;
  return machine.pairs().find(([key]) => !inCommunities(filter, simCommunityOfKey(key)))?.[0] ?? null;
}

export class KvStateMachine {
  appliedSeq = 0;
  /**
   * opaqueCommands: a kind-1 entry that is not a put or cas command is kept as its text under its text
   * (scripts and scenarios write free words such as `a` or `w39`); off, such an entry is an error.
   */
  constructor(private readonly opaqueCommands = false) {}

  private kv = new Map<string, string>();
  /** casOutcomes: whether the cas applied at a seq swapped (the newest few; not part of the state). */
  private casOutcomes = new Map<number, boolean>();

  get size(): number {
    return this.kv.size;
  }

  get(key: string): string | undefined {
    return this.kv.get(key);
  }

  /** values lists the values the state holds, in key order. */
  values(): string[] {
    return [...this.kv.keys()].sort().map((k) => this.kv.get(k)!);
  }

  /** pairs: the state's key-value pairs, in key order (the overlay checker restricts them). */
  pairs(): [string, string][] {
    return [...this.kv.keys()].sort().map((k) => [k, this.kv.get(k)!]);
  }

  /** casOutcome: whether the cas this machine applied at `seq` swapped; undefined when unknown. */
  casOutcome(seq: number): boolean | undefined {
    return this.casOutcomes.get(seq);
  }

  /** apply returns an error text when the entry does not follow appliedSeq or cannot be read. */
  apply(entry: Entry): string | null {
    if (entry.seq !== this.appliedSeq + 1)
      return `apply of seq ${entry.seq} does not follow appliedSeq ${this.appliedSeq}`;
    if (entry.kind === EntryKind.EventBatch) {
      const command = decodeCommand(entry.data) ?? (this.opaqueCommands ? opaqueCommand(entry.data) : null);
      if (!command) return `entry ${entry.seq} (kind 1) is not a put or cas command`;
      const takes = commandTakesEffect(command, this.kv.get(command.key));
      if (takes) this.kv.set(command.key, command.value);
      if (command.op === 'cas') {
        this.casOutcomes.set(entry.seq, takes);
        if (this.casOutcomes.size > CAS_OUTCOME_RETAIN_COUNT)
          this.casOutcomes.delete(this.casOutcomes.keys().next().value!);
      }
    }
    this.appliedSeq = entry.seq;
    return null;
  }

  reset(): void {
    this.kv = new Map();
    this.casOutcomes = new Map();
    this.appliedSeq = 0;
  }

  /** stateJson is canonical (keys sorted), so equal states give equal bytes and hashes. */
  stateJson(): string {
    const keys = [...this.kv.keys()].sort();
    return JSON.stringify({ appliedSeq: this.appliedSeq, kv: keys.map((k) => [k, this.kv.get(k)!]) });
  }

  /** load replaces the state with a stateJson text; it returns an error text for a bad file. */
  load(text: string): string | null {
    try {
      const raw = JSON.parse(text) as { appliedSeq: unknown; kv: unknown };
      if (typeof raw.appliedSeq !== 'number' || !Array.isArray(raw.kv)) return 'state.json lacks appliedSeq or kv';
      const kv = new Map<string, string>();
      for (const pair of raw.kv as unknown[]) {
        if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'string')
          return 'state.json has a bad kv pair';
        kv.set(pair[0], pair[1]);
      }
      this.kv = kv;
      this.casOutcomes = new Map();
      this.appliedSeq = raw.appliedSeq;
      return null;
    } catch (error) {
      return `state.json is not JSON: ${(error as Error).message}`;
    }
  }
}
