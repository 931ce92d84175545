// `svc restore FILE --data-dir DIR --founder NAME,GRPC,HTTP… [--name NAME] [--cluster-id ID]`: founds a
// NEW cluster from a backup, etcdutl-snapshot-restore style. Run it once per founder (each into its own
// empty data directory, with the same founders and cluster id); `svc node` started there with the same
// --founder list serves the backup's data at its index, and nodes joining later install it from the leader.
//
// The data directory it writes is the one a node that installed a snapshot would have: a snapshot
// artifact at the backup's index (its roster the new founders, all voters), hard-state.json (the term,
// this member's id, the index as committed), cluster-id (the NEW cluster's), and no log.
//
// Why a new cluster id, always: the restored members carry a history that forks from the source cluster at
// the backup's index. Were they to keep its cluster id, their certificates would let them talk to the old
// members, and a restored leader could ship its log over entries the old cluster committed since (or the
// old one over the restored), silently losing writes on one side. Under a new id the peer gate refuses
// every call between the two (docs/protocol.md, "Identity and trust").
//
// Nothing is written until the whole backup has been verified (every digest, the structure, store.json
// decoding to the state at the index); then everything is written into a staging directory inside DIR and
// renamed into place, hard-state.json last; on any failure what was written is removed.
import { mkdir, readdir, rename, rmdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bootstrapRoster, memberByName } from '../../engine/roster.js';
import type { HardState } from '../../engine/types.js';
import { decodeStoreSnapshot, STORE_SNAPSHOT_FILE } from '../../store/state-machine.js';
import { fsyncDir, isNotFound, removeTree, writeFileAtomic } from '../../transports/storage/durable-fs.js';
import { HARD_STATE_FILE, HardStateStore } from '../../transports/storage/hard-state.js';
import { SNAPSHOTS_DIR, SnapshotStore } from '../../transports/storage/snapshots.js';
import { CLUSTER_ID } from '../../transports/grpc/peer-identity.js';
import { newClusterId } from '../certs/certs.js';
import { CLUSTER_ID_FILE } from '../node/cluster-id.js';
import { ConfigError, resolveNodeConfig, type BootstrapMember } from '../node/config.js';
import { parseFounder } from '../founder.js';
import { listFlag, parseFlags, stringFlag } from '../flags.js';
import type { Io } from '../io.js';
import { EXIT_FAILED, EXIT_OK } from '../limits.js';
import { RESTORE_USAGE, UsageError } from '../usage.js';
import { BackupError, readBackupFile, verifyBackup, type VerifiedBackup } from './backup-file.js';
import { RESTORE_IGNORED_ENTRIES } from './limits.js';

/** RestoreError is a restore refused or failed; nothing of it is left in the data directory. */
export class RestoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RestoreError';
  }
}

export interface RestorePlan {
  file: string;
  dataDir: string;
  name: string;
  founders: BootstrapMember[];
  /** clusterId is the new cluster's id; undefined makes one. */
  clusterId?: string;
}

export interface RestoreOutcome {
  backup: VerifiedBackup;
  dataDir: string;
  clusterId: string;
  memberId: number;
}

export async function runRestoreCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      'data-dir': { type: 'string' },
      name: { type: 'string' },
      founder: { type: 'string', multiple: true },
      'cluster-id': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    1,
  );
  if (values.help === true) {
    io.out.write(`${RESTORE_USAGE}\n`);
    return EXIT_OK;
  }
  const [file] = positionals;
  if (file === undefined) throw new UsageError('restore needs the backup FILE');
  const dataDir = stringFlag(values, 'data-dir');
  if (dataDir === undefined) throw new UsageError('restore needs --data-dir DIR (an empty or missing directory)');
  const founders = listFlag(values, 'founder').map(parseFounder);
  if (founders.length === 0)
    throw new UsageError(
      "restore needs the new cluster's founders: --founder NAME,GRPC,HTTP for each (the list `svc node` gets)",
    );
  const name = stringFlag(values, 'name') ?? (founders.length === 1 ? founders[0]!.name : undefined);
  if (name === undefined) throw new UsageError('restore needs --name: which founder this data directory is for');
  const plan: RestorePlan = {
    file: resolve(file),
    dataDir: resolve(dataDir),
    name,
    founders,
    clusterId: stringFlag(values, 'cluster-id'),
  };
  checkPlan(plan);
  let outcome: RestoreOutcome;
  try {
    outcome = await restoreBackup(plan);
  } catch (err) {
    if (!(err instanceof BackupError) && !(err instanceof RestoreError)) throw err;
    io.err.write(`svc restore: ${err.message}; nothing was written to ${plan.dataDir}\n`);
    return EXIT_FAILED;
  }
  const m = outcome.backup.manifest;
  if (values.json === true) {
    io.out.write(
      `${JSON.stringify({ dataDir: outcome.dataDir, name, memberId: outcome.memberId, clusterId: outcome.clusterId, sourceClusterId: m.clusterId, index: m.index, term: m.term, founders })}\n`,
    );
    return EXIT_OK;
  }
  io.out.write(
    [
      `restored ${outcome.backup.path} (cluster ${m.clusterId || '(none)'}, index ${m.index}) into ${outcome.dataDir}`,
      `  as ${name} (member id ${outcome.memberId}) of the NEW cluster ${outcome.clusterId}, founders ${founders.map((f) => f.name).join(', ')}`,
      `  its certificates must be of cluster ${outcome.clusterId}: svc certs node --cluster-id ${outcome.clusterId} --name ${name} …`,
      `  start it with the same founders: svc node --name ${name} --data-dir ${outcome.dataDir} --cluster-id ${outcome.clusterId} ${founders.map((f) => `--founder ${f.name},${f.grpcAddr},${f.httpAddr}`).join(' ')} …`,
    ].join('\n') + '\n',
  );
  return EXIT_OK;
}

