// Usage: SVC_API_KEY=<admin key> tsx scripts/load-credentials.ts <secrets.yaml|json> [base-url]
// Loads an operator secrets file (category → name → value) through the HTTP API; safe to re-run.
// The key comes from the environment, not the command line, so it does not show in process listings.
import { readFileSync } from 'node:fs';
import { loadCredentials, parseSecretsFile } from '../api/credentials-loader.js';

async function main(argv: string[]): Promise<number> {
  const [file, baseUrl = process.env.SVC_URL ?? 'http://127.0.0.1:8080'] = argv;
  const apiKey = process.env.SVC_API_KEY;
  if (!file || !apiKey) {
    process.stderr.write('usage: SVC_API_KEY=<admin key> load-credentials <secrets-file> [base-url]\n');
    return 2;
  }
  const entries = parseSecretsFile(readFileSync(file, 'utf8'));
  const report = await loadCredentials({ baseUrl, apiKey, entries });
  process.stdout.write(
    `created ${report.created.length}: ${report.created.join(', ') || '-'}\n` +
      `updated ${report.updated.length}: ${report.updated.join(', ') || '-'}\n`,
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`load-credentials: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
