// Store commands travel in kind-1 log entries as versioned JSON:
//
//   {"v":1,"op":"put","key":"users/u1","value":{...},"expectedVersion":7,"requestId":"n2-5f0c…"}
//   {"v":1,"op":"delete","key":"users/u1","requestId":"…"}
//
// `expectedVersion` is optional (0 = the key must not exist). `requestId` names the write, so a
// command retried after a leader change applies once (state-machine.ts keeps the recent ids).
// decodeCommand is also the apply-time check, so it depends on nothing configurable.
import type { JsonObject } from './document-store.js';
import { Outcome, type CommandResult as CommandResultMessage } from '../proto/gen/svc/store/v1/store.js';

export const COMMAND_VERSION = 1;
/** REQUEST_ID_BYTES_MAX bounds a request id; fixed, since decodeCommand runs at apply time. */
export const REQUEST_ID_BYTES_MAX = 128;

export type StoreCommand =
  | { op: 'put'; key: string; value: JsonObject; expectedVersion?: number; requestId: string }
  | { op: 'delete'; key: string; expectedVersion?: number; requestId: string };

/** CommandResult is a committed command's outcome; every node computes the same one at apply. */
export type CommandResult =
  | { outcome: 'applied'; version: number; existed: boolean }
  | { outcome: 'conflict'; actualVersion: number }
  | { outcome: 'rejected'; reason: string };

/**
 * EncodedCommand is a command as it travels: encoded once, where it is written (ReplicatedStore), and moved
 * as these bytes to the leader and into the log; requestId is kept beside them, and a forwarded command
 * carries it in its own field (svc.store.v1 ProposeRequest.request_id), so the leader finds it without
 * decoding the command (commandNamesRequestId checks the two agree). The command is decoded once, at apply.
 */
export interface EncodedCommand {
  requestId: string;
  bytes: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeCommand(command: StoreCommand): Uint8Array {
  const body: Record<string, unknown> = { v: COMMAND_VERSION, op: command.op, key: command.key };
  if (command.op === 'put') body.value = command.value;
  if (command.expectedVersion !== undefined) body.expectedVersion = command.expectedVersion;
  body.requestId = command.requestId;
  return encoder.encode(JSON.stringify(body));
}

/**
 * commandNamesRequestId says whether `bytes` end the way encodeCommand ends a command of this request id
 * (`,"requestId":"…"}`: encodeCommand writes it last), so a request id sent beside a command is known to be
 * the command's own without decoding it. False for anything else (another encoder's key order, a mismatch):
 * the caller then decodes the command.
 */
export function commandNamesRequestId(bytes: Uint8Array, requestId: string): boolean {
  if (requestId.length === 0 || Buffer.byteLength(requestId) > REQUEST_ID_BYTES_MAX) return false;
  if (isPlainAscii(requestId)) return endsWithPlainRequestId(bytes, requestId);
  const tail = encoder.encode(`,"requestId":${JSON.stringify(requestId)}}`);
  if (bytes.length <= tail.length) return false;
  const offset = bytes.length - tail.length;
  for (let i = 0; i < tail.length; i++) if (bytes[offset + i] !== tail[i]) return false;
  return true;
}

/** REQUEST_ID_TAIL_HEAD: how encodeCommand's last field begins, up to the id's first character. */
const REQUEST_ID_TAIL_HEAD = Buffer.from(',"requestId":"');

/** isPlainAscii: printable ASCII without a quote or a backslash, which JSON.stringify and UTF-8 leave as they are. */
function isPlainAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false;
  }
  return true;
}

/**
 * endsWithPlainRequestId: commandNamesRequestId for an id isPlainAscii, read in place (encoding the tail per
 * write was a string and a Uint8Array on the leader's path of every forwarded write).
 */
function endsWithPlainRequestId(bytes: Uint8Array, requestId: string): boolean {
  const tailBytes = REQUEST_ID_TAIL_HEAD.length + requestId.length + 2;
  if (bytes.length <= tailBytes) return false;
  let at = bytes.length - tailBytes;
  for (let i = 0; i < REQUEST_ID_TAIL_HEAD.length; i++) if (bytes[at++] !== REQUEST_ID_TAIL_HEAD[i]) return false;
  for (let i = 0; i < requestId.length; i++) if (bytes[at++] !== requestId.charCodeAt(i)) return false;
  return bytes[at] === 0x22 && bytes[at + 1] === 0x7d;
}

/**
 * storeCommunityOf: a command's community for the overlay filter (engine/communities.ts): its key, and the
 * tenant of the record a put writes (the value's `tenant` field, '' when it has none). A delete names no
 * record, so its tenant is unknown (null); a command that does not decode belongs to no community.
 */
