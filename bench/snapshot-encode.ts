// Snapshot encoding bench (not a test): how long a member's event loop is held in one piece while it stages a
// snapshot of a large store (docs/operations.md, "The c64 tail"). It fills a StoreStateMachine with --keys puts
// (96-byte values, each with a request id, as bench/cluster.ts writes them), then times captureSnapshot, and
// encodeCapture with the staging's chunk size and a pause that yields a loop turn, reporting the longest stretch
// between pauses and the total; then a BLAKE3 of the encoded file in one update (what staging did) and the longest
// of its snapshotChunkBytes chunks (what it does now).
//
//   npx tsx bench/snapshot-encode.ts [--keys 100000] [--rounds 5]
import { performance } from 'node:perf_hooks';
import { EntryKind } from '../engine/types.js';
import { encodeCommand } from '../store/command.js';
import { ENCODE_CHUNK_ENTRY_COUNT } from '../store/snapshot-files.js';
import { encodeCapture, StoreStateMachine } from '../store/state-machine.js';
import { createBlake3Hasher } from '../transports/storage/blake3.js';
import { DEFAULT_STORAGE_LIMITS } from '../transports/storage/limits.js';
import { numberArg } from './cluster/trace-files.js';

const VALUE_CHARS = 96 - '{"d":""}'.length;

async function main(): Promise<void> {
  const keys = numberArg('keys', 100_000);
  const rounds = numberArg('rounds', 5);
  const sm = new StoreStateMachine();
  for (let i = 1; i <= keys; i++) {
    const command = {
      op: 'put' as const,
      key: `bench/c64/w${i % 64}/${i}`,
      value: { d: String(i).padEnd(VALUE_CHARS, 'x') },
      requestId: `bench-${i}`,
    };
    sm.apply({ seq: i, term: 1, kind: EntryKind.EventBatch, data: encodeCommand(command) });
  }
  const chunkBytes = DEFAULT_STORAGE_LIMITS.snapshotChunkBytes;
  for (let round = 1; round <= rounds; round++) {
    const captureFrom = performance.now();
    const capture = sm.captureSnapshot();
    const captureMs = performance.now() - captureFrom;
    let longestMs = 0;
    let pauses = 0;
    let since = performance.now();
    const encodeFrom = since;
    const bytes = await encodeCapture(capture, ENCODE_CHUNK_ENTRY_COUNT, async () => {
      longestMs = Math.max(longestMs, performance.now() - since);
      pauses++;
      await new Promise<void>((resolve) => setImmediate(resolve));
      since = performance.now();
    });
    longestMs = Math.max(longestMs, performance.now() - since);
    const encodeMs = performance.now() - encodeFrom;
    const whole = await createBlake3Hasher();
    const hashFrom = performance.now();
    whole.update(bytes);
    whole.digest();
    const hashWholeMs = performance.now() - hashFrom;
    const chunked = await createBlake3Hasher();
    let hashChunkMs = 0;
    for (let at = 0; at < bytes.length; at += chunkBytes) {
      const from = performance.now();
      chunked.update(bytes.subarray(at, at + chunkBytes));
      hashChunkMs = Math.max(hashChunkMs, performance.now() - from);
    }
    console.log(
      `round ${round}: ${keys} keys, ${capture.dedup.length} request-id rows, store.json ${(bytes.length / 1e6).toFixed(1)} MB; capture ${captureMs.toFixed(1)} ms; encode ${encodeMs.toFixed(1)} ms in ${pauses + 1} pieces, the longest ${longestMs.toFixed(1)} ms; BLAKE3 in one update ${hashWholeMs.toFixed(1)} ms, longest ${chunkBytes / 1024 / 1024} MiB chunk ${hashChunkMs.toFixed(1)} ms`,
    );
  }
}

await main();
