// Linearizability checker speed (not a test). Histories come from a simulated concurrent execution:
// C clients each issue one operation at a time (get 50%, put 30%, cas 20%) on a uniformly drawn key;
// each takes effect at a random instant between its call and its return; 1% time out (indeterminate,
// half of them took effect). Prints wall and CPU time, search steps and the verdict for:
//   - 10,000 operations over 100 keys, 16 clients (the aim: under 10 s);
//   - the same with one stale read injected (a violation, minimised; the quick stale-read check);
//   - the same with one lost update injected (two cas from one value both swapped; the search);
//   - 10,000 operations on a single key, 16 clients (every operation contends);
//   - a pathological history (below) under the default budget: it must end 'undecided', bounded.
// Usage: npx tsx bench/linearizability.ts [operationCount] [keyCount] [clientCount]
import {
  STEP_BUDGET_DEFAULT,
  checkKvHistory,
  type CheckResult,
  type KvOperation,
} from '../sim/linearizability/index.js';

/** mulberry32: a small seeded PRNG so every run checks the same histories. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Planned {
  op: KvOperation;
  effectAt: number | null; // null: never took effect
}

/** A history of `count` operations by `clients` concurrent clients over `keys` keys (times in µs). */
export function simulatedHistory(
  count: number,
  keys: number,
  clients: number,
  seed: number,
  timeoutProbability = 0.01,
): KvOperation[] {
  const random = prng(seed);
  const clientTime = new Array<number>(clients).fill(0);
  const planned: Planned[] = [];
  for (let id = 0; id < count; id++) {
    // the client that is free first issues the next operation
    let c = 0;
    for (let i = 1; i < clients; i++) if (clientTime[i]! < clientTime[c]!) c = i;
    const callTime = clientTime[c]! + Math.floor(random() * 200);
    const latency = 100 + Math.floor(random() * 900);
    const timedOut = random() < timeoutProbability;
    const returnTime = timedOut ? null : callTime + latency;
    const effectAt = timedOut && random() < 0.5 ? null : callTime + Math.floor(random() * latency);
    clientTime[c] = callTime + (timedOut ? 5_000 : latency);
    const key = `k${Math.floor(random() * keys)}`;
    const draw = random();
    const input: KvOperation['input'] =
      draw < 0.5
        ? { kind: 'get', key }
        : draw < 0.8
          ? { kind: 'put', key, value: `v${id}` }
          : { kind: 'cas', key, expected: null, value: `v${id}` };
    planned.push({ op: { id, clientId: `c${c}`, input, callTime, returnTime, output: null }, effectAt });
  }
  // Apply in effect order to a real map to learn what each client saw.
  const state = new Map<string, string>();
  const applied = planned
    .filter((p) => p.effectAt !== null)
    .sort((x, y) => x.effectAt! - y.effectAt! || x.op.id - y.op.id);
  for (const { op } of applied) {
    const current = state.get(op.input.key) ?? null;
    let output: KvOperation['output'];
    if (op.input.kind === 'get') output = { kind: 'get', value: current };
    else if (op.input.kind === 'put') {
      state.set(op.input.key, op.input.value);
      output = { kind: 'put' };
    } else {
      // cas expects the value the client last could have seen: the current one, most of the time
      const expected = random() < 0.7 ? current : null;
      op.input = { ...op.input, expected };
      const swapped = expected === current;
      if (swapped) state.set(op.input.key, op.input.value);
      output = { kind: 'cas', swapped };
    }
    if (op.returnTime !== null) op.output = output;
  }
  return planned.map((p) => p.op);
}

/** A get of `stale` after a completed write of another value to a key, when a write overwrote it. */
function injectStaleRead(history: KvOperation[]): KvOperation {
  const completedPuts = history.filter((op) => op.input.kind === 'put' && op.returnTime !== null);
  const first = completedPuts[Math.floor(completedPuts.length / 2)]!;
  const later = completedPuts.find((op) => op.input.key === first.input.key && op.callTime > first.returnTime!)!;
  const callTime = later.returnTime! + 10;
  const stale: KvOperation = {
    id: history.length,
    clientId: 'stale',
    input: { kind: 'get', key: first.input.key },
    callTime,
    returnTime: callTime + 50,
    output: { kind: 'get', value: first.input.kind === 'put' ? first.input.value : null },
  };
  history.push(stale);
  return stale;
}

/**
 * k puts of "a" and k of "b", all concurrent, and inside them 2k + 1 gets one after another reading
 * a, b, a, ...: it needs k + 1 puts of "a", so it is not linearizable, but with repeated values the
 * search learns that only after trying subsets of the puts (exponential in k).
 */
