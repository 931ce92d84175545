// The raw grpc-js stream the transfer benches compare our calls with: RAW_PATH is the snapshot bench's, and
// pullRawBytes reads such a stream (identity serializers, no framing of ours) to its end.
import * as grpc from '@grpc/grpc-js';

export const RAW_PATH = '/bench.Snapshot/Pull';

const identity = (b: Buffer): Buffer => b;

/** pullRawBytes calls a raw server stream at `path` with `request` and counts the bytes it delivers. */
export async function pullRawBytes(client: grpc.Client, path: string, request: Buffer): Promise<number> {
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    const call = client.makeServerStreamRequest<Buffer, Buffer>(
      path,
      identity,
      identity,
      request,
      new grpc.Metadata(),
      {},
    );
    call.on('data', (m: Buffer) => {
      bytes += m.length;
    });
    call.on('error', reject);
    call.on('end', resolve);
  });
  return bytes;
}
