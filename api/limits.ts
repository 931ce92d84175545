// Every limit of the HTTP API, with its default, in one place.

/** requestBodyBytesMax caps a JSON request body; larger bodies get 413 PAYLOAD_TOO_LARGE. */
export const requestBodyBytesMax = 256 * 1024;
/** requestIdLengthMax bounds an echoed X-Request-Id; longer or odd ones are replaced by a generated id. */
export const requestIdLengthMax = 128;
/** rateLimitPerSecondDefault applies when neither config nor SVC_RATE_LIMIT_RPS sets a rate. */
export const rateLimitPerSecondDefault = 50;
/** rateLimitWindowMs is the sliding window the per-key rate is counted over. */
export const rateLimitWindowMs = 1000;
/**
 * Rate-limit leases (rate-limit/leased-limiter.ts): a process takes its budget from the shared Redis window in
 * slices of rateLimitSliceShareOfLimit of the limit (at least 1, at most rateLimitSliceTokensMax tokens) and
 * may spend a slice for rateLimitLeaseMs. Across processes a 1-second span can admit up to one slice per
 * process more than the limit; within one process the limit is exact.
 */
export const rateLimitSliceShareOfLimit = 0.05;
export const rateLimitSliceTokensMax = 64;
export const rateLimitLeaseMs = 100;
/**
 * rateLimitRenewAtShare: a key's next lease is asked in the background, ahead of need, once this share of the
 * tokens in hand is spent or of its newest lease's time has passed, so a busy key's requests find a token
 * rather than wait for Redis. One lease in flight per key, and the tokens in hand plus those asked never exceed
 * one lease, so the bounds above hold as they are.
 */
export const rateLimitRenewAtShare = 0.5;
/**
 * rateLimitRenewAheadRemainingShare: leases are renewed ahead only while the shared window had at least this share
 * of the limit left at the process's last grant; nearer the limit they are asked on need, so that no token waits
 * unspent in one process while another refuses for want of it.
 */
export const rateLimitRenewAheadRemainingShare = 0.5;
/** pageLimitDefault and pageLimitMax bound list endpoints (`?limit=`). */
export const pageLimitDefault = 50;
export const pageLimitMax = 200;
/** nameLengthMax bounds names of keys, users, projects and credentials. */
export const nameLengthMax = 128;
/** credentialValueLengthMax bounds one secret value (before encryption). */
export const credentialValueLengthMax = 16 * 1024;
/** allowedIpCountMax bounds one key's IP allowlist. */
export const allowedIpCountMax = 64;
/** workspacePathLengthMax bounds a project's workspace directory. */
export const workspacePathLengthMax = 1024;
/** commandArgCountMax and commandArgLengthMax bound a project's agent command argv. */
export const commandArgCountMax = 64;
export const commandArgLengthMax = 4096;
/** promptLengthMax bounds the prompt of one agent command run. */
export const promptLengthMax = 64 * 1024;
/** queueStatsTimeoutMs bounds how long /work/stats waits for Redis before answering 503. */
export const queueStatsTimeoutMs = 2000;
/** apiKeyRandomBytes is the entropy of an issued key (256 bits). */
export const apiKeyRandomBytes = 32;
/** apiKeyPrefixLength is how many leading characters of a key are stored and shown as key_prefix. */
export const apiKeyPrefixLength = 12;
/** apiKeyLengthMax rejects absurd X-API-Key headers before hashing them. */
export const apiKeyLengthMax = 256;
/** runConcurrencyDefault is how many agent runs one worker process runs at once. */
export const runConcurrencyDefault = 2;
/**
 * runJobLockDurationMsDefault is how long a running agent job's BullMQ lock lasts (its worker renews it every half
 * of that). A worker that dies holds its runs only until the lock runs out; the next stalled check of any live
 * worker (every runJobStalledIntervalMsDefault) hands the job back, and the worker that takes it finishes the run
 * `failed` with a WORKER_LOST notice (agent-run-pipeline.ts): so a dead worker's runs end within the sum (40 s).
 * A run worker's event loop does little besides copying output, so it never misses a renewal by this much.
 */
