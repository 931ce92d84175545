// BUILD_VERSION is package.json's version: heartbeats carry it as build_version.
import { readFileSync } from 'node:fs';
import { appFile } from '../../layout/app-files.js';

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(appFile('package.json'), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : '';
  } catch {
    // An unknown version is legal on the wire (empty = version-unknown) and warns nobody.
    return '';
  }
}

export const BUILD_VERSION = readVersion();
