// The driver loop with a real engine and fake I/O ports: the hard-state save is a barrier for
// every later effect of its step and for every later input; inputs are stepped one at a time;
// a failed write stops the loop for good (fail-stop).
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { Engine } from '../../engine/engine.js';
import { emptyRestoredState } from '../../engine/restored.js';
import type { Effect, EngineConfig, HardState } from '../../engine/types.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { Driver, type DriverPorts, type SendEffect } from '../../transports/node/driver.js';
import { serveUnaryLean, type UnaryRespond } from '../../transports/grpc/lean-serve.js';
import { WRITE_TRACE_CHANNEL, type WriteStamp } from '../../transports/node/write-trace.js';
import { waitFor } from './harness.js';
import { soloConfig } from '../recording/solo-config.js';

const TICK_MS = 5;

/** turns lets the event loop run `count` times (timers, I/O, promise jobs) without waiting on the clock. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** stubEngine: an engine whose every step returns what `effects` gives then, for tests of the driver's ordering. */
function stubEngine(effects: () => Effect[]): Engine {
  return {
    step: effects,
    status: () => singleNodeEngine().status(),
    logBase: () => ({ seq: 0, term: 0 }),
  } as unknown as Engine;
}

function singleNodeEngine(): Engine {
  const config: EngineConfig = soloConfig({ electionTimeoutTicks: 2 });
  return new Engine(config, emptyRestoredState());
}

/** FakePorts records every port call in order; hard-state saves wait until the test releases them. */
class FakePorts implements DriverPorts {
  readonly calls: string[] = [];
  readonly saves: Array<{ hardState: HardState; release: () => void; fail: (err: Error) => void }> = [];
  holdSaves = false;
  holdAppends = false;
  readonly heldAppends: Array<() => void> = [];
  appendError: Error | null = null;
  failure: Error | null = null;

  saveHardState(hardState: HardState): Promise<void> {
    this.calls.push(`saveHardState term=${hardState.term}`);
    if (!this.holdSaves) return Promise.resolve();
    return new Promise((resolve, reject) => this.saves.push({ hardState, release: resolve, fail: reject }));
  }
  resetStateMachine(): void {
    this.calls.push('resetStateMachine');
  }
  appendLog(fromSeq: number, entries: { seq: number }[]): Promise<unknown> {
    this.calls.push(`append ${fromSeq}+${entries.length}`);
    if (this.appendError) return Promise.reject(this.appendError);
    if (this.holdAppends) return new Promise<void>((resolve) => this.heldAppends.push(resolve));
    return Promise.resolve();
  }
  send(): void {
    this.calls.push('send');
  }
  answer(): void {
    this.calls.push('answer');
  }
  fetchSnapshot(): void {
    this.calls.push('fetchSnapshot');
  }
  apply(entries: { seq: number }[]): void {
    this.calls.push(`apply ${entries.map((e) => e.seq).join(',')}`);
  }
  stageSnapshot(): void {
    this.calls.push('stageSnapshot');
  }
  compactLog(): void {
    this.calls.push('compact');
  }
  pollStatus(): void {
    this.calls.push('pollStatus');
  }
  observe(effect: { type: string }): void {
    this.calls.push(effect.type);
  }
  stats() {
    return { entityCount: 0, signalThroughputEps: 0, diskBytes: 0, nowNs: '0' };
  }
  stepped(): void {}
  fail(err: Error): void {
    this.failure = err;
    this.calls.push(`fail: ${err.message}`);
  }
}

