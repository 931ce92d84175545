// BLAKE3 for snapshot manifests, through hash-wasm (WebAssembly, ~15x @noble's pure JS here).
// Digests are 32 bytes; the manifest stores them as lowercase hex, the wire as bytes.
import { open } from 'node:fs/promises';
import { createBLAKE3, type IHasher } from 'hash-wasm';

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
    update(bytes) { hasher.update(bytes); },
    digest() { return hasher.digest('binary'); },
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
