// Histories recorded from real clusters cross a process boundary, so their shape is checked before
// the search trusts it. A malformed history is refused with InvalidHistoryError naming the operation
// and the field, never a wrong verdict.
import type { KvOperation } from './types.js';

export class InvalidHistoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidHistoryError';
  }
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Returns why `op` is malformed, or null when it is well formed. */
function problemOf(op: KvOperation): string | null {
  if (typeof op !== 'object' || op === null) return 'is not an object';
  if (!Number.isSafeInteger(op.id)) return 'id is not a safe integer';
  if (!isString(op.clientId)) return 'clientId is not a string';
  const input = op.input as unknown as Record<string, unknown> | null;
  if (typeof input !== 'object' || input === null) return 'input is not an object';
  if (!isString(input.key)) return 'input.key is not a string';
  switch (input.kind) {
    case 'put':
      if (!isString(input.value)) return 'put input.value is not a string';
      break;
    case 'get':
      break;
    case 'cas':
      if (!isString(input.value)) return 'cas input.value is not a string';
      if (input.expected !== null && !isString(input.expected))
        return 'cas input.expected is neither a string nor null';
      break;
    default:
      return `input.kind ${JSON.stringify(input.kind)} is not put, get or cas`;
  }
  if (!isFiniteNumber(op.callTime)) return 'callTime is not a finite number';
  if (op.returnTime === null) {
    if (op.output !== null) return 'an indeterminate operation (returnTime null) has an output';
    return null;
  }
  if (!isFiniteNumber(op.returnTime)) return 'returnTime is neither null nor a finite number';
  if (op.returnTime < op.callTime) return 'returnTime is before callTime';
  const output = op.output as unknown as Record<string, unknown> | null;
  if (typeof output !== 'object' || output === null) return 'a completed operation has no output';
  if (output.kind !== input.kind) return `output.kind ${JSON.stringify(output.kind)} differs from input.kind`;
  if (output.kind === 'get' && output.value !== null && !isString(output.value))
    return 'get output.value is neither a string nor null';
  if (output.kind === 'cas' && typeof output.swapped !== 'boolean') return 'cas output.swapped is not a boolean';
  return null;
}

/** Returns why `history` is malformed (the first problem found), or null when it is well formed. */
export function validateKvHistory(history: readonly KvOperation[]): string | null {
  if (!Array.isArray(history)) return 'the history is not an array';
  const ids = new Set<number>();
  for (let i = 0; i < history.length; i++) {
    const op = history[i]!;
    const problem = problemOf(op);
    if (problem !== null)
      return `operation at index ${i}${typeof op?.id === 'number' ? ` (#${op.id})` : ''}: ${problem}`;
    if (ids.has(op.id)) return `operation at index ${i}: id #${op.id} is used twice`;
    ids.add(op.id);
  }
  return null;
}

/** Throws InvalidHistoryError when `history` is malformed. */
export function assertValidKvHistory(history: readonly KvOperation[]): void {
  const problem = validateKvHistory(history);
  if (problem !== null) throw new InvalidHistoryError(problem);
}