export const runJobLockDurationMsDefault = 30_000;
/**
 * workspaceBusyRetryMsDefault is how long a run waits before it looks again at a workspace another run holds
 * (api/runs/workspace-lease.ts): the job goes back to BullMQ's delayed set meanwhile, the run stays `queued`.
 */
export const workspaceBusyRetryMsDefault = 250;
/** runJobStalledIntervalMsDefault is how often each run worker looks for agent jobs whose lock ran out. */
export const runJobStalledIntervalMsDefault = 10_000;
/** runTimeoutMsDefault is the wall-clock limit of one agent run; then it is killed and ends timed_out. */
export const runTimeoutMsDefault = 10 * 60 * 1000;
/**
 * runMemoryBytesMax is an agent run's memory: the run's cgroup (all its processes and its /tmp together) where the
 * host allows, and each process's data segment (RLIMIT_DATA) always. Not RLIMIT_AS: V8 reserves address space it
 * never touches (WebAssembly, fetch), and an address-space cap made Node-based agents fail.
 */
export const runMemoryBytesMax = 4 * 1024 * 1024 * 1024;
/** runCpuSecondsMax is the CPU-time limit (RLIMIT_CPU) of each process of an agent run. */
export const runCpuSecondsMax = 600;
/** runCpuCoresMax is the CPU rate of a whole run (cgroup CPU quota) where the host allows. */
export const runCpuCoresMax = 1;
/**
 * runProcessesMax bounds an agent run's processes and threads together: the run's cgroup (pids) where the host
 * allows, and RLIMIT_NPROC of the run's own uid (one uid per run, so it is a per-run limit too).
 */
export const runProcessesMax = 256;
/** runOpenFilesMax (RLIMIT_NOFILE) and runFileBytesMax (RLIMIT_FSIZE) bound an agent run's files. */
export const runOpenFilesMax = 1024;
export const runFileBytesMax = 1024 * 1024 * 1024;
/** runTmpBytesMax is the size of a run's private /tmp (a tmpfs, also counted in its memory). */
export const runTmpBytesMax = 256 * 1024 * 1024;
/** runShmBytesMax and runRunDirBytesMax size a run's /dev/shm and /run (credential files are mounted over it). */
export const runShmBytesMax = 64 * 1024 * 1024;
export const runRunDirBytesMax = 1024 * 1024;
/**
 * runWorkspaceBytesMax is what a project's workspace may hold during a run; runWorkspacePollMs how often it is
 * measured (du). A run found over it is killed and fails (WORKSPACE_QUOTA_EXCEEDED): a writer can overshoot by
 * what it writes in one interval; no single file exceeds the quota (RLIMIT_FSIZE is at most it).
 */
export const runWorkspaceBytesMax = 4 * 1024 * 1024 * 1024;
export const runWorkspacePollMs = 1000;
/**
 * Each run gets its own host uid from [runUidFirst, runUidFirst + runUidCount) when the worker runs as root:
 * no other process on the host has it, so RLIMIT_NPROC, file ownership and the egress filter's owner match are
 * the run's alone. Claimed under runUidClaimDir, so worker processes on one host never share one.
 */
export const runUidFirst = 400_000;
export const runUidCount = 65_536;
export const runUidClaimAttemptsMax = 64;
/** runCredentialsMax bounds the credentials one project injects into its runs. */
export const runCredentialsMax = 16;
/** runSlirpReadyTimeoutMs bounds the wait for a run's user-mode network (slirp4netns) to come up. */
export const runSlirpReadyTimeoutMs = 10_000;
/**
 * runEgressResolveTimeoutMs bounds the lookup of one name a networked run is denied (a cluster member, the Redis
 * host) when the run starts; a name without an answer keeps its last addresses (egress-deny.ts).
 */
