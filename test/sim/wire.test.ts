import assert from 'node:assert/strict';
import type { RpcRequest } from '../../engine/rpc.js';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { carryRequest } from '../../sim/wire.js';

function heartbeat(
  replicationLag: Record<number, number>,
  leaderRegion = 1,
): Extract<RpcRequest, { method: 'Heartbeat' }> {
  return {
    method: 'Heartbeat',
    body: pb.HeartbeatRequest.fromPartial({
      shardId: 2,
      regionId: 1,
      term: 7,
      leaderRegion,
      leaderLastSeq: 40,
      replicationLag,
    }),
  };
}

describe('sim/wire', () => {
  it("carries a heartbeat's replication_lag map as the generated codec does, keys as numbers", () => {
    // Keys past one varint byte (128, 70000) take the writer's multi-byte path.
    const request = heartbeat({ 1: 5, 128: 0, 70000: 12 });
    const plain = pb.HeartbeatRequest.decode(pb.HeartbeatRequest.encode(request.body).finish());
    for (let i = 0; i < 3; i++) {
      const carried = carryRequest(request);
      assert.equal(carried.method, 'Heartbeat');
      assert.deepEqual(carried.body, plain);
      assert.notEqual(carried.body, request.body);
    }
  });

  it('carries the next message right after one the codec refused part way', () => {
    // leader_region is a uint32 written after the map: the encode stops with the writer part way through.
    const bad = heartbeat({ 3: 1 }, 2 ** 40);
    assert.throws(() => carryRequest(bad));
    const good = heartbeat({ 3: 1, 4: 2 });
    assert.deepEqual(
      carryRequest(good).body,
      pb.HeartbeatRequest.decode(pb.HeartbeatRequest.encode(good.body).finish()),
    );
  });
});
