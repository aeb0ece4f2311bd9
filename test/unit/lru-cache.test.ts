import fc from 'fast-check';
import { LRUCache as MnemonistLRUCache } from 'mnemonist';
import { describe, expect, it } from 'vitest';
import LRUCache from '#lib/lru-cache.ts';

// The bundles' stand-in for mnemonist's LRU cache (lib/lru-cache.ts) must answer as mnemonist does to any sequence
// of the calls the AWS SDK's endpoint cache makes, evictions included.
type Call = { op: 'set'; key: number; value: number } | { op: 'get' | 'peek' | 'has'; key: number } | { op: 'clear' };
const key = fc.nat({ max: 5 });
const call: fc.Arbitrary<Call> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key, value: fc.nat({ max: 99 }) }),
  fc.record({ op: fc.constantFrom('get' as const, 'peek' as const, 'has' as const), key }),
  fc.constant({ op: 'clear' as const }),
);

describe('lru-cache', () => {
  it('answers every call as mnemonist does, and holds as many entries', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(call, { maxLength: 40 }), (capacity, calls) => {
        const ours = new LRUCache<number, number>(capacity);
        const theirs = new MnemonistLRUCache<number, number>(capacity);
        for (const c of calls) {
          const answer = (cache: LRUCache<number, number> | MnemonistLRUCache<number, number>) =>
            c.op === 'set' ? (cache.set(c.key, c.value), undefined) : c.op === 'clear' ? cache.clear() : cache[c.op](c.key);
          expect(answer(ours), JSON.stringify(c)).toEqual(answer(theirs));
          expect(ours.size).toBe(theirs.size);
        }
        for (let k = 0; k <= 5; k++) expect(ours.peek(k), `key ${k}`).toEqual(theirs.peek(k));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a capacity that is not positive, as mnemonist does', () => {
    expect(() => new LRUCache(0)).toThrow(/capacity should be positive/);
  });
});
