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
  certs ca|node|admin ...    make a cluster CA, a node (peer) or an admin certificate
  manifests render|secrets   Kubernetes objects of a deployment (YAML); secrets from a certs directory
  openapi                    print the developer API's OpenAPI document (no server, no port)

svc <command> --help shows a command's flags.`;

export const NODE_USAGE = `usage: svc node [--config FILE] [flags]

The config file (JSON, or YAML when it ends in .yaml/.yml) holds NodeConfig fields
(cli/node/README.md); relative paths in it are relative to the file. Flags override it.

  --name NAME                  permanent member name
  --data-dir DIR               data directory (created when missing)
  --grpc-listen HOST:PORT      peer server bind address
  --grpc-advertise HOST:PORT   address peers dial (default: grpc-listen with the bound port)
  --http-listen HOST:PORT      /health /ready /metrics /status bind address
  --http-advertise URL         scheme://host:port peers use for /status
  --founder NAME,GRPC,HTTP     a founding member (repeat for each; the same list on every founder)
  --seed HOST:PORT             a member to join through (repeat for more)
  --cluster-id ID              the cluster this node belongs to (default: the one in its peer certificate)
  --tls-ca FILE --tls-cert FILE --tls-key FILE   mutual TLS material (cluster CA, this node's pair)
  --tls-server-name NAME       check peers' certificates against NAME instead of the dialled host
  --insecure                   plaintext peer traffic (tests and local development only; said by name)
  --tick-ms N                  engine tick (default 100)
  --election-timeout-ticks N   --heartbeat-interval-ticks N   --write-timeout-ms N   --read-timeout-ms N
  --engine-limit NAME=N        any engine limit by name (repeatable); also --grpc-limit, --storage-limit,
                               --store-limit, --node-limit
  --log-level LEVEL            fatal|error|warn|info|debug|trace|silent (default info)
  --api                        serve the developer HTTP API on the HTTP port (see api/README.md)
  --api-redis-url URL          Redis shared by every node (default REDIS_URL, else a node-local redis-server)
  --api-no-local-redis         never start a node-local redis-server
  --api-secret-key-file FILE   credential encryption key (default SVC_SECRET_KEY_FILE / SVC_SECRET_KEY)
  --api-rate-limit N           requests per second per API key
  --api-no-workers             leave agent runs and album jobs to other processes
  --print-config               print the resolved config as JSON and exit`;

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

export const MEMBERS_USAGE = `usage: svc members list|promote NAME|remove NAME|transfer NAME|leave NAME [target flags]

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
  --engine-limit NAME=N        an engine limit for every node (repeatable), e.g. inflightSegmentCountMax=32`;

export const OPENAPI_USAGE = `usage: svc openapi

Prints the developer API's OpenAPI document (JSON) to stdout. No server starts and no port opens.`;
