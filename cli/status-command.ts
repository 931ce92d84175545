// `svc status`: a running node's status and, unless --only, every member's (each asked directly,
// each bounded): role, term, leader, seqnos, readiness, versions and every heartbeat field.
import { AdminCallError } from '../transports/admin/admin-client.js';
import type { StatusResponse } from '../proto/gen/svc/admin/v1/admin.js';
import { adminPool, callAnyMember } from './admin-calls.js';
import { ADMIN_TARGET_FLAGS, adminTarget } from './admin-target.js';
import { parseFlags } from './flags.js';
import type { Io } from './io.js';
import { EXIT_FAILED, EXIT_OK, STATUS_MEMBER_DEADLINE_MS } from './limits.js';
import { formatClusterStatus, type MemberStatus } from './status-format.js';
import { STATUS_USAGE } from './usage.js';

export async function runStatusCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, { ...ADMIN_TARGET_FLAGS, only: { type: 'boolean' } });
  if (values.help === true) {
    io.out.write(`${STATUS_USAGE}\n`);
    return EXIT_OK;
  }
  const target = await adminTarget(values);
  const pool = adminPool(target);
  try {
    let first: StatusResponse;
    try {
      ({ value: first } = await callAnyMember(target, STATUS_MEMBER_DEADLINE_MS, (address, deadlineAt) =>
        pool.status(address, deadlineAt),
      ));
    } catch (err) {
      if (!(err instanceof AdminCallError)) throw err;
      io.err.write(`svc status: ${err.message}\n`);
      return EXIT_FAILED;
    }
    const nodes: MemberStatus[] = [{ name: first.name, status: first, error: '' }];
    if (values.only !== true) {
      const others = first.members.filter((m) => m.id !== first.id && m.role !== 'removed');
      const answers = await Promise.all(
        others.map(async (m): Promise<MemberStatus> => {
          try {
            return {
              name: m.name,
              status: await pool.status(
                m.grpcAddr,
                Math.min(target.deadlineAt, Date.now() + STATUS_MEMBER_DEADLINE_MS),
              ),
              error: '',
            };
          } catch (err) {
            return { name: m.name, status: null, error: err instanceof Error ? err.message : String(err) };
          }
        }),
      );
      nodes.push(...answers);
      nodes.sort((a, b) => (a.status?.id ?? idOf(first, a.name)) - (b.status?.id ?? idOf(first, b.name)));
    }
    if (target.json) io.out.write(`${JSON.stringify({ answeredBy: first.name, nodes }, null, 2)}\n`);
    else io.out.write(formatClusterStatus(first, nodes, Date.now()));
    return nodes.every((n) => n.status !== null) ? EXIT_OK : EXIT_FAILED;
  } finally {
    pool.close();
  }
}

function idOf(status: StatusResponse, name: string): number {
  return status.members.find((m) => m.name === name)?.id ?? Number.MAX_SAFE_INTEGER;
}
