// etcd's KV service over gRPC (@grpc/grpc-js with the part of etcd's rpc.proto the bench needs,
// etcd-kv.proto): one channel per member, plaintext, as etcd's own clients talk to a member's client URL.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

const protoPath = fileURLToPath(new URL('./etcd-kv.proto', import.meta.url));

interface RangeResponse {
  kvs: Array<{ value: Buffer }>;
}

type Unary<Req, Res> = (
  request: Req,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, response?: Res) => void,
) => void;

interface KvStub extends grpc.Client {
  Range: Unary<{ key: Buffer; serializable: boolean }, RangeResponse>;
  Put: Unary<{ key: Buffer; value: Buffer }, unknown>;
}

export interface EtcdKvClient {
  /** range reads one key at members[member]: linearizable (serializable false), as etcd's clients read by default. */
  range(member: number, key: string, deadlineAt: number): Promise<string | null>;
  put(member: number, key: string, value: string, deadlineAt: number): Promise<void>;
  close(): void;
}

/** etcdKvClient dials each member's client URL (http://host:port) for gRPC. */
export function etcdKvClient(clientUrls: readonly string[]): EtcdKvClient {
  const definition = grpc.loadPackageDefinition(
    loadSync(protoPath, { keepCase: false, longs: Number, defaults: true }),
  );
  const Kv = (definition.etcdserverpb as grpc.GrpcObject).KV as unknown as new (
    address: string,
    credentials: grpc.ChannelCredentials,
  ) => KvStub;
  const stubs = clientUrls.map((url) => new Kv(new URL(url).host, grpc.credentials.createInsecure()));
  const call = <Req, Res>(fn: Unary<Req, Res>, stub: KvStub, request: Req, deadlineAt: number): Promise<Res> =>
    new Promise((resolve, reject) =>
      fn.call(stub, request, { deadline: deadlineAt }, (err, response) => (err ? reject(err) : resolve(response!))),
    );
  const stubOf = (member: number): KvStub => stubs[member % stubs.length]!;
  return {
    range: async (member, key, deadlineAt) => {
      const stub = stubOf(member);
      const response = await call(stub.Range, stub, { key: Buffer.from(key), serializable: false }, deadlineAt);
      return response.kvs.length === 0 ? null : response.kvs[0]!.value.toString();
    },
    put: async (member, key, value, deadlineAt) => {
      const stub = stubOf(member);
      await call(stub.Put, stub, { key: Buffer.from(key), value: Buffer.from(value) }, deadlineAt);
    },
    close: () => {
      for (const stub of stubs) stub.close();
    },
  };
}
