// The HTTP/2 server connection under raw frames on a loopback socket: what it answers to a well-behaved client
// (SETTINGS ACK, PING ACK, a call, flow-controlled answers) and how it refuses a broken one (GOAWAY with the
// right code, then the socket closed; never a crash: the server answers a new connection afterwards).
import assert from 'node:assert/strict';
import {
  ErrorCode,
  Flag,
  frame,
  FrameType,
  goAwayPayload,
  Setting,
  settingsPayload,
  u32,
} from '../../../transports/h2/frames.js';
import { serveGrpcUnary, type UnaryHandler } from '../../../transports/h2/grpc-unary.js';
import { encodeHeaderBlock, HpackDecoder } from '../../../transports/h2/hpack.js';
import type { H2Limits } from '../../../transports/h2/limits.js';
import { H2Server } from '../../../transports/h2/server.js';
import { RawClient } from './raw-client.js';

const ECHO = '/t.Test/Echo';
const HOLD = '/t.Test/Hold';

function requestBlock(path: string, extra: Array<readonly [string, string]> = []): Buffer {
  return encodeHeaderBlock([
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', path],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
    ...extra,
  ]);
}

function grpcMessage(body: Buffer): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

describe('h2 server connection, raw frames', () => {
  let server: H2Server;
  const clients: RawClient[] = [];

  async function start(limits: Partial<H2Limits> = {}): Promise<void> {
    server = await H2Server.listen('127.0.0.1', 0, {
      limits,
      onStream: serveGrpcUnary({
        handlers: new Map<string, UnaryHandler>([
          [ECHO, (request: Buffer) => ({ message: Buffer.from(request) })],
          [HOLD, () => new Promise<never>(() => undefined)],
        ]),
        messageBytesMax: 4 * 1024 * 1024,
      }),
    });
  }

  async function connect(handshake = true): Promise<RawClient> {
    const client = await RawClient.connect(server.port, handshake);
    clients.push(client);
    return client;
  }

  /** stillServes proves the server survived: a fresh connection's call is answered. */
  async function stillServes(): Promise<void> {
    const client = await connect();
    client.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(ECHO)),
      frame(FrameType.DATA, Flag.END_STREAM, 1, grpcMessage(Buffer.from('ok'))),
    );
    await client.until((f) => f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0 && f.streamId === 1);
  }

  async function refused(client: RawClient, code: number): Promise<void> {
    const goAway = await client.goAway();
    assert.equal(goAway.code, code, `GOAWAY ${goAway.code} (${goAway.debug}), expected ${code}`);
    await client.closedByServer();
    await stillServes();
  }

  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await server.close();
  });

  it('sends its SETTINGS and window, ACKs the client SETTINGS and PINGs, and answers a call in one write', async () => {
    await start();
    const client = await connect();
    const settings = await client.until((f) => f.type === FrameType.SETTINGS && f.flags === 0);
    const advertised = new Map<number, number>();
    for (let at = 0; at < settings.payload.length; at += 6)
      advertised.set(settings.payload.readUInt16BE(at), settings.payload.readUInt32BE(at + 2));
    assert.equal(advertised.get(Setting.MAX_CONCURRENT_STREAMS), server.limits.concurrentStreamCountMax);
    assert.equal(advertised.get(Setting.MAX_HEADER_LIST_SIZE), server.limits.headerListBytesMax);
    await client.until((f) => f.type === FrameType.WINDOW_UPDATE && f.streamId === 0);
    await client.until((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK);
    client.write(frame(FrameType.PING, 0, 0, Buffer.from('12345678')));
    const pong = await client.until((f) => f.type === FrameType.PING);
    assert.equal(pong.flags, Flag.ACK);
    assert.equal(pong.payload.toString(), '12345678');
    // The answer goes out in one socket write: count the server's writes from here.
    const connection = [...server.connections][0]!;
    const writes: number[] = [];
    const write = connection.socket.write.bind(connection.socket) as (chunk: Buffer) => boolean;
    connection.socket.write = ((chunk: Buffer) => {
      writes.push(chunk.length);
      return write(chunk);
    }) as typeof connection.socket.write;
    // PRIORITY is ignored; a call still goes through.
    client.write(
      frame(FrameType.PRIORITY, 0, 1, Buffer.alloc(5)),
      frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(ECHO)),
      frame(FrameType.DATA, Flag.END_STREAM, 1, grpcMessage(Buffer.from('hello'))),
    );
    const trailers = await client.until((f) => f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0);
    const onStream = client.frames.filter((f) => f.streamId === 1).map((f) => f.type);
    assert.deepEqual(onStream, [FrameType.HEADERS, FrameType.DATA, FrameType.HEADERS]);
    const decoder = new HpackDecoder(4096);
    assert.deepEqual(decoder.decode(client.frames.find((f) => f.streamId === 1)!.payload).fields, [
      [':status', '200'],
      ['content-type', 'application/grpc'],
    ]);
    assert.deepEqual(client.frames.find((f) => f.type === FrameType.DATA)!.payload, grpcMessage(Buffer.from('hello')));
    assert.deepEqual(decoder.decode(trailers.payload).fields, [
      ['grpc-status', '0'],
      ['grpc-message', 'OK'],
    ]);
    const answerBytes = client.frames.filter((f) => f.streamId === 1).reduce((sum, f) => sum + 9 + f.payload.length, 0);
    assert.deepEqual(writes, [answerBytes], 'headers, message and trailers in one write');
  });

  it('splits an answer within the client window and resumes on WINDOW_UPDATE', async () => {
    await start();
    const client = await connect();
    // A stream window of 1,000 bytes for everything the server sends.
    client.write(frame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.INITIAL_WINDOW_SIZE, 1000]])));
    const body = Buffer.alloc(2500, 7);
    client.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(ECHO)),
      frame(FrameType.DATA, Flag.END_STREAM, 1, grpcMessage(body)),
    );
    await client.until((f) => f.type === FrameType.DATA);
    const sent = (): number =>
      client.frames.filter((f) => f.type === FrameType.DATA).reduce((sum, f) => sum + f.payload.length, 0);
    await client.until(() => sent() === 1000);
    const trailersOf = (f: { type: number; flags: number }): boolean =>
      f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0;
    assert.equal(client.frames.some(trailersOf), false, 'no trailers before the body is out');
    client.write(frame(FrameType.WINDOW_UPDATE, 0, 1, u32(5000)));
    await client.until(trailersOf);
    assert.equal(sent(), 2505);
  });

  it('replenishes its windows as a large request arrives', async () => {
    await start({ streamWindowBytes: 65_536, connectionWindowBytes: 65_536 });
    const client = await connect();
    const body = grpcMessage(Buffer.alloc(300_000, 1));
    // Room for the echo coming back.
    client.write(
      frame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.INITIAL_WINDOW_SIZE, 1 << 20]])),
      frame(FrameType.WINDOW_UPDATE, 0, 0, u32(1 << 20)),
      frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(ECHO)),
    );
    // Send only what the windows the server grants allow.
    let credit = 65_536;
    let streamCredit = 65_536;
    let at = 0;
    let seen = 0;
    while (at < body.length) {
      const n = Math.min(16_384, body.length - at, credit, streamCredit);
      if (n > 0) {
        const last = at + n === body.length;
        client.write(frame(FrameType.DATA, last ? Flag.END_STREAM : 0, 1, body.subarray(at, at + n)));
        at += n;
        credit -= n;
        streamCredit -= n;
        continue;
      }
      await client.until((f) => f.type === FrameType.WINDOW_UPDATE && client.frames.indexOf(f) >= seen);
      for (const f of client.frames.slice(seen))
        if (f.type === FrameType.WINDOW_UPDATE)
          if (f.streamId === 0) credit += f.payload.readUInt32BE(0);
          else streamCredit += f.payload.readUInt32BE(0);
      seen = client.frames.length;
    }
    await client.until((f) => f.type === FrameType.HEADERS && (f.flags & Flag.END_STREAM) !== 0);
    const echoed = client.frames.filter((f) => f.type === FrameType.DATA).reduce((sum, f) => sum + f.payload.length, 0);
    assert.equal(echoed, body.length);
  });

  it('refuses a stream beyond concurrentStreamCountMax with REFUSED_STREAM', async () => {
    await start({ concurrentStreamCountMax: 2 });
    const client = await connect();
    for (const id of [1, 3, 5]) client.write(frame(FrameType.HEADERS, Flag.END_HEADERS, id, requestBlock(HOLD)));
    const reset = await client.until((f) => f.type === FrameType.RST_STREAM);
    assert.equal(reset.streamId, 5);
    assert.equal(reset.payload.readUInt32BE(0), ErrorCode.REFUSED_STREAM);
  });

  it('tells the handler of a client RST_STREAM and frees the stream', async () => {
    await start();
    const client = await connect();
    client.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(HOLD)),
      frame(FrameType.DATA, Flag.END_STREAM, 1, grpcMessage(Buffer.from('x'))),
    );
    const connection = await waitFor(() => [...server.connections].find((c) => c.openStreamCount === 1));
    client.write(frame(FrameType.RST_STREAM, 0, 1, u32(ErrorCode.CANCEL)));
    await waitFor(() => connection.openStreamCount === 0 || undefined);
  });

  it('answers a header list above headerListBytesMax RESOURCE_EXHAUSTED, and ends the connection on a block above twice it', async () => {
    await start({ headerListBytesMax: 1024 });
    const client = await connect();
    client.write(
      frame(
        FrameType.HEADERS,
        Flag.END_HEADERS | Flag.END_STREAM,
        1,
        requestBlock(ECHO, [['x-big', 'v'.repeat(1500)]]),
      ),
    );
    const answer = await client.until((f) => f.type === FrameType.HEADERS && f.streamId === 1);
    const fields = new Map(new HpackDecoder(4096).decode(answer.payload).fields);
    assert.equal(fields.get('grpc-status'), '8');
    const block = requestBlock(ECHO, [['x-big', 'v'.repeat(3000)]]);
    client.write(
      frame(FrameType.HEADERS, 0, 3, block.subarray(0, 1500)),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 3, block.subarray(1500)),
    );
    await refused(client, ErrorCode.ENHANCE_YOUR_CALM);
  });

  const refusals: Array<[string, (client: RawClient) => void, number, boolean?]> = [
    [
      'a wrong connection preface',
      (c) => c.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')),
      ErrorCode.PROTOCOL_ERROR,
      false,
    ],
    [
      'a first frame other than SETTINGS',
      (c) => c.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(FrameType.PING, 0, 0, Buffer.alloc(8))),
      ErrorCode.PROTOCOL_ERROR,
      false,
    ],
    [
      'a frame above SETTINGS_MAX_FRAME_SIZE',
      (c) => c.write(frame(FrameType.DATA, 0, 1, Buffer.alloc(20_000))),
      ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'an HPACK index beyond the tables',
      (c) => c.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x82, 0xff, 0x10]))),
      ErrorCode.COMPRESSION_ERROR,
    ],
    [
      'a Huffman string with bad padding',
      (c) => c.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x82, 0x40, 0x81, 0x18, 0x81, 0x1f]))),
      ErrorCode.COMPRESSION_ERROR,
    ],
    [
      'an HPACK string cut short',
      (c) => c.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0x82, 0x40, 0x05, 0x61]))),
      ErrorCode.COMPRESSION_ERROR,
    ],
    ['DATA on an idle stream', (c) => c.write(frame(FrameType.DATA, 0, 7, Buffer.from('x'))), ErrorCode.PROTOCOL_ERROR],
    [
      'HEADERS on an even stream id',
      (c) => c.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 2, requestBlock(ECHO))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'CONTINUATION without HEADERS',
      (c) => c.write(frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, Buffer.alloc(0))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'a header block interrupted by another frame',
      (c) => c.write(frame(FrameType.HEADERS, 0, 1, requestBlock(ECHO)), frame(FrameType.PING, 0, 0, Buffer.alloc(8))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    ['a PING of 7 bytes', (c) => c.write(frame(FrameType.PING, 0, 0, Buffer.alloc(7))), ErrorCode.FRAME_SIZE_ERROR],
    [
      'SETTINGS of 5 bytes',
      (c) => c.write(frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(5))),
      ErrorCode.FRAME_SIZE_ERROR,
    ],
    [
      'a connection WINDOW_UPDATE past 2^31-1',
      (c) => c.write(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(2 ** 31 - 1))),
      ErrorCode.FLOW_CONTROL_ERROR,
    ],
    [
      'a WINDOW_UPDATE of 0 on the connection',
      (c) => c.write(frame(FrameType.WINDOW_UPDATE, 0, 0, u32(0))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'PUSH_PROMISE from the client',
      (c) => c.write(frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS, 1, Buffer.alloc(4))),
      ErrorCode.PROTOCOL_ERROR,
    ],
    [
      'INITIAL_WINDOW_SIZE above 2^31-1',
      (c) => c.write(frame(FrameType.SETTINGS, 0, 0, settingsPayload([[Setting.INITIAL_WINDOW_SIZE, 2 ** 31]]))),
      ErrorCode.FLOW_CONTROL_ERROR,
    ],
    [
      'DATA beyond the connection window',
      (c) => {
        c.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(HOLD)));
        c.write(frame(FrameType.DATA, 0, 1, Buffer.alloc(70_000)));
      },
      ErrorCode.FLOW_CONTROL_ERROR,
    ],
    [
      'a flood of empty CONTINUATION frames',
      (c) => {
        c.write(frame(FrameType.HEADERS, 0, 1, requestBlock(ECHO)));
        for (let i = 0; i < 100; i++) c.write(frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(0)));
      },
      ErrorCode.ENHANCE_YOUR_CALM,
    ],
  ];
  for (const [what, send, code, handshake] of refusals)
    it(`ends the connection with GOAWAY on ${what}`, async () => {
      // The DATA-beyond-window case needs the connection window at its RFC default.
      // DATA beyond the window: one frame larger than the RFC-default window (frames may be that large here).
      await start(what.startsWith('DATA beyond') ? { connectionWindowBytes: 65_535, frameBytesMax: 100_000 } : {});
      const client = await connect(handshake ?? true);
      send(client);
      await refused(client, code);
    });

  it('refuses a malformed request (uppercase name) with RST_STREAM PROTOCOL_ERROR, keeping the connection', async () => {
    await start();
    const client = await connect();
    client.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, requestBlock(ECHO, [['X-Upper', 'v']])),
    );
    const reset = await client.until((f) => f.type === FrameType.RST_STREAM);
    assert.equal(reset.payload.readUInt32BE(0), ErrorCode.PROTOCOL_ERROR);
    client.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS, 3, requestBlock(ECHO)),
      frame(FrameType.DATA, Flag.END_STREAM, 3, grpcMessage(Buffer.from('still'))),
    );
    await client.until((f) => f.type === FrameType.HEADERS && f.streamId === 3 && (f.flags & Flag.END_STREAM) !== 0);
  });

  it('ends a connection whose client sends PINGs but does not read the answers (unsentBytesMax)', async () => {
    await start({ unsentBytesMax: 64 * 1024 });
    const client = await connect();
    await client.until((f) => f.type === FrameType.SETTINGS && f.flags === Flag.ACK);
    client.socket.pause();
    const pings = Buffer.concat(Array.from({ length: 10_000 }, () => frame(FrameType.PING, 0, 0, Buffer.alloc(8))));
    // Bounded: at most 400,000 PINGs (6.8 MB of ACKs), far past any loopback buffering.
    for (let batch = 0; batch < 40 && server.connections.size > 0; batch++) {
      if (!client.socket.write(pings)) await new Promise((resolve) => client.socket.once('drain', resolve));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => server.connections.size === 0 || undefined);
  });

  it('pings a connection every keepaliveTimeMs: one that ACKs stays, one that does not (or ACKs another payload) is dropped', async () => {
    await start({ keepaliveTimeMs: 100, keepaliveTimeoutMs: 200 });
    const isServerPing = (f: { type: number; flags: number }): boolean => f.type === FrameType.PING && f.flags === 0;
    const answering = await connect();
    const silent = await connect();
    const wrongAnswer = await connect();
    for (const client of [answering, silent, wrongAnswer])
      client.write(frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(HOLD)));
    await waitFor(() => server.connections.size === 3 || undefined);
    // Three keepalive rounds: the answering client ACKs each PING with its own payload.
    const payloads = new Set<string>();
    for (let round = 0; round < 3; round++) {
      const ping = await answering.until((f) => isServerPing(f) && !payloads.has(f.payload.toString('hex')));
      payloads.add(ping.payload.toString('hex'));
      answering.write(frame(FrameType.PING, Flag.ACK, 0, ping.payload));
    }
    const ping = await wrongAnswer.until(isServerPing);
    const other = Buffer.from(ping.payload);
    other[7] = other[7]! ^ 0xff;
    wrongAnswer.write(frame(FrameType.PING, Flag.ACK, 0, other));
    await silent.closedByServer();
    await wrongAnswer.closedByServer();
    assert.equal(answering.closed, false, 'a client that answers every keepalive PING keeps its connection');
    assert.equal(payloads.size, 3, 'each keepalive PING carries a payload of its own');
    answering.write(
      frame(FrameType.HEADERS, Flag.END_HEADERS, 3, requestBlock(ECHO)),
      frame(FrameType.DATA, Flag.END_STREAM, 3, grpcMessage(Buffer.from('alive'))),
    );
    await answering.until((f) => f.type === FrameType.HEADERS && f.streamId === 3 && (f.flags & Flag.END_STREAM) !== 0);
    assert.equal(server.connections.size, 1);
  });

  it('closes when the client says GOAWAY and nothing is open; the preface timeout closes a silent one', async () => {
    await start({ prefaceTimeoutMs: 200 });
    const client = await connect();
    client.write(frame(FrameType.GOAWAY, 0, 0, goAwayPayload(0, ErrorCode.NO_ERROR, '')));
    await client.closedByServer();
    const silent = await connect(false);
    assert.equal((await silent.goAway()).code, ErrorCode.SETTINGS_TIMEOUT);
    await silent.closedByServer();
  });
});

/** waitFor polls (bounded) until `probe` gives a value. */
async function waitFor<T>(probe: () => T | undefined, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
