import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { printOpenApi } from '../../api/openapi/document.js';
import { checkSdk } from '../../scripts/check-sdk.js';
import { generateSdk } from '../../sdk/codegen.js';
import { repoRoot } from '../../scripts/export-openapi.js';

const run = promisify(execFile);

/** runScript runs an npm script or a tsx file from the repository root and returns its exit code and output. */
async function runScript(command: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(command, args, { cwd: repoRoot, timeout: 60_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout}${failed.stderr}` };
  }
}

describe('sdk: sdk:check (committed spec and generated code match the code)', function () {
  this.timeout(90_000);
  let staleRoot: string;
  before(async () => {
    // The stale copy starts as a fresh export and generation, so only the edits below make it differ.
    staleRoot = mkdtempSync(path.join(os.tmpdir(), 'svc-sdk-stale-'));
    writeFileSync(path.join(staleRoot, 'openapi.json'), printOpenApi() + ' ');
    await generateSdk(printOpenApi(), path.join(staleRoot, 'src', 'gen'));
    appendFileSync(path.join(staleRoot, 'src', 'gen', 'types.gen.ts'), '// hand edit\n');
    unlinkSync(path.join(staleRoot, 'src', 'gen', 'client.gen.ts'));
    writeFileSync(path.join(staleRoot, 'src', 'gen', 'leftover.gen.ts'), 'export {};\n');
  });
  after(() => {
    if (staleRoot) rmSync(staleRoot, { recursive: true, force: true });
  });

  it('finds no difference on the committed files', async () => {
    assert.deepEqual(await checkSdk(), []);
  });

  it('names every stale, missing and extra file of an out-of-date copy', async () => {
    assert.deepEqual(await checkSdk(staleRoot), [
      { file: 'openapi.json', problem: 'differs' },
      { file: 'src/gen/client.gen.ts', problem: 'missing' },
      { file: 'src/gen/types.gen.ts', problem: 'differs' },
      { file: 'src/gen/leftover.gen.ts', problem: 'not generated' },
    ]);
  });

  it('npm run sdk:check exits 0 on the committed files and 1 on a stale copy', async () => {
    const passing = await runScript('npm', ['run', '--silent', 'sdk:check']);
    assert.equal(passing.code, 0, passing.output);
    const failing = await runScript(path.join(repoRoot, 'node_modules', '.bin', 'tsx'), [
      'scripts/check-sdk.ts',
      staleRoot,
    ]);
    assert.equal(failing.code, 1, failing.output);
    assert.match(failing.output, /sdk\/src\/gen\/types\.gen\.ts: differs/);
    assert.match(failing.output, /npm run sdk:gen/);
  });
});
