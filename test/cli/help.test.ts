// `--help` on every command and subcommand that `svc --help` lists (cli/usage.ts's TOP_USAGE, read here, so a
// command added there is walked too): it prints a usage text on stdout, nothing on stderr, and exits 0 — in
// process, and through bin/svc.js for the top level and one subcommand (the real exit code).
import assert from 'node:assert/strict';
import { runSvc } from '../../cli/main.js';
import type { Io } from '../../cli/io.js';
import { TOP_USAGE } from '../../cli/usage.js';
import { runCli } from './helpers.js';

/** listedCommands reads the command lines of TOP_USAGE: `certs ca|node|admin|api` → certs, certs ca, certs node, .... */
function listedCommands(): string[][] {
  const lines = TOP_USAGE.split('\n');
  const start = lines.indexOf('commands:');
  assert.ok(start >= 0, 'TOP_USAGE lists its commands under "commands:"');
  const paths = new Map<string, string[]>();
  for (const line of lines.slice(start + 1)) {
    if (!/^ {2}\S/.test(line)) break;
    const words = line
      .trim()
      .split(/\s{2,}/)[0]!
      .split(/[\s,]+/);
    const command = words[0]!;
    if (command.startsWith('-')) continue;
    paths.set(command, [command]);
    const action = words[1];
    if (action === undefined || /^[A-Z.]/.test(action) || action.startsWith('-')) continue;
    for (const name of action.split('|')) paths.set(`${command} ${name}`, [command, name]);
  }
  return [...paths.values()];
}

async function svc(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
  };
  const code = await runSvc(args, io);
  return { code, out, err };
}

describe('svc <command> [<action>] --help prints usage and exits 0', function () {
  this.timeout(120_000);
  const commands = listedCommands();

  it('finds every command of svc --help, with the actions of certs, members, keys and manifests', function () {
    const names = commands.map((path) => path.join(' '));
    for (const expected of [
      'node',
      'cluster',
      'status',
      'members',
      'members promote',
      'keys create',
      'certs',
      'certs node',
      'certs api',
      'manifests render',
      'manifests secrets',
      'openapi',
      'version',
    ])
      assert.ok(names.includes(expected), `${expected} missing from ${names.join(', ')}`);
  });

  for (const path of [[], ...listedCommands()]) {
    it(`svc ${[...path, '--help'].join(' ')}`, async function () {
      const result = await svc([...path, '--help']);
      assert.equal(result.code, 0, `exit ${result.code}; stderr: ${result.err}`);
      assert.match(result.out, /usage/);
      assert.equal(result.err, '');
    });
  }

  it('bin/svc.js --help and certs node --help exit 0 in a real process', async function () {
    for (const args of [['--help'], ['certs', 'node', '--help']]) {
      const result = await runCli(args);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /usage/);
    }
  });
});
