// Every limit and timing of the `svc` command has a name and a default here.

/** EXIT_OK, EXIT_FAILED and EXIT_USAGE are the command's exit codes (2: bad flags, config or usage). */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** NODE_STOP_TIMEOUT_MS bounds `svc node`'s clean stop after SIGINT/SIGTERM before it exits anyway. */
export const NODE_STOP_TIMEOUT_MS = 15_000;
/** ADMIN_TIMEOUT_MS_DEFAULT bounds one `svc members`/`svc status`/`svc keys` command, retries included. */
export const ADMIN_TIMEOUT_MS_DEFAULT = 15_000;
/** ADMIN_RETRY_DELAY_MS paces retries while the leader is unknown or a change must wait. */
export const ADMIN_RETRY_DELAY_MS = 200;
/** STATUS_MEMBER_DEADLINE_MS bounds the Status call to each other member in `svc status`. */
export const STATUS_MEMBER_DEADLINE_MS = 3_000;
/** CONFIG_FILE_BYTES_MAX bounds a node config file. */
export const CONFIG_FILE_BYTES_MAX = 1024 * 1024;
/** CLUSTER_FILE_BYTES_MAX bounds .cluster/cluster.json. */
export const CLUSTER_FILE_BYTES_MAX = 1024 * 1024;

/** CLUSTER_NODE_COUNT_DEFAULT is how many nodes `svc cluster` runs; CLUSTER_NODE_COUNT_MAX bounds --nodes. */
export const CLUSTER_NODE_COUNT_DEFAULT = 3;
export const CLUSTER_NODE_COUNT_MAX = 7;
/** CLUSTER_HEALTHY_TIMEOUT_MS bounds how long `svc cluster` waits for every /health to answer 200. */
export const CLUSTER_HEALTHY_TIMEOUT_MS = 120_000;
/** CLUSTER_HEALTH_POLL_MS paces the /health polls. */
export const CLUSTER_HEALTH_POLL_MS = 200;
/** CLUSTER_HTTP_TIMEOUT_MS bounds one /health or /status request of the supervisor. */
export const CLUSTER_HTTP_TIMEOUT_MS = 2_000;
/** CHILD_STOP_GRACE_MS is how long a child has after SIGTERM before SIGKILL. */
export const CHILD_STOP_GRACE_MS = 10_000;
/** CLUSTER_TICK_MS_DEFAULT is the local cluster's engine tick (the node default: 100 ms). */
export const CLUSTER_TICK_MS_DEFAULT = 100;
/** CLUSTER_DIR_DEFAULT is where `svc cluster` keeps data, certificates, logs and cluster.json. */
export const CLUSTER_DIR_DEFAULT = '.cluster';
/** ADMIN_KEY_NAME_DEFAULT names the admin user `svc keys create` and `svc cluster` bootstrap. */
export const ADMIN_KEY_NAME_DEFAULT = 'admin';
