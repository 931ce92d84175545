// The serving side of the snapshot bench, in its own process: our PeerServer answering
// FetchSnapshot with a staged artifact read from disk (SnapshotStore.read), and a raw grpc-js
// server stream sending the same bytes in chunks of the same size from memory. Both over mutual
// TLS with our server channel options. argv: DATA_DIR CERT_DIR. Prints {peerPort, rawPort}; exits
// when stdin closes.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { serverChannelOptions } from '../../transports/grpc/channel-options.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { serverCredentials } from '../../transports/grpc/tls.js';
import { DEFAULT_STORAGE_LIMITS } from '../../transports/storage/limits.js';
import { SnapshotStore } from '../../transports/storage/snapshots.js';

import { RAW_PATH } from './raw-path.js';
const identity = (b: Buffer): Buffer => b;

const [dataDir, certDir] = process.argv.slice(2);
if (!dataDir || !certDir) throw new Error('usage: snapshot-server.ts DATA_DIR CERT_DIR');
const material = {
  ca: await readFile(join(certDir, 'ca.crt')),
  cert: await readFile(join(certDir, 'server.crt')),
  key: await readFile(join(certDir, 'server.key')),
};
const store = await SnapshotStore.open(dataDir);
const artifact = store.newest();
if (!artifact) throw new Error(`no staged artifact under ${dataDir}`);
const totalBytes = artifact.manifest.files.reduce((sum, f) => sum + f.size, 0);
const chunkBytes = DEFAULT_STORAGE_LIMITS.snapshotChunkBytes;

const limits = resolveGrpcLimits();
const raw = new grpc.Server(serverChannelOptions(limits));
const chunk = Buffer.alloc(chunkBytes, 0x5a);
raw.addService(
  {
    Pull: {
      path: RAW_PATH,
      requestStream: false,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  {
    Pull: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      let left = totalBytes;
      const pump = (): void => {
        // Bounded by `left`, which every pass lowers.
        while (left > 0) {
          const size = Math.min(left, chunkBytes);
          left -= size;
          if (!call.write(size === chunkBytes ? chunk : chunk.subarray(0, size))) {
            call.once('drain', pump);
            return;
          }
        }
        call.end();
      };
      pump();
    },
  },
);
const rawPort = await new Promise<number>((resolve, reject) =>
  raw.bindAsync('127.0.0.1:0', serverCredentials(material), (e, p) => (e ? reject(e) : resolve(p))),
);

const peer = await PeerServer.listen('127.0.0.1:0', {
  credentials: serverCredentials(material),
  handler: {
    onRequest(_callId, request, call) {
      if (request.method !== 'FetchSnapshot') {
        call.replyError({ code: 12, details: 'the bench serves FetchSnapshot only', trailers: {} });
        return;
      }
      call.serveSnapshot(artifact.header, store.read(artifact));
    },
  },
});
process.stdout.write(`${JSON.stringify({ peerPort: peer.port, rawPort, totalBytes })}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
