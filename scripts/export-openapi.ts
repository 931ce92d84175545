// export-openapi writes the developer API's OpenAPI document to a file (default sdk/openapi.json) straight from
// the code (api/openapi/document.ts via printOpenApi): no server starts and no port opens, so the SDK
// generator, sdk:check and `svc openapi` all see the same bytes.
//   tsx scripts/export-openapi.ts [out.json]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printOpenApi } from '../api/openapi/document.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** openApiPathDefault is where the SDK reads its spec from; it is committed. */
export const openApiPathDefault = path.join(repoRoot, 'sdk', 'openapi.json');

/** exportOpenApi writes the document to outPath and returns the text written. */
export function exportOpenApi(outPath: string = openApiPathDefault): string {
  const text = printOpenApi();
  writeFileSync(outPath, text);
  return text;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outPath = path.resolve(process.argv[2] ?? openApiPathDefault);
  const text = exportOpenApi(outPath);
  console.log(`wrote ${path.relative(process.cwd(), outPath) || outPath} (${Buffer.byteLength(text)} bytes)`);
}
