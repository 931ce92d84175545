// The page kit's script (page-kit.js beside this file, copied into the build as it is; layout/app-files finds it bundled too), read once for every page
// that serves it beside its own script.
import { readFileSync } from 'node:fs';
import { appFile } from '../../layout/app-files.js';

let script: string | null = null;

export function pageKitScript(): string {
  script ??= readFileSync(appFile('api/view-kit/page-kit.js'), 'utf8');
  return script;
}
