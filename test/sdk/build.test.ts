import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../scripts/export-openapi.js';
import { startTestApi } from '../api/harness.js';
import type { TestApi } from '../api/harness.js';

const run = promisify(execFile);

describe('sdk: builds to JavaScript that runs in plain Node (no tsx)', function () {
  this.timeout(90_000);
  let api: TestApi;
  let outDir: string;
  before(async () => {
    api = await startTestApi();
    outDir = mkdtempSync(path.join(os.tmpdir(), 'svc-sdk-dist-'));
  });
  after(async () => {
    await api?.close();
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  it('compiles with sdk/tsconfig.json, and the output calls the API with the key from SVC_API_KEY', async () => {
    await run(path.join(repoRoot, 'node_modules', '.bin', 'tsc'), ['-p', 'sdk/tsconfig.json', '--outDir', outDir], {
      cwd: repoRoot,
      timeout: 80_000,
    });
    writeFileSync(path.join(outDir, 'package.json'), '{"type":"module"}\n');
    const script = [
      `const { SvcClient, SvcApiError } = await import(${JSON.stringify(path.join(outDir, 'index.js'))});`,
      'const client = new SvcClient();',
      'const page = await client.listProjects();',
      'const failure = await new SvcClient({ apiKey: "svc_nope" }).listProjects().catch((error) => error);',
      'console.log(JSON.stringify({ items: page.items.length, code: failure.code, typed: failure instanceof SvcApiError }));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH, SVC_API_KEY: api.adminKey, SVC_URL: api.baseUrl },
      timeout: 20_000,
    });
    assert.deepEqual(JSON.parse(stdout), { items: 0, code: 'UNAUTHORIZED', typed: true });
  });
});