export const runEgressResolveTimeoutMs = 5_000;
/** runOutputBytesMax bounds the output of one run kept in its event stream; the rest is dropped (with a notice). */
export const runOutputBytesMax = 8 * 1024 * 1024;
/** runOutputFlushMs and runOutputChunkBytesMax batch output into stream events. */
export const runOutputFlushMs = 50;
export const runOutputChunkBytesMax = 16 * 1024;
/** runEventsMax caps one run's event stream length (Redis XADD MAXLEN). */
export const runEventsMax = 100_000;
/** runRetentionSeconds is how long a finished run's events and status stay readable. */
export const runRetentionSeconds = 24 * 60 * 60;
/**
 * runSweepIntervalMs is how often one worker process deletes run records past their retention and finishes runs
 * left `running` whose job is no longer active (runs/run-sweep.ts).
 */
export const runSweepIntervalMs = 10 * 60 * 1000;
/** runSweepPageEntriesMax is how many run records one sweep reads per store list call. */
export const runSweepPageEntriesMax = 200;
/** runTmpBytesMaxKubernetes bounds a Kubernetes run's /tmp (an emptyDir with this sizeLimit). */
export const runTmpBytesMaxKubernetes = 1024 * 1024 * 1024;
/** runJobTtlSeconds: Kubernetes deletes a run's finished Job after this, should the worker not have. */
export const runJobTtlSeconds = 600;
/**
 * runKubernetesSecretOwnDeadlineMs: a Kubernetes run whose Job is not made within this of sending its Secret fails
 * (the backend deletes both) rather than give the Secret its owner reference late. It bounds how long a live
 * worker leaves a run's Secret without an owner, which the leftover sweep relies on (runKubernetesOrphanGraceMs).
 */
export const runKubernetesSecretOwnDeadlineMs = 60_000;
/**
 * runKubernetesOrphanGraceMs: the leftover sweep (runs/kubernetes-sweep.ts) deletes a run's Secret that has no
 * owner once it is older than this (by its creationTimestamp), even while the run's record says running: no live
 * worker leaves one unowned that long (runKubernetesSecretOwnDeadlineMs), so its worker died before the owner
 * patch. Far above that deadline, so clock skew between the API server and the sweeping worker does not matter.
 */
export const runKubernetesOrphanGraceMs = 10 * 60 * 1000;
/** runKubernetesSweepIntervalMs paces the leftover sweep, run by one worker process of the cluster at a time. */
export const runKubernetesSweepIntervalMs = 5 * 60 * 1000;
/** runKubernetesSweepPageItemsMax is the `limit` of each Secret or Job list call of the leftover sweep. */
export const runKubernetesSweepPageItemsMax = 100;
/** runKillGraceMs is the wait between SIGTERM and SIGKILL when a run is cancelled or times out. */
export const runKillGraceMs = 2000;
/**
 * runCompleteRepairGraceMs: how long after a run's record became final an open stream that lacks `complete`
 * waits before it appends it (run-records.ts ensureCompleteEvent): the finisher appends it right after the record.
 */
export const runCompleteRepairGraceMs = 5_000;
/** sseKeepAliveMsDefault is the interval of SSE keep-alive comments while a run is quiet. */
export const sseKeepAliveMsDefault = 15_000;
/** sseStreamDurationMsMax ends one SSE response; the client resumes with Last-Event-ID. */
export const sseStreamDurationMsMax = 60 * 60 * 1000;
/**
 * sseStreamsMax bounds concurrent run event streams per API process. An open stream holds a socket and a
 * listener on the process's one subscriber connection (runs/run-event-hub.ts), not a Redis connection.
 */
export const sseStreamsMax = 4096;
/** sseReadCountMax is how many events one Redis read returns. */
export const sseReadCountMax = 100;
