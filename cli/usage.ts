// The `svc` command's help text and its usage error (exit code 2).

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const TOP_USAGE = `usage: svc <command> [flags]

commands:
  node                       run one node in the foreground (stops cleanly on SIGINT/SIGTERM)
  cluster                    run a local three-node cluster under .cluster/ in the foreground
  status                     show a running node's and every member's status
  members list               list the members a running node knows
  members promote NAME       turn a caught-up learner into a voter
  members remove NAME        decommission a member
  members transfer NAME      hand leadership to a voter
  members leave NAME         remove a member going away for good (refused below the fault tolerance)
  keys create                create an admin API key in a running cluster's store (printed once)
  certs ca|node|admin|api    make a cluster CA, a node (peer), an admin or the HTTP API's certificate
  manifests render|secrets   Kubernetes objects of a deployment (YAML); secrets from a certs directory
  backup --out FILE          a consistent copy of a running cluster's store, in one file with its BLAKE3 manifest
  backup verify FILE         check every digest and the structure of a backup file
  restore FILE --data-dir D  found a NEW cluster's member from a backup (run once per founder)
  openapi                    print the developer API's OpenAPI document (no server, no port)
  version, --version         print svc's version (the nodes' build_version)
  debug bundle --out DIR     gather every member's flight recording, status and metrics (admin certificate)

svc <command> --help (and svc <command> <action> --help) shows a command's flags.`;

export const VERSION_USAGE = `usage: svc version (or svc --version)

Prints svc's version: package.json's, which the nodes report as build_version.`;

// `svc node --help` is made from the node's config schema: nodeUsage in node/config-schema.ts.

export const ADMIN_TARGET_USAGE = `target (any member; a follower passes changes on to the leader):
  --node HOST:PORT             a member's gRPC address (repeat to try several)
  --cluster-file FILE          read addresses and TLS files from a cluster.json
                               (default: .cluster/cluster.json when it exists)
  --tls-ca FILE --tls-cert FILE --tls-key FILE   a client certificate from the cluster CA
  --tls-server-name NAME       check the node's certificate against NAME
  --insecure                   plaintext (a cluster started with --insecure)
  --timeout-ms N               bound on the whole command, retries included (default 15000)
  --json                       machine-readable output`;

export const STATUS_USAGE = `usage: svc status [target flags] [--only]

Shows, for the target and every member in its roster: role, term, leader, commit/applied seqnos,
readiness, build version and version spread, and every heartbeat field (entity_count,
signal_throughput_eps, disk_bytes, replication_lag, last_heartbeat_ns, build_version).
  --only                       the target node alone

${ADMIN_TARGET_USAGE}`;

export const DEBUG_USAGE = `usage: svc debug bundle --out FILE.tar.gz|DIR [--since TIME] [--until TIME] [--window 10m] [target flags]

Gathers every member's flight recording (<data-dir>/recording/), status, /metrics (from the metrics
listener its status names) and recent log lines (the node's in-memory ring, logRingBytesMax) through the
admin API into one gzipped tar (or, for a --out that is not *.tar.gz or *.tgz, the folder DIR/<member>/).
A window (--since and --until as times such as 2026-11-27T10:00:00Z, or --window 10m: the last ten minutes,
or the ten before --until) keeps the recording segments written during it, the earlier segments of their
runs (a run replays from its start), and the log lines of the window.
Replay it with: npm run sim -- --replay FILE.tar.gz (or DIR/*/recording)

${ADMIN_TARGET_USAGE}`;

export const MEMBERS_USAGE = `usage: svc members list|promote NAME|remove NAME|transfer NAME|leave NAME [target flags]
       svc members filter NAME PREFIX… [tenant:T …] | --clear [target flags]

filter makes learner NAME a filtered member (a read replica of some communities): it holds, and serves
reads of, keys under the PREFIXes and records whose "tenant" field is T, nothing else; it never votes.
--clear removes the filter: the member takes the full log again and may then be promoted.

${ADMIN_TARGET_USAGE}`;

export const KEYS_USAGE = `usage: svc keys create [--name NAME] [target flags]

Creates an admin user and an admin API key in the cluster's replicated store and prints the key once.

${ADMIN_TARGET_USAGE}`;

export const CLUSTER_USAGE = `usage: svc cluster [--dir DIR] [--nodes N] [--tick-ms N] [--base-port PORT] [--no-api] [--insecure] [--node-option FLAG]...

Runs N nodes (default 3) on 127.0.0.1 in the foreground with data directories, certificates (made on
the first run), logs and cluster.json under DIR (default .cluster). Ctrl-C stops them all (SIGTERM,
then SIGKILL after a bound). Ports are picked on the first run and kept in DIR/cluster.json.
  --base-port PORT             use PORT, PORT+1, ... instead of free ports picked by the kernel
  --no-api                     do not serve the developer API (by default every node serves it, the nodes
                               share one Redis, and an admin key is created once and kept in cluster.json)
  --log-level LEVEL            the nodes' log level (logs go to DIR/NAME/node.log)
  --node-option FLAG           a flag for each node's node process, e.g. --node-option=--cpu-prof (repeatable)
  --engine-limit NAME=N        an engine limit for every node (repeatable), e.g. inflightSegmentCountMax=32
  --no-recording               the nodes keep no flight recording (docs/operations.md, "Flight recorder")
  --no-recording-effect-texts  the nodes record effect digests only, no effect texts (recording.effectTexts)`;

export const OPENAPI_USAGE = `usage: svc openapi

Prints the developer API's OpenAPI document (JSON) to stdout. No server starts and no port opens.`;

export const BACKUP_USAGE = `usage: svc backup --out FILE | --out-dir DIR [--keep N] [target flags]
       svc backup verify FILE [--json]

backup asks any member for a copy of the store at a committed index (a read index from the leader, then the
state once that member has applied it) over the Admin service, with the admin certificate, and writes one file:
the snapshot's files and a manifest (index, term, cluster id, roster, created-at, build version, each file's
BLAKE3) ending in a BLAKE3 digest of the whole. It is written to a temp file, fsynced, then renamed.
  --out FILE                   write the backup here (an existing file is replaced, atomically)
  --out-dir DIR                write it into DIR as svc-backup-<UTC time>-<index>.svcbak
  --keep N                     with --out-dir: then delete all but the newest N such files in DIR
  (--timeout-ms defaults to 300000 here)
verify reads FILE end to end: magic, manifest, length, every file's digest and the whole file's. Exit 0 with a
summary, or 1 naming what is wrong.

${ADMIN_TARGET_USAGE}`;

export const RESTORE_USAGE = `usage: svc restore FILE --data-dir DIR --founder NAME,GRPC,HTTP [--founder …] [--name NAME] [--cluster-id ID] [--json]

Founds a NEW cluster from a backup: writes DIR (missing, or empty but for lost+found) as the data directory of
founder NAME, holding the backup's state at its index. Run it once per founder, each into its own directory,
with the same --founder list and --cluster-id, then start each with \`svc node\` and that same --founder list
(nodes joining later through --seed install the data from the leader). A corrupted, truncated or foreign file
is refused before anything is written.
  --founder NAME,GRPC,HTTP     a founding member of the new cluster (repeat for each; the list svc node gets)
  --name NAME                  which founder DIR is for (default: the only founder)
  --cluster-id ID              the new cluster's id (default: a new one, printed); never the backed-up cluster's:
                               the new cluster's certificates carry it (svc certs node --cluster-id ID)`;
