// The mutation bench (bench/mutations.ts) plants each rule break by replacing exact source text.
// If a refactor or the formatter changes that text, the mutation silently stops applying and the
// bench reports NOT APPLIED at best: this keeps every one armed, in the default test run.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MUTATIONS, armingProblems, type Mutation } from '../../bench/mutation-list.js';

const root = new URL('../..', import.meta.url).pathname;

describe('bench: mutations stay armed', () => {
  it("every mutation's find text occurs exactly once in its file, and its replacement differs", () => {
    assert.ok(MUTATIONS.length >= 40, `the list holds ${MUTATIONS.length} mutations`);
    assert.deepEqual(armingProblems(root), []);
  });

  it('reports a find text that is missing or repeated (the check itself works)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-mutation-check-'));
    try {
      const file = 'engine/x.ts';
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), 'a();\nb();\nb();\n');
      const m = (name: string, find: string): Mutation => ({ name, rule: 'r', file, find, replace: 'z();' });
      assert.deepEqual(armingProblems(dir, [m('once', 'a();')]), []);
      assert.match(armingProblems(dir, [m('twice', 'b();')]).join('\n'), /twice: its find text occurs 2 times/);
      assert.match(armingProblems(dir, [m('gone', 'c();')]).join('\n'), /gone: its find text occurs 0 times/);
      assert.match(
        armingProblems(dir, [{ ...m('nofile', 'a();'), file: 'engine/none.ts' }]).join('\n'),
        /nofile: engine\/none.ts cannot be read/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
