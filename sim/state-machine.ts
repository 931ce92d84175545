// KvStateMachine is what committed entries drive on every node: kind-1 entries
// carry one client command (JSON put), kind 2 and kind 4 only move appliedSeq.
import { EntryKind, type Entry } from '../engine/types.js';

export interface PutCommand {
  op: 'put';
  key: string;
  value: string;
  writeId: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeCommand(command: PutCommand): Uint8Array {
  return encoder.encode(JSON.stringify({ op: command.op, key: command.key, value: command.value, writeId: command.writeId }));
}

/** decodeCommand returns null for bytes that are not a put command. */
export function decodeCommand(bytes: Uint8Array): PutCommand | null {
  try {
    const raw = JSON.parse(decoder.decode(bytes)) as Record<string, unknown>;
    if (raw.op !== 'put' || typeof raw.key !== 'string' || typeof raw.value !== 'string' || typeof raw.writeId !== 'number') return null;
    return { op: 'put', key: raw.key, value: raw.value, writeId: raw.writeId };
  } catch {
    return null;
  }
}

export class KvStateMachine {
  appliedSeq = 0;
  private kv = new Map<string, string>();

  get size(): number {
    return this.kv.size;
  }

  get(key: string): string | undefined {
    return this.kv.get(key);
  }

  /** apply returns an error text when the entry does not follow appliedSeq or cannot be read. */
  apply(entry: Entry): string | null {
    if (entry.seq !== this.appliedSeq + 1) return `apply of seq ${entry.seq} does not follow appliedSeq ${this.appliedSeq}`;
    if (entry.kind === EntryKind.EventBatch) {
      const command = decodeCommand(entry.data);
      if (!command) return `entry ${entry.seq} (kind 1) is not a put command`;
      this.kv.set(command.key, command.value);
    }
    this.appliedSeq = entry.seq;
    return null;
  }

  reset(): void {
    this.kv = new Map();
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
        if (!Array.isArray(pair) || typeof pair[0] !== 'string' || typeof pair[1] !== 'string') return 'state.json has a bad kv pair';
        kv.set(pair[0], pair[1]);
      }
      this.kv = kv;
      this.appliedSeq = raw.appliedSeq;
      return null;
    } catch (error) {
      return `state.json is not JSON: ${(error as Error).message}`;
    }
  }
}
