// The fault mix both simulator benches pin their five-node seeds to (bench/sim-speed.ts, bench/sim-ab.ts), so
// their per-event figures describe the same runs.
export const FIVE_NODE_FAULT_FLAGS = {
  nodes: 5,
  'old-peers': 0,
  learners: 0,
  joiners: 1,
  loss: 0.05,
  dup: 0.02,
  reorder: 0.05,
  'replay-rate': 0.005,
  'crash-rate': 1,
  'pause-rate': 1,
  'partition-rate': 1,
  'clog-rate': 1,
  'transfer-rate': 0.5,
  'write-interval-ms': 100,
  'safety-s': 120,
} as const;
