// Runs every scenario in scenarios/ — each file is one behaviour, named for it.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runScenarioFile } from '../sim/scenario.js';

const dir = new URL('../scenarios/', import.meta.url).pathname;

describe('scenarios', () => {
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.txt'))
    .sort()) {
    it(file.replace(/\.txt$/, ''), () => {
      runScenarioFile(join(dir, file));
    });
  }
});
