// Admin.Backup's server half (transports/admin/backup-service.ts) and client half (AdminClientPool.backup) over a
// real gRPC server on loopback, with a host whose capture the test controls: the header and the chunks arrive in
// order with each file's BLAKE3; a state above backupBytesMax and a call beyond backupConcurrentCountMax are
// refused with RESOURCE_EXHAUSTED before anything is sent; a capture's refusal reaches the caller with its leader
// hint; a caller that goes away mid-stream frees its slot.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import {
  AdminCallError,
  AdminClientPool,
  adminServiceDefinition,
  adminServiceImplementation,
  type AdminHost,
  type BackupCapture,
} from '../../transports/admin/index.js';
import type { BackupChunk } from '../../proto/gen/svc/admin/v1/admin.js';
import { blake3Bytes } from '../../transports/storage/blake3.js';

const CHUNK_BYTES = 1000;
const BYTES_MAX = 50_000;

function capture(files: Array<{ path: string; bytes: Uint8Array }>): BackupCapture {
  return {
    index: 42,
    term: 3,
    clusterId: 'c0ffee',
    membershipVersion: 1,
    roster: [{ id: 1, name: 'n1', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:2', role: 'voter' }],
    createdAtUnixMs: 1_700_000_000_000,
    buildVersion: '9.9.9',
    servedBy: 'n1',
    files,
  };
}

describe('transports/admin: Admin.Backup over gRPC', function () {
  this.timeout(30_000);
  let server: grpc.Server;
  let address: string;
  let pool: AdminClientPool;
  let nextCapture: (deadlineAt: number) => Promise<BackupCapture>;

  before(async function () {
    const host = {
      backup: (deadlineAt: number) => nextCapture(deadlineAt),
    } as unknown as AdminHost;
    server = new grpc.Server();
    server.addService(
      adminServiceDefinition(),
      adminServiceImplementation({
        host,
        backupLimits: { chunkBytes: CHUNK_BYTES, bytesMax: BYTES_MAX, concurrentCountMax: 2 },
      }),
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
    address = `127.0.0.1:${port}`;
    pool = new AdminClientPool({ credentials: grpc.credentials.createInsecure() });
  });

  after(async function () {
    pool.close();
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
  });

  async function drain(deadlineMs = 10_000): Promise<BackupChunk[]> {
    const chunks: BackupChunk[] = [];
    for await (const chunk of pool.backup(address, Date.now() + deadlineMs)) chunks.push(chunk);
    return chunks;
  }

  it('sends the header (each file with its BLAKE3) and then every file in chunks of chunkBytes, in order', async function () {
    const store = Buffer.alloc(3 * CHUNK_BYTES + 17, 'a');
    const other = Buffer.from('other file');
    nextCapture = async () =>
      capture([
        { path: 'store.json', bytes: store },
        { path: 'empty', bytes: new Uint8Array() },
        { path: 'x/other', bytes: other },
      ]);
    const chunks = await drain();
    const [first, ...rest] = chunks;
    assert.equal(first?.part?.$case, 'header');
    const header = first.part.value;
    assert.equal(header.index, 42);
    assert.equal(header.clusterId, 'c0ffee');
    assert.deepEqual(
      header.files.map((f) => [f.path, f.size, Buffer.from(f.blake3).toString('hex')]),
      [
        ['store.json', store.length, Buffer.from(await blake3Bytes(store)).toString('hex')],
        ['empty', 0, Buffer.from(await blake3Bytes(new Uint8Array())).toString('hex')],
        ['x/other', other.length, Buffer.from(await blake3Bytes(other)).toString('hex')],
      ],
    );
    const files = rest.map((c) => {
      assert.equal(c.part?.$case, 'file');
      return c.part.value;
    });
    assert.deepEqual(
      files.map((f) => [f.path, f.offset, f.data.length]),
      [
        ['store.json', 0, CHUNK_BYTES],
        ['store.json', CHUNK_BYTES, CHUNK_BYTES],
        ['store.json', 2 * CHUNK_BYTES, CHUNK_BYTES],
        ['store.json', 3 * CHUNK_BYTES, 17],
        ['x/other', 0, other.length],
      ],
    );
    assert.deepEqual(Buffer.concat(files.filter((f) => f.path === 'store.json').map((f) => f.data)), store);
  });

  it('a state above backupBytesMax is refused with RESOURCE_EXHAUSTED before anything is sent', async function () {
    nextCapture = async () => capture([{ path: 'store.json', bytes: Buffer.alloc(BYTES_MAX + 1) }]);
    const seen: BackupChunk[] = [];
    await assert.rejects(
      (async () => {
        for await (const chunk of pool.backup(address, Date.now() + 10_000)) seen.push(chunk);
      })(),
      (err: AdminCallError) => {
        assert.ok(err instanceof AdminCallError);
        assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
        assert.match(err.details, /above backupBytesMax \(50000\)/);
        return true;
      },
    );
    assert.equal(seen.length, 0);
  });

  it("a capture's refusal reaches the caller with its code and leader hint", async function () {
    nextCapture = () =>
      Promise.reject(new AdminCallError(grpc.status.UNAVAILABLE, 'backup barrier failed: no leader', '10.0.0.9:7000'));
    await assert.rejects(drain(), (err: AdminCallError) => {
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.equal(err.leaderHint, '10.0.0.9:7000');
      return true;
    });
    nextCapture = () => Promise.reject(new Error('disk on fire'));
    await assert.rejects(drain(), (err: AdminCallError) => err.code === grpc.status.INTERNAL);
  });

  it('a call beyond backupConcurrentCountMax is refused; a caller that goes away frees its slot', async function () {
    const release: Array<() => void> = [];
    nextCapture = () =>
      new Promise((resolve) => release.push(() => resolve(capture([{ path: 'store.json', bytes: Buffer.alloc(10) }]))));
    const first = drain();
    // The second caller gives up (its deadline) while its capture waits: the server must not count it forever.
    const second = drain(500);
    await waitUntil(() => release.length === 2);
    await assert.rejects(drain(), (err: AdminCallError) => {
      assert.equal(err.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(err.details, /backupConcurrentCountMax 2/);
      return true;
    });
    await assert.rejects(second, (err: AdminCallError) => err.code === grpc.status.DEADLINE_EXCEEDED);
    release[0]!();
    assert.equal((await first).length, 2);
    release[1]!(); // the abandoned call's capture ends; its slot is free again
    nextCapture = async () => capture([{ path: 'store.json', bytes: Buffer.alloc(10) }]);
    await waitUntil(async () => {
      try {
        await drain();
        return true;
      } catch {
        return false;
      }
    });
  });
});

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
