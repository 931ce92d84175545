// Admin.Backup, the server half (proto/svc/admin/v1/admin.proto): the host captures the state machine
// at a committed index (AdminHost.backup: a read-index barrier, then the state once applied that far),
// this file checks it against the named limits, digests every file with BLAKE3 once, and streams the
// header and then the files' bytes, written only as fast as the caller reads them (HTTP/2 flow control).
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/admin/v1/admin.js';
import { blake3Bytes } from '../storage/blake3.js';
import { AdminCallError } from './admin-client.js';
import { BACKUP_BYTES_MAX, BACKUP_CHUNK_BYTES, BACKUP_CONCURRENT_COUNT_MAX, BACKUP_FILE_COUNT_MAX } from './limits.js';

/** BackupCapture is the state a member captured for a backup, and what the backup's header says of it. */
export interface BackupCapture {
  /** index is the state's applied seqno, at or past a read index taken after the call began. */
  index: number;
  term: number;
  clusterId: string;
  membershipVersion: number;
  roster: pb.Member[];
  createdAtUnixMs: number;
  buildVersion: string;
  servedBy: string;
  files: Array<{ path: string; bytes: Uint8Array }>;
}

/** BackupLimits are the named bounds of a served backup (limits.ts holds the defaults). */
export interface BackupLimits {
  bytesMax: number;
  chunkBytes: number;
  fileCountMax: number;
  concurrentCountMax: number;
}

export const DEFAULT_BACKUP_LIMITS: BackupLimits = {
  bytesMax: BACKUP_BYTES_MAX,
  chunkBytes: BACKUP_CHUNK_BYTES,
  fileCountMax: BACKUP_FILE_COUNT_MAX,
  concurrentCountMax: BACKUP_CONCURRENT_COUNT_MAX,
};

/** UNFLUSHED_BYTES_MAX bounds what one backup call has written that HTTP/2 has not yet sent. */
const UNFLUSHED_BYTES_MAX = 4 * BACKUP_CHUNK_BYTES;

export interface BackupServeOptions {
  capture(deadlineAt: number): Promise<BackupCapture>;
  deadlineOf(call: grpc.ServerWritableStream<Buffer, Buffer>): number;
  /** refusal turns what capture threw into the status to answer (AdminCallError as it is, else INTERNAL). */
  refusal(err: unknown): AdminCallError;
  limits?: Partial<BackupLimits>;
}

/** backupHandler serves Admin.Backup calls, at most limits.concurrentCountMax at once. */
export function backupHandler(options: BackupServeOptions): grpc.handleServerStreamingCall<Buffer, Buffer> {
  const limits = { ...DEFAULT_BACKUP_LIMITS, ...options.limits };
  let serving = 0;
  return (call) => {
    try {
      pb.BackupRequest.decode(call.request);
    } catch (err) {
      call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `malformed BackupRequest: ${String(err)}` });
      return;
    }
    if (serving >= limits.concurrentCountMax) {
      call.emit('error', {
        code: grpc.status.RESOURCE_EXHAUSTED,
        details: `this member is already serving ${serving} backups (backupConcurrentCountMax ${limits.concurrentCountMax}); retry later`,
      });
      return;
    }
    serving += 1;
    let gone = false;
    call.on('cancelled', () => {
      gone = true;
    });
    serveBackup(call, options, limits, () => gone)
      .then(
        () => call.end(),
        (err: unknown) => {
          if (gone) return;
          const refusal = options.refusal(err);
          const metadata = new grpc.Metadata();
          if (refusal.leaderHint !== '') metadata.set('x-svc-leader', refusal.leaderHint);
          call.emit('error', { code: refusal.code, details: refusal.details, metadata });
        },
      )
      .finally(() => {
        serving -= 1;
      });
  };
}

async function serveBackup(
  call: grpc.ServerWritableStream<Buffer, Buffer>,
  options: BackupServeOptions,
  limits: BackupLimits,
  gone: () => boolean,
): Promise<void> {
  const capture = await options.capture(options.deadlineOf(call));
  if (capture.files.length === 0 || capture.files.length > limits.fileCountMax)
    throw new AdminCallError(
      grpc.status.INTERNAL,
      `the captured state has ${capture.files.length} files (1..backupFileCountMax ${limits.fileCountMax})`,
    );
  const totalBytes = capture.files.reduce((sum, f) => sum + f.bytes.length, 0);
  if (totalBytes > limits.bytesMax)
    throw new AdminCallError(
      grpc.status.RESOURCE_EXHAUSTED,
      `the state is ${totalBytes} bytes, above backupBytesMax (${limits.bytesMax})`,
    );
  const files: pb.BackupFile[] = [];
  for (const file of capture.files)
    files.push({ path: file.path, size: file.bytes.length, blake3: await blake3Bytes(file.bytes) });
  const header: pb.BackupHeader = {
    index: capture.index,
    term: capture.term,
    clusterId: capture.clusterId,
    membershipVersion: capture.membershipVersion,
    roster: capture.roster,
    createdAtUnixMs: capture.createdAtUnixMs,
    buildVersion: capture.buildVersion,
    servedBy: capture.servedBy,
    files,
  };
  const writer = new FlowWriter(call, gone);
  await writer.write(Buffer.from(pb.BackupChunk.encode({ part: { $case: 'header', value: header } }).finish()));
  for (const file of capture.files) {
    // Bounded by the file: each pass sends the next chunkBytes of it (an empty file sends nothing).
    for (let offset = 0; offset < file.bytes.length; offset += limits.chunkBytes) {
      const data = file.bytes.subarray(offset, Math.min(file.bytes.length, offset + limits.chunkBytes));
      const chunk: pb.BackupChunk = { part: { $case: 'file', value: { path: file.path, offset, data } } };
      await writer.write(Buffer.from(pb.BackupChunk.encode(chunk).finish()));
    }
  }
  await writer.flushed();
}

/** FlowWriter writes a server stream's messages while at most UNFLUSHED_BYTES_MAX wait for HTTP/2 to send them. */
class FlowWriter {
  private unflushed = 0;
  private wake: (() => void) | null = null;

  constructor(
    private readonly call: grpc.ServerWritableStream<Buffer, Buffer>,
    private readonly gone: () => boolean,
  ) {
    call.on('cancelled', () => this.wake?.());
  }

  async write(bytes: Buffer): Promise<void> {
    await this.below(UNFLUSHED_BYTES_MAX);
    this.unflushed += bytes.length;
    this.call.write(bytes, () => {
      this.unflushed -= bytes.length;
      this.wake?.();
    });
  }

  flushed(): Promise<void> {
    return this.below(1);
  }

  private async below(bytes: number): Promise<void> {
    // Bounded: each pass waits for a write callback (which lowers unflushed) or the caller going away.
    while (this.unflushed >= bytes) {
      if (this.gone()) throw new AdminCallError(grpc.status.CANCELLED, 'the caller went away');
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
    if (this.gone()) throw new AdminCallError(grpc.status.CANCELLED, 'the caller went away');
  }
}