/** checkPlan refuses founders, names or a cluster id `svc node` would refuse, before anything is read. */
function checkPlan(plan: RestorePlan): void {
  try {
    resolveNodeConfig({
      name: plan.name,
      dataDir: plan.dataDir,
      grpcListen: '127.0.0.1:0',
      httpListen: '127.0.0.1:0',
      bootstrap: plan.founders,
      clusterId: plan.clusterId,
      tls: { mode: 'insecure' },
    });
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  if (!plan.founders.some((f) => f.name === plan.name))
    throw new UsageError(
      `--name ${plan.name} is not one of the founders (${plan.founders.map((f) => f.name).join(', ')})`,
    );
}

/** restoreBackup verifies the backup, then writes the new member's data directory; it throws BackupError or RestoreError. */
export async function restoreBackup(plan: RestorePlan): Promise<RestoreOutcome> {
  const backup = await verifyBackup(plan.file);
  const m = backup.manifest;
  const clusterId = plan.clusterId ?? newClusterId();
  if (!CLUSTER_ID.test(clusterId))
    throw new RestoreError(`--cluster-id ${JSON.stringify(clusterId)} is not a cluster id`);
  if (clusterId === m.clusterId)
    throw new RestoreError(
      `--cluster-id ${clusterId} is the backed-up cluster's own; a restore founds a new cluster under a new id, so its members can never reach the old one's`,
    );
  const storeIndex = m.files.findIndex((f) => f.path === STORE_SNAPSHOT_FILE);
  if (storeIndex === -1) throw new BackupError(`${plan.file} holds no ${STORE_SNAPSHOT_FILE}`);
  const files = await Promise.all(
    m.files.map(async (f, i) => ({ path: f.path, bytes: await readBackupFile(backup, i) })),
  );
  const decoded = decodeStoreSnapshot(files[storeIndex]!.bytes);
  if (!decoded.ok) throw new BackupError(`${plan.file}: ${STORE_SNAPSHOT_FILE} does not decode: ${decoded.reason}`);
  if (decoded.state.appliedSeq !== m.index)
    throw new BackupError(
      `${plan.file}: ${STORE_SNAPSHOT_FILE} holds the state at seq ${decoded.state.appliedSeq}, its manifest says index ${m.index}`,
    );

  const roster = bootstrapRoster(plan.founders);
  const self = memberByName(roster, plan.name)!;
  // The engine's terms only grow: the restored log's last entry (the snapshot's) is at this term, and so is the hard state.
  const term = Math.max(1, m.term);
  const hardState: HardState = {
    term,
    votedFor: 0,
    selfId: self.id,
    commitSeq: m.index,
    rosterBase: null,
    halted: '',
    reseed: false,
    removed: false,
  };

  const createdDir = await prepareEmptyDir(plan.dataDir);
  const staging = join(plan.dataDir, `.restore-${randomBytes(6).toString('hex')}`);
  const moved: string[] = [];
  try {
    await mkdir(staging);
    const snapshots = await SnapshotStore.open(staging);
    await snapshots.stage({ seq: m.index, entryTerm: term, roster }, files, { term, leaderRegion: self.id });
    await writeFileAtomic(staging, CLUSTER_ID_FILE, Buffer.from(`${clusterId}\n`));
    await new HardStateStore(staging).save(hardState);
    await fsyncDir(staging);
    // hard-state.json goes last: a directory with it is a whole restore (an interrupted one is refused by the next: not empty).
    for (const entry of [SNAPSHOTS_DIR, CLUSTER_ID_FILE, HARD_STATE_FILE]) {
      await rename(join(staging, entry), join(plan.dataDir, entry));
      moved.push(entry);
    }
    await rmdir(staging);
    await fsyncDir(plan.dataDir);
  } catch (err) {
    for (const entry of moved) await removeTree(join(plan.dataDir, entry)).catch(() => undefined);
    await removeTree(staging).catch(() => undefined);
    if (createdDir) await rmdir(plan.dataDir).catch(() => undefined);
    throw new RestoreError(`writing ${plan.dataDir} failed: ${(err as Error).message}`);
  }
  return { backup, dataDir: plan.dataDir, clusterId, memberId: self.id };
}

/** prepareEmptyDir makes dir when missing (true) or checks it holds nothing but RESTORE_IGNORED_ENTRIES (false). */
async function prepareEmptyDir(dir: string): Promise<boolean> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) throw new RestoreError(`${dir} is not a directory`);
  } catch (err) {
    if (!isNotFound(err))
      throw err instanceof RestoreError ? err : new RestoreError(`cannot read ${dir}: ${(err as Error).message}`);
    await mkdir(dir, { recursive: true });
    return true;
  }
  const entries = (await readdir(dir)).filter((entry) => !RESTORE_IGNORED_ENTRIES.has(entry));
  if (entries.length > 0)
    throw new RestoreError(
      `${dir} is not empty (${entries.slice(0, 5).join(', ')}${entries.length > 5 ? ', …' : ''}); restore only founds a member in an empty data directory`,
    );
  return false;
}
