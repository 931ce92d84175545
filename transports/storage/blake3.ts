// BLAKE3 for snapshot manifests, through hash-wasm (WebAssembly, ~15x @noble's pure JS here).
// Digests are 32 bytes; the manifest stores them as lowercase hex, the wire as bytes.
import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { createBLAKE3, type IHasher } from 'hash-wasm';

const requireHere = createRequire(import.meta.url);

export const BLAKE3_DIGEST_BYTES = 32;

/** Blake3Hasher is a streaming hasher: update as bytes arrive, digest once at the end. */
export interface Blake3Hasher {
  update(bytes: Uint8Array): void;
  digest(): Uint8Array;
}

export async function createBlake3Hasher(): Promise<Blake3Hasher> {
  const hasher: IHasher = await createBLAKE3();
  hasher.init();
  return {
    update(bytes) {
      hasher.update(bytes);
    },
    digest() {
      return hasher.digest('binary');
    },
  };
}

export async function blake3Bytes(bytes: Uint8Array): Promise<Uint8Array> {
  const hasher = await createBlake3Hasher();
  hasher.update(bytes);
  return hasher.digest();
}

/** blake3File streams a file through the hasher in `bufferBytes` reads and returns its digest and size. */
export async function blake3File(path: string, bufferBytes: number): Promise<{ digest: Uint8Array; size: number }> {
  const hasher = await createBlake3Hasher();
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(bufferBytes);
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, bufferBytes, null);
      if (bytesRead === 0) break;
      hasher.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
    }
    return { digest: hasher.digest(), size };
  } finally {
    await handle.close();
  }
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

// The worker is plain CommonJS given as a string (no loader needed in the worker): it hashes the
// copies it is sent, in order, acknowledging each so the sender can bound what is in flight.
const HASH_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createBLAKE3 } = require(workerData.hashWasmPath);
let chain = createBLAKE3().then((hasher) => { hasher.init(); return hasher; });
parentPort.on('message', (m) => {
  chain = chain.then((hasher) => {
    if (m.t === 'update') { hasher.update(m.bytes); parentPort.postMessage({ t: 'ack', bytes: m.bytes.length }); }
    else if (m.t === 'digest') { parentPort.postMessage({ t: 'digest', digest: hasher.digest('binary') }); hasher.init(); }
    return hasher;
  }).catch((err) => { parentPort.postMessage({ t: 'error', message: String(err) }); throw err; });
});
`;

type WorkerReply = { t: 'ack'; bytes: number } | { t: 'digest'; digest: Uint8Array } | { t: 'error'; message: string };

/**
 * OffThreadBlake3 hashes in a worker thread, so a receiving event loop spends one memory copy per
 * chunk (the postMessage clone) instead of the hash itself (~2 ms/MB here). update() returns at
 * once; waitInFlightAtMost bounds the bytes sent but not yet hashed. One file at a time: digest()
 * returns the file's digest and starts the next.
 */
export class OffThreadBlake3 {
  private readonly worker: Worker;
  private inFlightBytes = 0;
  private failure: Error | null = null;
  private waiters: Array<() => void> = [];
  private digestWaiter: { resolve(d: Uint8Array): void; reject(e: Error): void } | null = null;

  private constructor() {
    this.worker = new Worker(HASH_WORKER_SOURCE, {
      eval: true,
      execArgv: [],
      workerData: { hashWasmPath: requireHere.resolve('hash-wasm') },
    });
    this.worker.on('message', (reply: WorkerReply) => {
      if (reply.t === 'ack') {
        this.inFlightBytes -= reply.bytes;
        this.wake();
      } else if (reply.t === 'digest') {
        const waiter = this.digestWaiter;
        this.digestWaiter = null;
        waiter?.resolve(new Uint8Array(reply.digest));
      } else {
        this.fail(new Error(`BLAKE3 worker failed: ${reply.message}`));
      }
    });
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`BLAKE3 worker exited with code ${code}`)));
  }

  static start(): OffThreadBlake3 {
    return new OffThreadBlake3();
  }

  update(bytes: Uint8Array): void {
    if (this.failure) throw this.failure;
    this.inFlightBytes += bytes.length;
    this.worker.postMessage({ t: 'update', bytes });
  }

  /** waitInFlightAtMost resolves once at most `bytes` are sent but not yet hashed. */
  async waitInFlightAtMost(bytes: number): Promise<void> {
    // Bounded: each pass waits for an ack (which lowers inFlightBytes) or a failure (which throws).
    while (this.inFlightBytes > bytes) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    if (this.failure) throw this.failure;
  }

  digest(): Promise<Uint8Array> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.digestWaiter = { resolve, reject };
      this.worker.postMessage({ t: 'digest' });
    });
  }

  /** close stops the worker; whatever was pending fails. */
  async close(): Promise<void> {
    this.fail(new Error('BLAKE3 worker closed'));
    await this.worker.terminate();
  }

  private fail(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.digestWaiter?.reject(err);
    this.digestWaiter = null;
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
