// BUILD_VERSION is package.json's version: heartbeats carry it as build_version.
import { readFileSync } from 'node:fs';

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : '';
  } catch {
    // An unknown version is legal on the wire (empty = version-unknown) and warns nobody.
    return '';
  }
}

export const BUILD_VERSION = readVersion();
