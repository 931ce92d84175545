// cloneJson (store/json-clone.ts), which both stores now use instead of structuredClone for every value
// they hand out: equal to the original, sharing nothing with it, and keeping a '__proto__' key as data.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { JsonValue } from '../../store/document-store.js';
import { cloneJson } from '../../store/json-clone.js';

describe('store: cloneJson', () => {
  it('copies any JSON value exactly, sharing no object or array with it', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = cloneJson(value as JsonValue);
        assert.deepStrictEqual(copy, structuredClone(value));
        const originals = new Set<unknown>();
        const walk = (item: unknown, into: (found: unknown) => void): void => {
          if (item === null || typeof item !== 'object') return;
          into(item);
          for (const child of Object.values(item)) walk(child, into);
        };
        walk(value, (found) => originals.add(found));
        walk(copy, (found) => assert.ok(!originals.has(found), 'the copy shares an object with the original'));
      }),
      { numRuns: 500 },
    );
  });

  it("keeps a '__proto__' key as an own property, never as the copy's prototype", () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "a": [1, {"__proto__": null}]}') as JsonValue;
    const copy = cloneJson(parsed) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.ok(Object.hasOwn(copy, '__proto__'));
    assert.equal((copy as { polluted?: unknown }).polluted, undefined);
    assert.equal(JSON.stringify(copy), JSON.stringify(parsed));
  });
});