/**
 * A lost update: a second cas from the same value as a completed swapped cas, concurrent with it, also
 * swapped. Values are unique, so only one can have won; no quick check sees it, the search must.
 */
function injectLostUpdate(history: KvOperation[]): KvOperation {
  const winner = history.find(
    (op) => op.input.kind === 'cas' && op.output?.kind === 'cas' && op.output.swapped && op.id > history.length / 2,
  )!;
  if (winner.input.kind !== 'cas') throw new Error('unreachable');
  const loser: KvOperation = {
    id: history.length,
    clientId: 'lost-update',
    input: { kind: 'cas', key: winner.input.key, expected: winner.input.expected, value: 'lost' },
    callTime: winner.callTime,
    returnTime: winner.returnTime,
    output: { kind: 'cas', swapped: true },
  };
  history.push(loser);
  return loser;
}

function pathological(k: number): KvOperation[] {
  const ops: KvOperation[] = [];
  const put = (value: string): void => {
    ops.push({
      id: ops.length,
      clientId: `w${ops.length}`,
      input: { kind: 'put', key: 'hot', value },
      callTime: 0,
      returnTime: 100_000,
      output: { kind: 'put' },
    });
  };
  for (let i = 0; i < k; i++) {
    put('a');
    put('b');
  }
  for (let i = 0; i <= 2 * k; i++) {
    const callTime = 100 + 10 * i;
    ops.push({
      id: ops.length,
      clientId: 'r',
      input: { kind: 'get', key: 'hot' },
      callTime,
      returnTime: callTime + 5,
      output: { kind: 'get', value: i % 2 === 0 ? 'a' : 'b' },
    });
  }
  return ops;
}

function timed(label: string, history: KvOperation[]): CheckResult {
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = checkKvHistory(history);
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const extra = result.verdict === 'ok' ? `keys=${result.keysChecked}` : `key=${result.key}`;
  const minimise =
    result.verdict === 'violation'
      ? ` minimiseSteps=${result.minimiseSteps} minimal=${result.minimalOperations.length} ops`
      : '';
  console.log(
    `${label}: verdict=${result.verdict} ${extra} steps=${result.steps}${minimise} wall=${wallMs.toFixed(0)} ms cpu=${cpuMs.toFixed(0)} ms`,
  );
  return result;
}

function main(): void {
  const count = Number(process.argv[2] ?? 10_000);
  const keys = Number(process.argv[3] ?? 100);
  const clients = Number(process.argv[4] ?? 16);
  for (const [name, n] of [
    ['operationCount', count],
    ['keyCount', keys],
    ['clientCount', clients],
  ] as const) {
    if (!Number.isInteger(n) || n < 1 || n > 1_000_000)
      throw new Error(`${name} must be a whole number in [1, 1000000]`);
  }
  console.log(
    `linearizability checker: ${count} operations, ${keys} keys, ${clients} clients; step budget ${STEP_BUDGET_DEFAULT}`,
  );
  timed('warm-up (1,000 ops)', simulatedHistory(1000, 10, clients, 1));

  const history = simulatedHistory(count, keys, clients, 7);
  const indeterminate = history.filter((op) => op.returnTime === null).length;
  console.log(`history: ${history.length} operations, ${indeterminate} indeterminate`);
  const ok = timed(`${count} ops / ${keys} keys`, history);
  if (ok.verdict !== 'ok')
    throw new Error(`a history from a real execution must pass:\n${ok.verdict === 'violation' ? ok.explanation : ''}`);

  const withStale = [...history];
  const stale = injectStaleRead(withStale);
  const bad = timed(`${count} ops / ${keys} keys + 1 stale read (quick check)`, withStale);
  if (bad.verdict !== 'violation' || !bad.minimalOperations.some((op) => op.id === stale.id))
    throw new Error('the stale read was not found');
  console.log(bad.explanation.replace(/^/gm, '    '));

  const withLostUpdate = [...history];
  const lost = injectLostUpdate(withLostUpdate);
  const lostResult = timed(`${count} ops / ${keys} keys + 1 lost update (search)`, withLostUpdate);
  if (lostResult.verdict !== 'violation' || !lostResult.minimalOperations.some((op) => op.id === lost.id))
    throw new Error('the lost update was not found');
  console.log(lostResult.explanation.replace(/^/gm, '    '));

  timed(`${count} ops / 1 key`, simulatedHistory(count, 1, clients, 7));

  timed('pathological, small (k = 5: decided)', pathological(5));
  const hard = timed('pathological (k = 12: 24 concurrent puts, 25 alternating reads)', pathological(12));
  if (hard.verdict !== 'undecided') throw new Error('the pathological history should exhaust the budget');
  console.log(hard.explanation.replace(/^/gm, '    '));
}

main();
