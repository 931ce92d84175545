// What a node answers Admin.Backup with (transports/admin/backup-service.ts streams it): a read index
// taken after the call began (the leader's commit seqno, confirmed by a heartbeat round of a majority;
// the store router reaches the leader wherever it is), a wait until this node has applied that far, and
// the state machine captured right then. Everything up to the captured seqno is committed, so the copy
// holds every write acknowledged before the backup began, and no write that was not committed.
import { status as grpcStatus } from '@grpc/grpc-js';
import { AdminCallError, type BackupCapture } from '../../transports/admin/index.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { StoreRefusal, StoreUnavailableError } from '../../store/errors.js';
import { ENCODE_CHUNK_ENTRY_COUNT } from '../../store/snapshot-files.js';
import { encodeCapture, STORE_SNAPSHOT_FILE, type StoreStateMachine } from '../../store/state-machine.js';
import type { StoreRouter } from '../../store/store-router.js';

export interface BackupSources {
  /** router is the running node's store router (it throws StoreUnavailableError when the node is not running). */
  router(): StoreRouter;
  stateMachine: StoreStateMachine;
  status(): NodeStatusDocument;
  clusterId: string;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export async function captureForBackup(sources: BackupSources, deadlineAt: number): Promise<BackupCapture> {
  // A filtered member holds some communities only (docs/protocol.md, "Filtered members"): its state is no backup.
  const overlay = sources.router().overlay?.() ?? null;
  if (overlay !== null)
    throw new AdminCallError(
      grpcStatus.FAILED_PRECONDITION,
      'this member is filtered (it holds some communities only): back up at an unfiltered member',
      '',
      'member-filtered',
    );
  let readIndex: number;
  try {
    const router = sources.router();
    readIndex = await router.readIndex(deadlineAt);
    await router.waitApplied(readIndex, deadlineAt);
  } catch (err) {
    // No leader yet, a leader change, this node stopping or lagging: asking again (perhaps elsewhere) can cure each.
    if (err instanceof StoreUnavailableError || err instanceof StoreRefusal)
      throw new AdminCallError(
        grpcStatus.UNAVAILABLE,
        `backup barrier failed: ${err.message}`,
        err instanceof StoreRefusal ? err.leaderHint : '',
      );
    throw err;
  }
  // The status and the capture are read in one synchronous run: no apply falls between them.
  const status = sources.status();
  const capture = sources.stateMachine.captureSnapshot();
  if (capture.appliedSeq < readIndex) {
    capture.release?.(); // encodeCapture would have: a capture left live keeps pre-images for good
    throw new Error(`captured at seq ${capture.appliedSeq}, below the read index ${readIndex} it waited for`);
  }
  const createdAtUnixMs = Date.now();
  const bytes = await encodeCapture(capture, ENCODE_CHUNK_ENTRY_COUNT, nextTurn);
  return {
    index: capture.appliedSeq,
    term: status.term,
    clusterId: sources.clusterId,
    membershipVersion: status.membershipVersion,
    roster: status.members.map((m) => ({ ...m })),
    createdAtUnixMs,
    buildVersion: status.buildVersion,
    servedBy: status.name,
    files: [{ path: STORE_SNAPSHOT_FILE, bytes }],
  };
}
