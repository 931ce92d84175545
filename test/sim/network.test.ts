import assert from 'node:assert/strict';
import { LOST, Network } from '../../sim/network.js';
import type { NetworkKnobs } from '../../sim/options.js';
import { Prng } from '../../sim/prng.js';

const calm: NetworkKnobs = {
  lossProbability: 0,
  duplicateProbability: 0,
  replayProbability: 0,
  reorderProbability: 0,
  oneWayDelayMsMin: 1,
  oneWayDelayMsMax: 5,
  linkInflightCountMax: 1000,
};

describe('sim/network', () => {
  it('delivers within the delay bounds when calm', () => {
    const net = new Network(new Prng('n'), calm, 3);
    for (let i = 0; i < 200; i++) {
      const at = net.send(0, 1, 1_000_000);
      assert.ok(at >= 1_001_000 && at <= 1_005_000, `arrival ${at}`);
    }
  });

  it('drops across a partition until healed, both ways unless one-way', () => {
    const net = new Network(new Prng('n'), calm, 4);
    net.split([0, 1], [2, 3], true);
    assert.equal(net.send(0, 2, 0), LOST);
    assert.equal(net.send(3, 1, 0), LOST);
    assert.notEqual(net.send(0, 1, 0), LOST);
    net.heal();
    assert.notEqual(net.send(0, 2, 0), LOST);
    net.split([0], [1], false);
    assert.equal(net.send(0, 1, 0), LOST);
    assert.notEqual(net.send(1, 0, 0), LOST);
    net.heal();
    net.isolate(2);
    assert.equal(net.send(2, 0, 0), LOST);
    assert.equal(net.send(1, 2, 0), LOST);
    assert.notEqual(net.send(0, 1, 0), LOST);
  });

  it('holds messages on a clogged link until the clog ends', () => {
    const net = new Network(new Prng('n'), calm, 2);
    net.clog(0, 1, 9_000_000);
    assert.ok(net.send(0, 1, 0) > 9_000_000);
    assert.ok(net.send(1, 0, 0) < 9_000_000);
  });

  it('drops beyond link capacity, and frees capacity as messages land', () => {
    const net = new Network(new Prng('n'), { ...calm, linkInflightCountMax: 3 }, 2);
    const sent = [0, 1, 2].map(() => net.send(0, 1, 0));
    assert.ok(sent.every((t) => t !== LOST));
    assert.equal(net.send(0, 1, 0), LOST);
    assert.notEqual(net.send(0, 1, 10_000), LOST, 'after every earlier message landed');
  });

  it('loses about the configured share, but never a message that continues a stream', () => {
    const net = new Network(new Prng('n'), { ...calm, lossProbability: 0.3 }, 2);
    let lost = 0;
    for (let i = 0; i < 2000; i++) if (net.send(0, 1, i * 10_000) === LOST) lost++;
    assert.ok(lost > 450 && lost < 750, `lost ${lost} of 2000`);
    for (let i = 0; i < 200; i++) assert.notEqual(net.send(0, 1, 30_000_000 + i * 10_000, true), LOST);
    net.calm();
    for (let i = 0; i < 200; i++) assert.notEqual(net.send(0, 1, 60_000_000 + i * 10_000), LOST);
  });

  it('plans duplicates and replays of requests when asked', () => {
    const net = new Network(new Prng('n'), { ...calm, duplicateProbability: 1, replayProbability: 1 }, 2);
    const copies = net.extraCopies(0, 1, 0);
    assert.equal(copies.length, 2);
    assert.ok(copies.every((t) => t > 0));
  });

  it('says which slot is out of range', () => {
    assert.throws(() => new Network(new Prng('n'), calm, 2).send(0, 5, 0), /out of range/);
  });
});
