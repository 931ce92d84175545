// Regenerates the ts-proto code into a temporary folder and fails when it
// differs from the committed proto/gen: generated code is never hand-edited.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const out = mkdtempSync(join(tmpdir(), 'svc-gen-'));
const template = readFileSync(join(root, 'buf.gen.yaml'), 'utf8').replace('out: proto/gen', `out: ${out}`);
const templatePath = join(out, 'buf.gen.yaml');
writeFileSync(templatePath, template);
execFileSync(join(root, 'node_modules/.bin/buf'), ['generate', 'proto', '--template', templatePath], {
  cwd: root,
  stdio: 'inherit',
});
rmSync(templatePath);

const list = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? list(path) : [path];
  });
const fresh = list(out)
  .map((p) => relative(out, p))
  .sort();
const committed = list(join(root, 'proto/gen'))
  .map((p) => relative(join(root, 'proto/gen'), p))
  .sort();
let ok = JSON.stringify(fresh) === JSON.stringify(committed);
for (const file of fresh) {
  if (!committed.includes(file)) continue;
  if (readFileSync(join(out, file), 'utf8') !== readFileSync(join(root, 'proto/gen', file), 'utf8')) {
    console.error(`proto/gen/${file} differs from what buf generates: run \`npm run gen:proto\``);
    ok = false;
  }
}
rmSync(out, { recursive: true, force: true });
if (!ok) {
  console.error('generated code is stale');
  process.exit(1);
}
console.log(`proto/gen matches buf generate (${fresh.length} file(s))`);
