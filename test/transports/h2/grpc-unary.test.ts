// gRPC unary calls on the raw HTTP/2 server (transports/h2) from real clients over loopback sockets: grpc-js
// (as the node's peers and the SDK call) and bare node:http2 (as transports/grpc/lean-unary.ts calls), in
// plaintext and over TLS with ALPN h2 and a client certificate.
import assert from 'node:assert/strict';
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { serveGrpcUnary, type UnaryHandler } from '../../../transports/h2/grpc-unary.js';
import { H2Server, type H2ServerOptions } from '../../../transports/h2/server.js';
import { ThrowawayPki } from '../throwaway-pki.js';

const identity = (b: Buffer): Buffer => b;
const MESSAGE_BYTES_MAX = 4 * 1024 * 1024;

interface Harness {
  server: H2Server;
  cancelled: string[];
  served: number;
}

async function startServer(options: Partial<H2ServerOptions> = {}): Promise<Harness> {
  const harness: Harness = { server: undefined as unknown as H2Server, cancelled: [], served: 0 };
  const handlers = new Map<string, UnaryHandler>([
    [
      '/t.Test/Echo',
      (request) => {
        harness.served += 1;
        return { message: Buffer.from(request) };
      },
    ],
    [
      '/t.Test/Later',
      async (request) => {
        await new Promise((resolve) => setImmediate(resolve));
        return { message: Buffer.from(request), trailers: [['x-svc-term', '9']] };
      },
    ],
    [
      '/t.Test/Fail',
      () => ({ code: grpc.status.NOT_FOUND, details: 'no such key: ü', trailers: [['x-svc-catchup', '1']] }),
    ],
    [
      '/t.Test/Throw',
      () => {
        throw new Error('handler broke');
      },
    ],
    [
      '/t.Test/Hold',
      (request, call) =>
        new Promise(() => {
          call.onCancel = () => harness.cancelled.push(request.toString());
        }),
    ],
  ]);
  harness.server = await H2Server.listen('127.0.0.1', 0, {
    onStream: serveGrpcUnary({ handlers, messageBytesMax: MESSAGE_BYTES_MAX }),
    ...options,
  });
  return harness;
}

function grpcCall(
  client: grpc.Client,
  path: string,
  message: Buffer,
  options: { deadline?: number; metadata?: grpc.Metadata } = {},
): {
  done: Promise<{ value?: Buffer; error?: grpc.ServiceError; trailers?: grpc.Metadata }>;
  call: grpc.ClientUnaryCall;
} {
  let call!: grpc.ClientUnaryCall;
  const done = new Promise<{ value?: Buffer; error?: grpc.ServiceError; trailers?: grpc.Metadata }>((resolve) => {
    let trailers: grpc.Metadata | undefined;
    call = client.makeUnaryRequest(
      path,
      identity,
      identity,
      message,
      options.metadata ?? new grpc.Metadata(),
      options.deadline === undefined ? {} : { deadline: options.deadline },
      (error, value) => setImmediate(() => resolve(error ? { error, trailers: error.metadata } : { value, trailers })),
    );
    call.on('status', (status) => (trailers = status.metadata));
  });
  return { done, call };
}

