// codegen generates the SDK's typed operations (sdk/src/gen/) from the exported OpenAPI document with
// @hey-api/openapi-ts. Every setting that shapes the output is pinned here, so the output depends only on the
// spec and the generator version: sdk:check regenerates into a temporary folder and compares.
//   tsx sdk/codegen.ts [spec.json] [outDir]     (npm run sdk:gen exports the spec first)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';

const sdkRoot = path.dirname(fileURLToPath(import.meta.url));
export const specPathDefault = path.join(sdkRoot, 'openapi.json');
/** generatedDirDefault holds only generated files: the generator empties it first. */
export const generatedDirDefault = path.join(sdkRoot, 'src', 'gen');
/** sdkClassName is the generated class SvcClient extends. */
export const sdkClassName = 'SvcApi';

/** nodeTypePatches adapt the generated code to Node's type globals, which lack the DOM's BodyInit (the
 * project's lib is ES2022, not DOM). Each patch must apply, so a generator upgrade that moves the text fails
 * loudly here instead of silently. */
const nodeTypePatches = [
  { file: 'client/client.gen.ts', from: 'as BodyInit | null | undefined', to: "as RequestInit['body']", count: 2 },
];

/** generateSdk writes the generated sources for specText into outDir (emptied first). */
export async function generateSdk(specText: string, outDir: string): Promise<void> {
  let spec: unknown;
  try {
    spec = JSON.parse(specText);
  } catch (error) {
    throw new Error(`the OpenAPI document is not JSON: ${(error as Error).message}`, { cause: error });
  }
  mkdirSync(outDir, { recursive: true });
  await createClient({
    input: { path: spec as Record<string, unknown> },
    output: { path: outDir, clean: true, importFileExtension: '.js', tsConfigPath: null, postProcess: [] },
    logs: { level: 'silent', file: false },
    interactive: false,
    plugins: [
      // throwOnError: failures become SvcApiError (client.ts installs the error interceptor).
      { name: '@hey-api/client-fetch', throwOnError: true },
      '@hey-api/typescript',
      {
        name: '@hey-api/sdk',
        operations: { strategy: 'single', containerName: sdkClassName, methods: 'instance' },
        responseStyle: 'data',
      },
    ],
  });
  for (const patch of nodeTypePatches) {
    const file = path.join(outDir, patch.file);
    const text = readFileSync(file, 'utf8');
    const found = text.split(patch.from).length - 1;
    if (found !== patch.count) {
      throw new Error(
        `codegen patch: expected ${patch.count} of ${JSON.stringify(patch.from)} in ${patch.file}, found ${found}`,
      );
    }
    writeFileSync(file, text.split(patch.from).join(patch.to));
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const specPath = path.resolve(process.argv[2] ?? specPathDefault);
  const outDir = path.resolve(process.argv[3] ?? generatedDirDefault);
  await generateSdk(readFileSync(specPath, 'utf8'), outDir);
  console.log(
    `generated ${path.relative(process.cwd(), outDir) || outDir} from ${path.relative(process.cwd(), specPath)}`,
  );
}
