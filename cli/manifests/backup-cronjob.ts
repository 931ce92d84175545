// The optional backup CronJob of `svc manifests render --backup-schedule CRON --backup-claim PVC`: on its
// schedule a pod of the node image runs `svc backup --out-dir /backups --keep N` against the founders' pods,
// with the admin certificate of the backup admin Secret (`svc manifests secrets --backup-admin NAME` writes
// it), into the named PersistentVolumeClaim. One at a time (concurrencyPolicy Forbid), bounded in time.
// docs/operations.md ("Backup and restore") has the recipe, and how to restore from what it writes.
import type { V1CronJob } from '@kubernetes/client-node';
import { BACKUP_TIMEOUT_MS_DEFAULT } from '../backup/limits.js';
import { GRPC_PORT, MOUNTS, podHost, podName, SECRET_KEYS, type DeploymentNames } from './layout.js';

/** BACKUP_KEEP_DEFAULT is how many backups the CronJob leaves in its volume (--backup-keep). */
export const BACKUP_KEEP_DEFAULT = 7;
/** BACKUP_JOB_DEADLINE_SECONDS bounds one backup Job: `svc backup`'s own bound with room to start and exit. */
export const BACKUP_JOB_DEADLINE_SECONDS = Math.ceil(BACKUP_TIMEOUT_MS_DEFAULT / 1000) + 120;
/** BACKUP_JOB_BACKOFF_LIMIT: a failed backup is retried this many times before the Job fails. */
export const BACKUP_JOB_BACKOFF_LIMIT = 2;
/** BACKUP_RESOURCES: the backup streams to its file; tsx's compile of the command is most of its memory. */
export const BACKUP_RESOURCES = {
  requests: { cpu: '100m', memory: '256Mi', 'ephemeral-storage': '64Mi' },
  limits: { cpu: '1', memory: '1Gi', 'ephemeral-storage': '512Mi' },
};

export interface BackupCronJobOptions {
  image: string;
  founders: number;
  /** schedule is the CronJob's schedule (cron syntax, the cluster's time zone unless timeZone says one). */
  schedule: string;
  /** claim is the PersistentVolumeClaim the backups are written into (made by the operator). */
  claim: string;
  keep?: number;
  uid: number;
  labels: Record<string, string>;
  securityContext: () => Record<string, unknown>;
}

/** backupArgs is the container's argument list: `svc backup` against every founder, into the volume. */
export function backupArgs(options: BackupCronJobOptions, names: DeploymentNames): string[] {
  const founderPods = Array.from({ length: options.founders }, (_, ordinal) => podName(names, ordinal));
  return [
    'backup',
    '--out-dir',
    MOUNTS.backups,
    '--keep',
    String(options.keep ?? BACKUP_KEEP_DEFAULT),
    // Any member will do (it takes the leader's read index); each is tried in turn.
    ...founderPods.flatMap((pod) => ['--node', `${podHost(names, pod)}:${GRPC_PORT}`]),
    '--tls-ca',
    `${MOUNTS.backupAdmin}/${SECRET_KEYS.caCert}`,
    '--tls-cert',
    `${MOUNTS.backupAdmin}/${SECRET_KEYS.backupAdminCert}`,
    '--tls-key',
    `${MOUNTS.backupAdmin}/${SECRET_KEYS.backupAdminKey}`,
  ];
}

export function backupCronJob(options: BackupCronJobOptions, names: DeploymentNames): V1CronJob {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name: names.backup, namespace: names.namespace, labels: options.labels },
    spec: {
      schedule: options.schedule,
      // A backup still running when the next is due: the next waits its turn (the node serves few at once).
      concurrencyPolicy: 'Forbid',
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels: options.labels },
        spec: {
          backoffLimit: BACKUP_JOB_BACKOFF_LIMIT,
          activeDeadlineSeconds: BACKUP_JOB_DEADLINE_SECONDS,
          template: {
            metadata: { labels: options.labels },
            spec: {
              restartPolicy: 'Never',
              automountServiceAccountToken: false,
              enableServiceLinks: false,
              securityContext: {
                runAsNonRoot: true,
                runAsUser: options.uid,
                runAsGroup: options.uid,
                fsGroup: options.uid,
                fsGroupChangePolicy: 'OnRootMismatch',
                seccompProfile: { type: 'RuntimeDefault' },
              },
              containers: [
                {
                  name: 'backup',
                  image: options.image,
                  imagePullPolicy: 'IfNotPresent',
                  args: backupArgs(options, names),
                  env: [{ name: 'NODE_ENV', value: 'production' }],
                  resources: BACKUP_RESOURCES,
                  securityContext: options.securityContext(),
                  volumeMounts: [
                    { name: 'backups', mountPath: MOUNTS.backups },
                    { name: 'backup-admin', mountPath: MOUNTS.backupAdmin, readOnly: true },
                    { name: 'tmp', mountPath: MOUNTS.tmp },
                  ],
                },
              ],
              volumes: [
                { name: 'backups', persistentVolumeClaim: { claimName: options.claim } },
                { name: 'backup-admin', secret: { secretName: names.backupAdminSecret, defaultMode: 0o440 } },
                { name: 'tmp', emptyDir: { sizeLimit: '256Mi' } },
              ],
            },
          },
        },
      },
    },
  };
}
