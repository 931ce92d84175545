// appFile: where a file the app ships beside its code is (package.json, bin/svc.js, agent/, the pages' views).
// The app runs in two layouts: unbundled (the checkout's TypeScript through tsx, or tsc's JavaScript in dist/
// laid out as the repository), where this module is <root>/layout/app-files.{ts,js}; and bundled (npm run build's
// dist/bundle/svc.mjs, one file of every module), where import.meta.url is the bundle's. The build copies the
// shipped files into dist/ as the repository lays them out, so in both the app's root is one folder up from the
// module that holds this code; SVC_BUNDLE (defined by the bundler, absent otherwise) says which module that is,
// so that moving either one fails loudly here instead of reading a wrong path. Every module that reads a file
// relative to its own location goes through here: a path written `new URL('../x', import.meta.url)` anywhere
// else would point beside the bundle once bundled.
import { fileURLToPath } from 'node:url';

declare const SVC_BUNDLE: string | undefined;

/** bundled is true when this code runs from the bundle (dist/bundle/svc.mjs). */
export const bundled = typeof SVC_BUNDLE === 'string';

// The bundle is dist/bundle/svc.mjs and this module (unbundled) is <root>/layout/app-files.*: one level down both.
const appRoot = new URL('..', import.meta.url);

/** appFile is the URL of `relative` (POSIX, from the app's root: 'package.json', 'api/albums/view/x.js'). */
export function appFile(relative: string): URL {
  if (relative.startsWith('/') || relative.split('/').includes('..'))
    throw new Error(`appFile: ${relative} is not a path inside the app`);
  return new URL(relative, appRoot);
}

/** appPath is appFile as a filesystem path. */
export function appPath(relative: string): string {
  return fileURLToPath(appFile(relative));
}