export function storeCommunityOf(bytes: Uint8Array): { key: string; tenant: string | null } | null {
  const decoded = decodeCommand(bytes);
  if (!decoded.ok) return null;
  const { command } = decoded;
  if (command.op === 'delete') return { key: command.key, tenant: null };
  return { key: command.key, tenant: typeof command.value.tenant === 'string' ? command.value.tenant : '' };
}

export type DecodedCommand = { ok: true; command: StoreCommand } | { ok: false; reason: string };

/** decodeCommand reads an entry's bytes; anything that is not a well-formed command is refused with a reason. */
export function decodeCommand(bytes: Uint8Array): DecodedCommand {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (err) {
    return { ok: false, reason: `command is not UTF-8 JSON: ${(err as Error).message}` };
  }
  if (!isObject(raw)) return { ok: false, reason: 'command is not a JSON object' };
  if (raw.v !== COMMAND_VERSION)
    return { ok: false, reason: `command version ${JSON.stringify(raw.v)} is not ${COMMAND_VERSION}` };
  if (typeof raw.key !== 'string' || raw.key.length === 0)
    return { ok: false, reason: 'command key must be a non-empty string' };
  if (
    typeof raw.requestId !== 'string' ||
    raw.requestId.length === 0 ||
    Buffer.byteLength(raw.requestId) > REQUEST_ID_BYTES_MAX
  ) {
    return { ok: false, reason: `command requestId must be 1..${REQUEST_ID_BYTES_MAX} bytes` };
  }
  const expected = raw.expectedVersion;
  if (expected !== undefined && !(Number.isSafeInteger(expected) && (expected as number) >= 0)) {
    return { ok: false, reason: 'command expectedVersion must be a non-negative integer' };
  }
  // Each command built in one literal (keys in the order a spread of {key, requestId, expectedVersion?} gave):
  // apply decodes every entry on every member, and the spread's intermediate objects were garbage per write.
  const { key, requestId } = raw;
  if (raw.op === 'put') {
    if (!isObject(raw.value)) return { ok: false, reason: 'put value must be a JSON object' };
    const value = raw.value as JsonObject;
    return {
      ok: true,
      command:
        expected === undefined
          ? { op: 'put', value, key, requestId }
          : { op: 'put', value, key, requestId, expectedVersion: expected as number },
    };
  }
  if (raw.op === 'delete')
    return {
      ok: true,
      command:
        expected === undefined
          ? { op: 'delete', key, requestId }
          : { op: 'delete', key, requestId, expectedVersion: expected as number },
    };
  return { ok: false, reason: `unknown command op ${JSON.stringify(raw.op)}` };
}

export function resultToMessage(result: CommandResult): CommandResultMessage {
  switch (result.outcome) {
    case 'applied':
      return {
        outcome: Outcome.OUTCOME_APPLIED,
        version: result.version,
        existed: result.existed,
        actualVersion: 0,
        reason: '',
      };
    case 'conflict':
      return {
        outcome: Outcome.OUTCOME_VERSION_CONFLICT,
        version: 0,
        existed: false,
        actualVersion: result.actualVersion,
        reason: '',
      };
    case 'rejected':
      return { outcome: Outcome.OUTCOME_REJECTED, version: 0, existed: false, actualVersion: 0, reason: result.reason };
    default:
      return unreachable(result);
  }
}

/** resultFromMessage reads a leader's answer; an outcome it does not know is an error, not a guess. */
export function resultFromMessage(message: CommandResultMessage | undefined): CommandResult {
  switch (message?.outcome) {
    case Outcome.OUTCOME_APPLIED:
      return { outcome: 'applied', version: message.version, existed: message.existed };
    case Outcome.OUTCOME_VERSION_CONFLICT:
      return { outcome: 'conflict', actualVersion: message.actualVersion };
    case Outcome.OUTCOME_REJECTED:
      return { outcome: 'rejected', reason: message.reason };
    default:
      throw new Error(`leader answered an unknown command outcome ${String(message?.outcome)}`);
  }
}

/** isCommandResult checks a result read back from a snapshot file. */
export function isCommandResult(value: unknown): value is CommandResult {
  if (!isObject(value)) return false;
  switch (value.outcome) {
    case 'applied':
      return Number.isSafeInteger(value.version) && typeof value.existed === 'boolean';
    case 'conflict':
      return Number.isSafeInteger(value.actualVersion);
    case 'rejected':
      return typeof value.reason === 'string';
    default:
      return false;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unreachable(value: never): never {
  throw new Error(`unhandled command result ${JSON.stringify(value)}`);
}
