// `svc members list|promote NAME|remove NAME|transfer NAME|leave NAME|filter NAME PREFIX…|--clear`: membership through a running node's
// Admin service. Any member will do: a follower names the leader and the command retries there. `leave` is a
// remove for a member going away for good (a pod scaled down): the leader refuses it when the voters left
// would tolerate fewer failures than autopilotFailureTolerance, and a leader asked to leave hands over first.
import { status as grpcStatus } from '@grpc/grpc-js';
import { AdminCallError } from '../transports/admin/admin-client.js';
import { FILTER_PREFIX_COUNT_MAX, FILTER_TENANT_COUNT_MAX } from '../engine/communities.js';
import { MemberChange, type StatusResponse } from '../proto/gen/svc/admin/v1/admin.js';
import { adminPool, callAnyMember } from './admin-calls.js';
import { ADMIN_TARGET_FLAGS, adminTarget } from './admin-target.js';
import { parseFlags } from './flags.js';
import type { Io } from './io.js';
import { EXIT_FAILED, EXIT_OK, STATUS_MEMBER_DEADLINE_MS } from './limits.js';
import { table } from './table.js';
import { MEMBERS_USAGE, UsageError } from './usage.js';

const CHANGES: Record<string, MemberChange> = {
  promote: MemberChange.MEMBER_CHANGE_PROMOTE,
  remove: MemberChange.MEMBER_CHANGE_REMOVE,
  transfer: MemberChange.MEMBER_CHANGE_TRANSFER,
  leave: MemberChange.MEMBER_CHANGE_LEAVE,
  filter: MemberChange.MEMBER_CHANGE_FILTER,
};

const NO_FILTER = { prefixes: [] as string[], tenants: [] as string[], clear: false };

/**
 * filterOfArgs reads `svc members filter NAME PREFIX… [--tenant T …]` or `… --clear`: key prefixes are the
 * words after the name; `tenant:T` words name tenants (records whose `tenant` field is T).
 */
function filterOfArgs(words: string[], clear: boolean): typeof NO_FILTER {
  if (clear) {
    if (words.length > 0) throw new UsageError('members filter NAME --clear takes no prefixes');
    return { ...NO_FILTER, clear: true };
  }
  const tenants = words.filter((w) => w.startsWith('tenant:')).map((w) => w.slice('tenant:'.length));
  const prefixes = words.filter((w) => !w.startsWith('tenant:'));
  if (prefixes.length + tenants.length === 0)
    throw new UsageError('members filter NAME needs key PREFIXes (or tenant:T), or --clear');
  return { prefixes, tenants, clear: false };
}

export async function runMembersCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    { ...ADMIN_TARGET_FLAGS, clear: { type: 'boolean' } },
    2 + FILTER_PREFIX_COUNT_MAX + FILTER_TENANT_COUNT_MAX,
  );
  if (values.help === true) {
    io.out.write(`${MEMBERS_USAGE}\n`);
    return EXIT_OK;
  }
  const [action, name, ...rest] = positionals;
  if (action === undefined)
    throw new UsageError(
      'members needs an action: list, promote NAME, remove NAME, transfer NAME, leave NAME or filter NAME PREFIX…|--clear',
    );
  if (action === 'list') {
    if (name !== undefined) throw new UsageError('members list takes no name');
  } else if (!(action in CHANGES)) {
    throw new UsageError(
      `unknown members action ${JSON.stringify(action)} (list, promote, remove, transfer, leave, filter)`,
    );
  } else if (name === undefined) {
    throw new UsageError(`members ${action} needs a member NAME`);
  }
  const filter = action === 'filter' ? filterOfArgs(rest, values.clear === true) : NO_FILTER;
  if (action !== 'filter' && (rest.length > 0 || values.clear === true))
    throw new UsageError(`members ${action} takes one NAME`);
  const target = await adminTarget(values);
  const pool = adminPool(target);
  try {
    if (action === 'list') {
      const { value: status } = await callAnyMember(target, STATUS_MEMBER_DEADLINE_MS, (address, deadlineAt) =>
        pool.status(address, deadlineAt),
      );
      printMembers(status, io, target.json);
      return EXIT_OK;
    }
    const change = CHANGES[action]!;
    const { value } = await callAnyMember(target, Number.MAX_SAFE_INTEGER, (address, deadlineAt) =>
      pool.changeMember(address, { change, name: name!, hops: 0, ...filter }, deadlineAt),
    );
    if (target.json)
      io.out.write(
        `${JSON.stringify({ action, name, memberId: value.memberId, leader: value.leaderName, detail: value.detail })}\n`,
      );
    else
      io.out.write(
        `${action} ${name} (id ${value.memberId}): done by leader ${value.leaderName}${value.detail === '' ? '' : ` (${value.detail})`}\n`,
      );
    return EXIT_OK;
  } catch (err) {
    if (!(err instanceof AdminCallError)) throw err;
    const unknown =
      err.code === grpcStatus.DEADLINE_EXCEEDED && action !== 'list'
        ? ' (the outcome is unknown: check `svc members list`)'
        : '';
    io.err.write(`svc members ${action}: ${err.message}${unknown}\n`);
    return EXIT_FAILED;
  } finally {
    pool.close();
  }
}

function printMembers(status: StatusResponse, io: Io, json: boolean): void {
  if (json) {
    io.out.write(
      `${JSON.stringify({ leaderId: status.leaderId, term: status.term, membershipVersion: status.membershipVersion, answeredBy: status.name, members: status.members })}\n`,
    );
    return;
  }
  const rows = status.members.map((m) => [
    String(m.id),
    m.name,
    m.role,
    m.id === status.leaderId ? 'leader' : '',
    m.grpcAddr,
    m.httpAddr,
  ]);
  io.out.write(table(['ID', 'NAME', 'ROLE', '', 'GRPC', 'HTTP'], rows));
  io.out.write(
    `membership version ${status.membershipVersion}, term ${status.term}, as ${status.name} (id ${status.id}) sees it\n`,
  );
}