async function waitFor(probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('h2 gRPC unary server, grpc-js client', () => {
  let harness: Harness;
  let client: grpc.Client;

  beforeEach(async () => {
    harness = await startServer();
    client = new grpc.Client(`127.0.0.1:${harness.server.port}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
    });
  });
  afterEach(async () => {
    client.close();
    await harness.server.close();
  });

  it('answers OK, with and without trailing metadata', async () => {
    const plain = await grpcCall(client, '/t.Test/Echo', Buffer.from('hello')).done;
    assert.deepEqual(plain.value, Buffer.from('hello'));
    const later = await grpcCall(client, '/t.Test/Later', Buffer.from('later')).done;
    assert.deepEqual(later.value, Buffer.from('later'));
    assert.deepEqual(later.trailers?.get('x-svc-term'), ['9']);
  });

  it('answers an error status trailers-only, with its details and metadata', async () => {
    const { error } = await grpcCall(client, '/t.Test/Fail', Buffer.from('k')).done;
    assert.equal(error?.code, grpc.status.NOT_FOUND);
    assert.equal(error?.details, 'no such key: ü');
    assert.deepEqual(error?.metadata.get('x-svc-catchup'), ['1']);
    const thrown = await grpcCall(client, '/t.Test/Throw', Buffer.from('k')).done;
    assert.equal(thrown.error?.code, grpc.status.INTERNAL);
    assert.equal(thrown.error?.details, 'handler broke');
    const unknown = await grpcCall(client, '/t.Test/Nope', Buffer.from('k')).done;
    assert.equal(unknown.error?.code, grpc.status.UNIMPLEMENTED);
  });

  it('carries a 3 MiB message each way across frames and windows', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    const { value } = await grpcCall(client, '/t.Test/Echo', big).done;
    assert.ok(value?.equals(big));
  });

  it('refuses a message above messageBytesMax RESOURCE_EXHAUSTED', async () => {
    const { error } = await grpcCall(client, '/t.Test/Echo', Buffer.alloc(MESSAGE_BYTES_MAX + 1)).done;
    assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(harness.served, 0);
  });

  it('answers 500 concurrent calls, each its own', async () => {
    const calls = Array.from(
      { length: 500 },
      (_, i) => grpcCall(client, '/t.Test/Echo', Buffer.from(`call ${i}`)).done,
    );
    const answers = await Promise.all(calls);
    answers.forEach((answer, i) => assert.equal(answer.value?.toString(), `call ${i}`));
  });

  it('tells the handler when the client cancels, and when the deadline passes', async () => {
    const { call, done } = grpcCall(client, '/t.Test/Hold', Buffer.from('to cancel'));
    await waitFor(() => [...harness.server.connections].some((c) => c.openStreamCount === 1));
    call.cancel();
    assert.equal((await done).error?.code, grpc.status.CANCELLED);
    await waitFor(() => harness.cancelled.includes('to cancel'));
    const late = await grpcCall(client, '/t.Test/Hold', Buffer.from('too late'), { deadline: Date.now() + 100 }).done;
    assert.equal(late.error?.code, grpc.status.DEADLINE_EXCEEDED);
    await waitFor(() => harness.cancelled.includes('too late'));
    await waitFor(() => [...harness.server.connections].every((c) => c.openStreamCount === 0));
  });

  it('closes within its grace when a handler never answers, telling the handler', async () => {
    const held = grpcCall(client, '/t.Test/Hold', Buffer.from('held at close'));
    await waitFor(() => [...harness.server.connections].some((c) => c.openStreamCount === 1));
    await harness.server.close(200);
    await waitFor(() => harness.cancelled.includes('held at close'));
    assert.equal((await held.done).error?.code, grpc.status.UNAVAILABLE);
  });

  it('answers a header list above headerListBytesMax RESOURCE_EXHAUSTED and keeps serving', async () => {
    const metadata = new grpc.Metadata();
    metadata.set('x-big', 'v'.repeat(20_000));
    const { error } = await grpcCall(client, '/t.Test/Echo', Buffer.from('x'), { metadata }).done;
    assert.equal(error?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.deepEqual((await grpcCall(client, '/t.Test/Echo', Buffer.from('y')).done).value, Buffer.from('y'));
  });
});

describe('h2 gRPC unary server, bare node:http2 client', () => {
  let harness: Harness;
  let session: http2.ClientHttp2Session;

  beforeEach(async () => {
    harness = await startServer();
    session = http2.connect(`http://127.0.0.1:${harness.server.port}`);
  });
  afterEach(async () => {
    session.close();
    await harness.server.close();
  });

  function call(
    path: string,
    body: Buffer,
  ): Promise<{ headers: http2.IncomingHttpHeaders; data: Buffer; trailers: http2.IncomingHttpHeaders }> {
    const framed = Buffer.alloc(5 + body.length);
    framed.writeUInt32BE(body.length, 1);
    body.copy(framed, 5);
    return new Promise((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      let headers: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => (headers = h));
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('trailers', (t) => (trailers = t));
      stream.on('error', reject);
      stream.on('close', () => resolve({ headers, data: Buffer.concat(chunks), trailers }));
      stream.end(framed);
    });
  }

  it('answers HEADERS, the message, then grpc-status trailers', async () => {
    const answer = await call('/t.Test/Echo', Buffer.from('bare'));
    assert.equal(answer.headers[':status'], 200);
    assert.equal(answer.headers['content-type'], 'application/grpc');
    assert.deepEqual(answer.data.subarray(5), Buffer.from('bare'));
    assert.equal(answer.trailers['grpc-status'], '0');
  });

  it('answers an error trailers-only', async () => {
    const answer = await call('/t.Test/Fail', Buffer.from('k'));
    assert.equal(answer.headers['grpc-status'], String(grpc.status.NOT_FOUND));
    assert.equal(answer.headers['grpc-message'], 'no%20such%20key:%20%C3%BC');
    assert.equal(answer.data.length, 0);
  });

  it('carries 2 MiB both ways and answers 300 concurrent calls', async () => {
    const big = Buffer.alloc(2 * 1024 * 1024, 3);
    const answer = await call('/t.Test/Echo', big);
    assert.ok(answer.data.subarray(5).equals(big));
    const many = await Promise.all(Array.from({ length: 300 }, (_, i) => call('/t.Test/Echo', Buffer.from(String(i)))));
    many.forEach((a, i) => assert.equal(a.data.subarray(5).toString(), String(i)));
  });
});

describe('h2 gRPC unary server over TLS (ALPN h2, client certificate)', () => {
  const pki = new ThrowawayPki();
  const ca = pki.ca('ca');
  const serverCert = pki.issue('ca', 'server', ['DNS:localhost']);
  const clientCert = pki.issue('ca', 'client', ['URI:spiffe://svc/test/peer/client']);
  let harness: Harness;

  before(async () => {
    harness = await startServer({
      tls: { ca: ca.cert, cert: serverCert.cert, key: serverCert.key, requestCert: true, rejectUnauthorized: true },
    });
  });
  after(async () => {
    await harness.server.close();
    pki.dispose();
  });

  it('serves grpc-js and node:http2 clients, reading the client certificate once per connection', async () => {
    const client = new grpc.Client(
      `127.0.0.1:${harness.server.port}`,
      grpc.credentials.createSsl(ca.cert, clientCert.key, clientCert.cert),
      { 'grpc.ssl_target_name_override': 'localhost' },
    );
    const { value } = await grpcCall(client, '/t.Test/Echo', Buffer.from('tls')).done;
    assert.deepEqual(value, Buffer.from('tls'));
    const [connection] = [...harness.server.connections];
    assert.equal(connection?.peerCertificate?.subjectaltname, 'URI:spiffe://svc/test/peer/client');
    client.close();
    const session = http2.connect(`https://127.0.0.1:${harness.server.port}`, {
      ca: ca.cert,
      cert: clientCert.cert,
      key: clientCert.key,
      servername: 'localhost',
    });
    const status = await new Promise<string>((resolve, reject) => {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/t.Test/Echo',
        'content-type': 'application/grpc',
      });
      stream.on('trailers', (t) => resolve(String(t['grpc-status'])));
      stream.on('error', reject);
      stream.on('data', () => undefined);
      stream.end(Buffer.from([0, 0, 0, 0, 1, 0x41]));
    });
    assert.equal(status, '0');
    session.close();
  });

  it('refuses a client without a certificate, and one that does not offer h2', async () => {
    const { error } = await grpcCall(
      new grpc.Client(`127.0.0.1:${harness.server.port}`, grpc.credentials.createSsl(ca.cert), {
        'grpc.ssl_target_name_override': 'localhost',
      }),
      '/t.Test/Echo',
      Buffer.from('x'),
      { deadline: Date.now() + 3_000 },
    ).done;
    assert.equal(error?.code, grpc.status.UNAVAILABLE);
    const tls = await import('node:tls');
    const socket = tls.connect({
      port: harness.server.port,
      host: '127.0.0.1',
      servername: 'localhost',
      ca: ca.cert,
      cert: clientCert.cert,
      key: clientCert.key,
      ALPNProtocols: ['http/1.1'],
    });
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.on('close', resolve));
  });
});
