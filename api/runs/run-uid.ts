// One host uid per run (when the worker is root): the sandbox's processes run as it, so they are nobody's on the
// host (not root, not the service's user), RLIMIT_NPROC counts this run's processes only, and the egress filter
// can tell the run's traffic by owner. A uid is claimed by creating a directory named for it under the claim
// directory (mkdir is atomic), so worker processes sharing a host never hand out the same one.
import { randomInt } from 'node:crypto';
import { mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { runUidClaimAttemptsMax, runUidCount, runUidFirst } from '../limits.js';

export interface RunUidRange {
  first: number;
  count: number;
  /** claimDir holds one directory per uid in use (default /run/svc-run-uids, or the temp dir's). */
  claimDir: string;
}

export const defaultRunUidRange = (): RunUidRange => ({
  first: runUidFirst,
  count: runUidCount,
  claimDir: path.join(isDirectory('/run') ? '/run' : '/tmp', 'svc-run-uids'),
});

export interface RunUid {
  uid: number;
  release(): void;
}

/** claimRunUid picks a free uid of the range at random and claims it; it throws when none was found. */
export function claimRunUid(range: RunUidRange): RunUid {
  mkdirSync(range.claimDir, { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < runUidClaimAttemptsMax; attempt++) {
    const uid = range.first + randomInt(range.count);
    const claim = path.join(range.claimDir, String(uid));
    try {
      mkdirSync(claim);
    } catch {
      continue;
    }
    if (uidHasProcesses(uid)) {
      // Processes of a run whose claim was released early (a worker killed mid-cleanup): keep the claim so
      // that nobody takes the uid, and pick another.
      continue;
    }
    return {
      uid,
      release: () => {
        try {
          rmdirSync(claim);
        } catch {
          /* already released */
        }
      },
    };
  }
  throw new Error(
    `no free run uid in ${range.first}..${range.first + range.count - 1} after ${runUidClaimAttemptsMax} attempts`,
  );
}

/** uidHasProcesses scans /proc for a process owned by uid. */
function uidHasProcesses(uid: number): boolean {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (statSync(`/proc/${entry}`).uid === uid) return true;
    } catch {
      // exited meanwhile
    }
  }
  return false;
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
