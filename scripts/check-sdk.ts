// check-sdk fails when the committed SDK is stale: sdk/openapi.json must equal what the code exports now
// (printOpenApi, no server), and sdk/src/gen must equal what the generator makes from it. It regenerates
// into a temporary folder and compares file by file; fix with `npm run sdk:gen`.
//   tsx scripts/check-sdk.ts [sdkRoot]     (default: the repository's sdk/)
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printOpenApi } from '../api/openapi/document.js';
import { generateSdk } from '../sdk/codegen.js';
import { repoRoot } from './export-openapi.js';

export const sdkRootDefault = path.join(repoRoot, 'sdk');

export interface SdkDifference {
  /** file is relative to the SDK root, e.g. openapi.json or src/gen/types.gen.ts. */
  file: string;
  problem: 'differs' | 'missing' | 'not generated';
}

/** checkSdk lists how the SDK at sdkRoot differs from what the code generates now (empty: up to date). */
export async function checkSdk(sdkRoot: string = sdkRootDefault): Promise<SdkDifference[]> {
  const differences: SdkDifference[] = [];
  const specText = printOpenApi();
  const committedSpec = path.join(sdkRoot, 'openapi.json');
  if (!existsSync(committedSpec)) differences.push({ file: 'openapi.json', problem: 'missing' });
  else if (readFileSync(committedSpec, 'utf8') !== specText)
    differences.push({ file: 'openapi.json', problem: 'differs' });

  const scratch = mkdtempSync(path.join(os.tmpdir(), 'svc-sdk-check-'));
  try {
    const freshDir = path.join(scratch, 'gen');
    await generateSdk(specText, freshDir);
    const committedDir = path.join(sdkRoot, 'src', 'gen');
    const fresh = listFiles(freshDir);
    const committed = existsSync(committedDir) ? listFiles(committedDir) : [];
    for (const file of fresh) {
      const label = path.posix.join('src/gen', file);
      if (!committed.includes(file)) differences.push({ file: label, problem: 'missing' });
      else if (
        readFileSync(path.join(freshDir, file), 'utf8') !== readFileSync(path.join(committedDir, file), 'utf8')
      ) {
        differences.push({ file: label, problem: 'differs' });
      }
    }
    for (const file of committed) {
      if (!fresh.includes(file)) differences.push({ file: path.posix.join('src/gen', file), problem: 'not generated' });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return differences;
}

/** listFiles lists the files under dir, relative, with / separators, sorted. */
function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix))
    .sort()
    .flatMap((name) => {
      const relative = prefix ? `${prefix}/${name}` : name;
      return statSync(path.join(dir, relative)).isDirectory() ? listFiles(dir, relative) : [relative];
    });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const sdkRoot = path.resolve(process.argv[2] ?? sdkRootDefault);
  const differences = await checkSdk(sdkRoot);
  if (differences.length > 0) {
    for (const { file, problem } of differences) console.error(`sdk/${file}: ${problem}`);
    console.error(
      'the SDK is stale: the OpenAPI document or the generator changed. Run `npm run sdk:gen` and commit sdk/.',
    );
    process.exit(1);
  }
  console.log('sdk/openapi.json and sdk/src/gen match what the code exports and generates');
}
