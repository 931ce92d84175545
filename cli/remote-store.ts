// RemoteStoreWriter is a DocumentStore that only writes: each put or delete is a store command
// proposed to the cluster through svc.admin.v1 Propose (mutual TLS, the admin certificate; the member
// that answers takes it to the leader). Retries reuse the command's request id, so a command applies
// once. It is what `svc keys create` hands to the API's bootstrapAdminKey, which only writes.
import { randomUUID } from 'node:crypto';
import { status as grpcStatus } from '@grpc/grpc-js';
import {
  VersionConflictError,
  type DocumentStore,
  type JsonObject,
  type ListResult,
  type VersionedValue,
  type WriteOptions,
} from '../store/document-store.js';
import { encodeCommand, resultFromMessage, type CommandResult, type StoreCommand } from '../store/command.js';
import { AdminCallError, AdminClientPool } from '../transports/admin/admin-client.js';
import type { AdminTarget } from './admin-target.js';
import { ADMIN_RETRY_DELAY_MS } from './limits.js';

const RETRYABLE = new Set<number>([
  grpcStatus.UNAVAILABLE,
  grpcStatus.ABORTED,
  grpcStatus.FAILED_PRECONDITION,
  grpcStatus.DEADLINE_EXCEEDED,
]);

export class RemoteStoreWriter implements DocumentStore {
  private readonly pool: AdminClientPool;
  private preferred: string;

  constructor(private readonly target: AdminTarget) {
    this.pool = new AdminClientPool({ credentials: target.credentials, channelOptions: target.channelOptions });
    this.preferred = target.addresses[0]!;
  }

  close(): void {
    this.pool.close();
  }

  async put(key: string, value: JsonObject, options: WriteOptions = {}): Promise<{ version: number }> {
    const result = await this.commit({ op: 'put', key, value, requestId: this.requestId(), ...expected(options) });
    return { version: (result as { version: number }).version };
  }

  async delete(key: string, options: WriteOptions = {}): Promise<{ deleted: boolean }> {
    const result = await this.commit({ op: 'delete', key, requestId: this.requestId(), ...expected(options) });
    return { deleted: (result as { existed: boolean }).existed };
  }

  get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    return Promise.reject(new Error(`the CLI's store client only writes (get ${key})`));
  }

  list<T extends JsonObject = JsonObject>(prefix: string): Promise<ListResult<T>> {
    return Promise.reject(new Error(`the CLI's store client only writes (list ${prefix})`));
  }

  watch(): () => void {
    throw new Error("the CLI's store client only writes (watch)");
  }

  private requestId(): string {
    return `svc-cli-${randomUUID()}`;
  }

  private async commit(command: StoreCommand): Promise<Extract<CommandResult, { outcome: 'applied' }>> {
    const bytes = encodeCommand(command);
    let lastError: unknown = null;
    // Bounded by the target's deadline: every pass calls with it, and a failed pass waits before the next.
    for (;;) {
      const left = this.target.deadlineAt - Date.now();
      if (left <= 0) break;
      const to = this.preferred;
      try {
        const result = resultFromMessage((await this.pool.propose(to, bytes, this.target.deadlineAt)).result);
        if (result.outcome === 'conflict')
          throw new VersionConflictError(command.key, command.expectedVersion ?? 0, result.actualVersion);
        if (result.outcome === 'rejected')
          throw new Error(`the cluster rejected the ${command.op} of ${command.key}: ${result.reason}`);
        return result;
      } catch (err) {
        if (!(err instanceof AdminCallError) || !RETRYABLE.has(err.code)) throw err;
        lastError = err;
        const addresses = this.target.addresses;
        this.preferred =
          err.leaderHint !== '' ? err.leaderHint : (addresses[(addresses.indexOf(to) + 1) % addresses.length] ?? to);
      }
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(ADMIN_RETRY_DELAY_MS, Math.max(0, this.target.deadlineAt - Date.now()))),
      );
    }
    throw new AdminCallError(
      grpcStatus.DEADLINE_EXCEEDED,
      `the ${command.op} of ${command.key} was not confirmed before the deadline (last: ${lastError instanceof Error ? lastError.message : 'none'})`,
    );
  }
}

function expected(options: WriteOptions): { expectedVersion?: number } {
  return options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion };
}