describe('node: driver loop', function () {
  this.timeout(10_000);

  it('holds every later effect, and every later input, until the hard state is durable', async function () {
    const engine = singleNodeEngine();
    const ports = new FakePorts();
    ports.holdSaves = true;
    const driver = new Driver(engine, ports, { tickMs: TICK_MS, inputQueueCountMax: 100 });
    driver.start();
    try {
      // The first save holds selfId; release it, then wait for the election's save (term 1).
      await waitFor(() => ports.saves.length === 1, 'the first hard-state save');
      ports.saves[0]!.release();
      await waitFor(() => ports.saves.length === 2, "the election's hard-state save");
      assert.equal(ports.saves[1]!.hardState.term, 1);
      driver.submit({ type: 'propose', proposalId: 1, data: new TextEncoder().encode('x') });
      // Nothing may happen while the save is pending, however often the loop turns.
      const held = ports.calls.length;
      await turns(50);
      assert.ok(driver.queueLength >= 1, 'the proposal waits in the queue');
      assert.equal(ports.calls.length, held, `nothing after the pending save: ${ports.calls.slice(held).join(' | ')}`);
      assert.equal(engine.status().role, 'leader', 'the engine stepped the election');
      assert.equal(engine.status().lastSeq, 1, 'the proposal waits behind the save');
      ports.saves[1]!.release();
      await waitFor(() => ports.calls.includes('proposalResult'), 'the proposal to commit');
      const afterSave = ports.calls.slice(ports.calls.indexOf('saveHardState term=1'));
      assert.deepEqual(
        afterSave.slice(0, 2),
        ['saveHardState term=1', 'append 1+1'],
        'the barrier entry is appended only after the term is durable',
      );
      assert.ok(afterSave.indexOf('append 2+1') > afterSave.indexOf('append 1+1'));
      const applyOf2 = afterSave.findIndex((call) => /^apply (\d+,)*2(,|$)/.test(call));
      assert.ok(
        applyOf2 > afterSave.indexOf('append 2+1'),
        `committed after its append was reported durable: ${afterSave.join(' | ')}`,
      );
    } finally {
      await driver.stop();
    }
  });

  it('turns appends made durable together (group commit) into one entriesPersisted step for the newest', async function () {
    const engine = singleNodeEngine();
    const stepped: string[] = [];
    const step = engine.step.bind(engine);
    engine.step = (input) => {
      stepped.push(input.type === 'entriesPersisted' ? `persisted ${input.lastSeq}` : input.type);
      return step(input);
    };
    const ports = new FakePorts();
    const driver = new Driver(engine, ports, { tickMs: TICK_MS, inputQueueCountMax: 100 });
    driver.start();
    try {
      await waitFor(
        () => engine.status().role === 'leader' && engine.status().commitSeq === 1,
        'leadership and its barrier entry committed',
      );
      ports.holdAppends = true;
      for (let id = 1; id <= 3; id++)
        driver.submit({ type: 'propose', proposalId: id, data: new TextEncoder().encode(`p${id}`) });
      await waitFor(() => ports.heldAppends.length === 3, 'three appends in flight');
      const from = stepped.length;
      for (const release of ports.heldAppends.splice(0)) release();
      await waitFor(
        () => ports.calls.filter((c) => c === 'proposalResult').length === 3,
        'the three proposals to commit',
      );
      assert.deepEqual(
        stepped.slice(from).filter((s) => s.startsWith('persisted')),
        ['persisted 4'],
        'one step for the three durable appends',
      );
      assert.equal(engine.status().commitSeq, 4);
    } finally {
      await driver.stop();
    }
  });

  it('stops for good when a WAL append fails (fail-stop), carrying out nothing more', async function () {
    const engine = singleNodeEngine();
    const ports = new FakePorts();
    ports.appendError = new Error('disk on fire');
    const driver = new Driver(engine, ports, { tickMs: TICK_MS, inputQueueCountMax: 100 });
    driver.start();
    try {
      await waitFor(() => ports.failure !== null, 'the failure to be reported');
      assert.match(ports.failure!.message, /WAL append failed: .*disk on fire/);
      assert.equal(driver.failure, ports.failure);
      const calls = ports.calls.length;
      driver.submit({ type: 'propose', proposalId: 1, data: new Uint8Array(1) });
      assert.equal(driver.queueLength, 0, 'inputs after a failure are dropped');
      await turns(50);
      assert.equal(ports.calls.length, calls, 'no step after the failure');
    } finally {
      await driver.stop();
    }
  });

  it('stops for good when a hard-state save fails, before any later effect of its step', async function () {
    const engine = singleNodeEngine();
    const ports = new FakePorts();
    ports.holdSaves = true;
    const driver = new Driver(engine, ports, { tickMs: TICK_MS, inputQueueCountMax: 100 });
    driver.start();
    try {
      await waitFor(() => ports.saves.length === 1, 'the first save');
      ports.saves[0]!.release();
      await waitFor(() => ports.saves.length === 2, "the election's save");
      ports.saves[1]!.fail(new Error('EIO'));
      await waitFor(() => ports.failure !== null, 'the failure');
      assert.equal(ports.calls[ports.calls.length - 1], 'fail: hard state save failed: Error: EIO');
      assert.ok(!ports.calls.includes('append 1+1'), 'the barrier was never appended');
    } finally {
      await driver.stop();
    }
  });

  it('refuses outside inputs once inputQueueCountMax are waiting', function () {
    const ports = new FakePorts();
    ports.holdSaves = true;
    const driver = new Driver(singleNodeEngine(), ports, { tickMs: 60_000, inputQueueCountMax: 3 });
    driver.start(); // its first step blocks on the held save
    for (let i = 0; i < 3; i++) driver.submit({ type: 'tick' });
    assert.equal(driver.overloaded(), true);
    void driver.stop();
  });

  it("sends a step's commit notices after the answers its proposal results let leave", async function () {
    // A stub engine: one step ships entries to n2, a commit notice (no entries) to n3, and answers a proposal.
    const ship = (to: string, eventCount: number): Effect => ({
      type: 'send',
      requestId: eventCount + 1,
      to,
      toId: 0,
      request: { method: 'ShipSegment', body: pb.ShipSegmentRequest.fromPartial({ eventCount }) },
    });
    let stepEffects: Effect[] = [];
    const stub = stubEngine(() => stepEffects);
    const calls: string[] = [];
    const ports = Object.assign(new FakePorts(), {
      send: (effect: Extract<Effect, { type: 'send' }>) => void calls.push(`send to ${effect.to}`),
      observe: () => {
        calls.push('proposalResult');
        // The answer leaves from a promise callback, as Proposals' resolve reaches the Store handler.
        void Promise.resolve().then(() => calls.push('answer leaves'));
      },
    });
    const driver = new Driver(stub, ports, { tickMs: 60_000, inputQueueCountMax: 100 });
    try {
      stepEffects = [
        ship('n2', 1),
        ship('n3', 0),
        { type: 'proposalResult', proposalId: 1, ok: true, code: 'committed', seq: 1, reason: '', leaderHint: '' },
      ];
      driver.submit({ type: 'tick' });
      await turns(2);
      assert.deepEqual(calls, ['send to n2', 'proposalResult', 'answer leaves', 'send to n3']);
      // Without a result in the step, a notice goes at once, in the engine's order.
      calls.length = 0;
      stepEffects = [ship('n3', 0), ship('n2', 1)];
      driver.submit({ type: 'tick' });
      await turns(2);
      assert.deepEqual(calls, ['send to n3', 'send to n2']);
    } finally {
      await driver.stop();
    }
  });

  it("sends the held commit notices after a lean-served answer's trailers, not between its message and its trailers", async function () {
    // A real lean unary server answers a call from the proposal result of a driver step that also holds a
    // commit notice; the write-trace stamps say when node:http2 flushed the answer's message and its trailers.
    const path = '/svc.test.Order/Answer';
    const order: string[] = [];
    const onStamp = (message: unknown): void => {
      const at = message as WriteStamp;
      if (at.peer === path && (at.phase === 'answer.flushed' || at.phase === 'answer.closed')) order.push(at.phase);
    };
    let stepEffects: Effect[] = [];
    const stub = stubEngine(() => stepEffects);
    let resolveResult: () => void = () => {};
    const ports = Object.assign(new FakePorts(), {
      send: (effect: SendEffect) => void order.push(`notice to ${effect.to}`),
      observe: () => resolveResult(),
    });
    const driver = new Driver(stub, ports, { tickMs: 60_000, inputQueueCountMax: 100 });
    const server = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
    const answer = (_call: unknown, respond: UnaryRespond): void => {
      // As the Store handler: the answer leaves from the promise callbacks of the step's proposal result.
      void new Promise<void>((resolve) => (resolveResult = resolve)).then(() => respond(null, Buffer.from('ok')));
      stepEffects = [
        {
          type: 'send',
          requestId: 1,
          to: 'n3',
          toId: 3,
          request: { method: 'ShipSegment', body: pb.ShipSegmentRequest.fromPartial({ eventCount: 0 }) },
        },
        { type: 'proposalResult', proposalId: 1, ok: true, code: 'committed', seq: 1, reason: '', leaderHint: '' },
      ];
      driver.submit({ type: 'tick' });
    };
    assert.equal(typeof serveUnaryLean(server, new Map([[path, answer]]), { messageBytesMax: 1024 }), 'object');
    subscribe(WRITE_TRACE_CHANNEL, onStamp);
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const call = session.request({
        ':method': 'POST',
        ':path': path,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => call.on('trailers', resolve));
      call.resume();
      call.end(Buffer.alloc(5)); // one empty message
      assert.equal((await trailers)['grpc-status'], '0');
      await waitFor(() => order.includes('notice to n3'), 'the held notice');
      assert.deepEqual(order, ['answer.flushed', 'answer.closed', 'notice to n3']);
    } finally {
      unsubscribe(WRITE_TRACE_CHANNEL, onStamp);
      session.close();
      server.forceShutdown();
      await driver.stop();
    }
  });

  it("holds a live stream's commit notice (and what follows it on that stream) and the ReportApplied answer behind the answers", async function () {
    const chunk = (callId: number, eventCount: number): Effect => ({
      type: 'streamChunk',
      callId,
      chunk: pb.ShipSegmentRequest.fromPartial({ eventCount }),
    });
    let stepEffects: Effect[] = [];
    const stub = stubEngine(() => stepEffects);
    const calls: string[] = [];
    const ports = Object.assign(new FakePorts(), {
      answer: (effect: Extract<Effect, { callId: number }>) => {
        if (effect.type === 'streamChunk') calls.push(`chunk(${effect.chunk.eventCount}) on ${effect.callId}`);
        else if (effect.type === 'streamEnd') calls.push(`end ${effect.callId}`);
        else if (effect.type === 'reply') calls.push(`reply ${effect.response.method}`);
      },
      observe: () => {
        calls.push('proposalResult');
        void Promise.resolve().then(() => calls.push('answer leaves'));
      },
    });
    const driver = new Driver(stub, ports, { tickMs: 60_000, inputQueueCountMax: 100 });
    try {
      stepEffects = [
        chunk(7, 1),
        chunk(8, 0),
        { type: 'streamEnd', callId: 8 },
        { type: 'proposalResult', proposalId: 1, ok: true, code: 'committed', seq: 1, reason: '', leaderHint: '' },
        { type: 'reply', callId: 9, response: { method: 'ReportApplied', body: { acknowledged: true } } },
      ];
      driver.submit({ type: 'tick' });
      await turns(2);
      assert.deepEqual(calls, [
        'chunk(1) on 7',
        'proposalResult',
        'answer leaves',
        'chunk(0) on 8',
        'end 8',
        'reply ReportApplied',
      ]);
    } finally {
      await driver.stop();
    }
  });
});
