// The page kit's script (page-kit.js beside this file, copied into the build as it is), read once for every page
// that serves it beside its own script.
import { readFileSync } from 'node:fs';

let script: string | null = null;

export function pageKitScript(): string {
  script ??= readFileSync(new URL('./page-kit.js', import.meta.url), 'utf8');
  return script;
}
