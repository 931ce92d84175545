// Human-readable operations, one a line, for violation reports:
//   #12 c3 get(k1) -> "v7"  [1200, 1450]
//   #13 c4 cas(k1, "v7" -> "v8") -> swapped  [1300, 1500]
//   #14 c2 put(k1, "v9") -> ?  [1320, ?]  (indeterminate)
import type { KvOperation } from './types.js';

const show = (value: string | null): string => (value === null ? 'absent' : JSON.stringify(value));

/** Formats one operation (no trailing newline). */
export function formatOperation(op: KvOperation): string {
  const key = op.input.key;
  let call: string;
  switch (op.input.kind) {
    case 'put':
      call = `put(${key}, ${show(op.input.value)})`;
      break;
    case 'get':
      call = `get(${key})`;
      break;
    case 'cas':
      call = `cas(${key}, ${show(op.input.expected)} -> ${show(op.input.value)})`;
      break;
  }
  let result: string;
  const output = op.output;
  if (output === null) result = '?';
  else if (output.kind === 'put') result = 'ok';
  else if (output.kind === 'get') result = show(output.value);
  else result = output.swapped ? 'swapped' : 'not swapped';
  const returned = op.returnTime === null ? '?]  (indeterminate)' : `${op.returnTime}]`;
  return `#${op.id} ${op.clientId} ${call} -> ${result}  [${op.callTime}, ${returned}`;
}

/** Formats operations one per line, in the order given, e.g. `#12 c3 get(k1) -> "v7"  [1200, 1450]`. */
export function formatOperations(ops: readonly KvOperation[]): string {
  return ops.map(formatOperation).join('\n');
}
