import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SecretMasker, secretMask } from '../../api/runs/secret-masker.js';

describe('api: masking credential values in run output', () => {
  it('masks every value however the output is split into chunks, and emits the rest unchanged', () => {
    // Text over a small alphabet so that values, their prefixes and near-misses occur often.
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '\n', 'x'), maxLength: 40 });
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'c'), minLength: 4, maxLength: 9 }), {
          minLength: 1,
          maxLength: 3,
        }),
        fc.array(fc.tuple(text, fc.nat(2)), { maxLength: 8 }),
        fc.array(fc.nat(60), { maxLength: 10 }),
        (values, pieces, cuts) => {
          const masker = new SecretMasker(values);
          const whole = pieces.map(([filler, index]) => filler + values[index % values.length]).join('');
          const boundaries = [...new Set(cuts.map((cut) => cut % (whole.length + 1)))].sort((a, b) => a - b);
          let emitted = '';
          let from = 0;
          for (const cut of [...boundaries, whole.length]) {
            emitted += masker.push('stdout', whole.slice(from, cut));
            from = cut;
          }
          emitted += masker.end('stdout');
          for (const value of values)
            assert.ok(!emitted.includes(value), `${JSON.stringify(value)} in ${JSON.stringify(emitted)}`);
          assert.equal(emitted, masker.mask(whole), 'chunking changes nothing');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('masks base64 and URL-encoded forms, keeps streams apart, and leaves short values alone', () => {
    const value = 'tok/en+with=chars';
    const masker = new SecretMasker([value, 'abc']);
    const out =
      masker.push('stdout', `a ${Buffer.from(value).toString('base64')} b ${encodeURIComponent(value)} c abc`) +
      masker.end('stdout');
    assert.equal(out, `a ${secretMask} b ${secretMask} c abc`);
    assert.equal(masker.push('stderr', value.slice(0, 5)) + masker.push('stdout', 'zz') + masker.end('stdout'), 'zz');
    assert.equal(masker.push('stderr', value.slice(5)) + masker.end('stderr'), secretMask);
  });
});
