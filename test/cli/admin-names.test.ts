// The admin commands (`svc status`, `svc members`, ...) exit at their deadline while the DNS does not answer the
// members' names: their client looks names up with c-ares (transports/node/peer-names.ts through the `svc-peer`
// grpc-js resolver), which its close cancels. Before, grpc-js's own resolver called getaddrinfo in libuv's
// threadpool, which cannot be cancelled and which process.exit waits for: the command gave up at its deadline
// and its process lived on until the system resolver gave up (a minute here: test/cli/black-hole-dns.ts).
import assert from 'node:assert/strict';
import { EXIT_FAILED } from '../../cli/limits.js';
import { useBlackHoleDns } from './black-hole-dns.js';

/** COMMAND_TIMEOUT_MS is the commands' --timeout-ms: short, the name is never answered anyway. */
const COMMAND_TIMEOUT_MS = 1_000;
/**
 * EXIT_BOUND_MS bounds the command's whole life: its start, its deadline and its exit, far under the system
 * resolver's minute (which the exit waited out before).
 */
const EXIT_BOUND_MS = 25_000;

describe("svc admin commands: members' names the DNS does not answer", function () {
  this.timeout(120_000);
  const dns = useBlackHoleDns('admin-names');

  for (const words of [['status'], ['members', 'list']]) {
    it(`svc ${words.join(' ')} gives up at its deadline and exits at once`, async () => {
      const args = [...words, '--node', 'n1.peers.test:7000', '--insecure', '--timeout-ms', String(COMMAND_TIMEOUT_MS)];
      const command = dns.svc(args);
      const exit = await command.exitWithin(EXIT_BOUND_MS);
      assert.ok(exit, `still running ${EXIT_BOUND_MS} ms on; stderr:\n${command.stderr}`);
      assert.deepEqual(exit, { code: EXIT_FAILED, signal: null }, command.stderr);
      assert.match(command.stderr, /DEADLINE_EXCEEDED/);
    });
  }
});
